// Files for traces: a streaming writer over OutputFile (core/common/output_file.h: the path
// checked up front, a temporary beside the target renamed into place only when complete, and
// removed on any error or stop signal), gzip when the name ends in ".gz"; and bounded gzip
// inflation for readers.
#pragma once

#include <cstddef>
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

// Inflates gzip data; throws UserError naming `what` when it is corrupt, truncated or inflates
// past maxBytes or past the size its trailer states (checked before inflating, and the only
// allocation made for the output), so a gzip bomb costs no more than the limit. `padding` zero
// bytes follow the text in the same allocation (a parser's padding, without a copy).
std::string gunzipBounded(std::string_view data, std::size_t maxBytes, const std::string& what,
                          std::size_t padding = 0);

}  // namespace parascope::profiler
