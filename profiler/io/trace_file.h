// Files for traces: a streaming writer over OutputFile (core/common/output_file.h: the path
// checked up front, a temporary beside the target renamed into place only when complete, and
// removed on any error or stop signal), gzip when the name ends in ".gz"; and for readers, files,
// memory and gzip inflation as sources of bytes a block at a time, bounded.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/output_file.h"

namespace parascope::profiler {

// Appends `s` as a JSON string: quoted, with quotes, backslashes and control characters escaped.
void appendJsonString(std::string& out, std::string_view s);

class TraceFileWriter {
 public:
  explicit TraceFileWriter(std::string path);  // throws UserError if it cannot be created
  ~TraceFileWriter();                          // without commit(): removes the temporary
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  void write(std::string_view s) {
    if (buffer_.size() + s.size() > kFlushAt) flush();
    buffer_.append(s);
  }
  void put(char c) {
    if (buffer_.size() >= kFlushAt) flush();
    buffer_.push_back(c);
  }
  std::string& buffer() { return buffer_; }  // for formatting in place; call maybeFlush after
  void maybeFlush() {
    if (buffer_.size() >= kFlushAt) flush();
  }
  // Flushes, closes and renames into place; throws UserError on any I/O failure.
  void commit();
  std::size_t bytesWritten() const { return written_; }

 private:
  static constexpr std::size_t kFlushAt = std::size_t{1} << 20;
  void flush();
  void deflateInto(std::string_view in, int flush);

  OutputFile file_;
  void* gz_ = nullptr;  // z_stream when compressing, deflating into file_
  std::string buffer_;
  std::size_t written_ = 0;
};

// The bytes of a file a block at a time, so a reader never needs the whole text in memory.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `n` bytes into `out`; fewer only at the end, 0 once it is reached. Throws UserError
  // naming the source.
  virtual std::size_t read(char* out, std::size_t n) = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view data) : data_(data) {}
  std::size_t read(char* out, std::size_t n) override;

 private:
  std::string_view data_;
};

// An open descriptor (not owned), read to its end or to maxBytes, past which it is refused.
class FileSource final : public ByteSource {
 public:
  FileSource(int fd, std::string what, std::size_t maxBytes)
      : fd_(fd), what_(std::move(what)), maxBytes_(maxBytes) {}
  std::size_t read(char* out, std::size_t n) override;

 private:
  int fd_;
  std::string what_;
  std::size_t maxBytes_;
  std::size_t total_ = 0;
};

// Gzip (or zlib) data from `compressed`, inflated as it is read. `statedSize` is what a gzip
// trailer states (the size modulo 4 GiB): a claim over maxBytes is refused before anything is
// inflated, and inflating past it or past maxBytes stops with a UserError naming `what`, so a
// gzip bomb costs no more than the reader's block.
class GunzipSource final : public ByteSource {
 public:
  GunzipSource(ByteSource& compressed, std::optional<std::size_t> statedSize, std::size_t maxBytes,
               std::string what);
  ~GunzipSource() override;
  GunzipSource(const GunzipSource&) = delete;
  GunzipSource& operator=(const GunzipSource&) = delete;
  std::size_t read(char* out, std::size_t n) override;

 private:
  void fail(const std::string& why);

  ByteSource& compressed_;
  std::size_t limit_;  // the stated size when known, else maxBytes
  std::size_t maxBytes_;
  std::string what_;
  void* z_;  // z_stream
  std::string in_;
  bool inputEnded_ = false, done_ = false;
  std::size_t total_ = 0;
};

// Whether `data` starts with the gzip magic, and the size its trailer states (RFC 1952 ISIZE,
// the last four bytes, little-endian) when it is long enough to have one.
bool isGzip(std::string_view data);
std::optional<std::size_t> gzipStatedSize(std::string_view data);
std::size_t gzipTrailerSize(const char lastFour[4]);

// Inflates gzip data whole, bounded as GunzipSource is (the output allocated once, at the size
// the trailer states). `padding` zero bytes follow the text in the same allocation.
std::string gunzipBounded(std::string_view data, std::size_t maxBytes, const std::string& what,
                          std::size_t padding = 0);

}  // namespace parascope::profiler
