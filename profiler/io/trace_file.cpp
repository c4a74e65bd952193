// Trace file writing (temporary + rename) and bounded reading with gzip support.
#include "profiler/io/trace_file.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "core/common/error.h"

namespace parascope::profiler {

namespace {
bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

TraceFileWriter::TraceFileWriter(std::string path)
    : path_(std::move(path)), tmpPath_(path_ + ".tmp" + std::to_string(::getpid())) {
  buffer_.reserve(kFlushAt + 4096);
  if (endsWith(path_, ".gz")) {
    gz_ = gzopen(tmpPath_.c_str(), "wb6");
    if (!gz_) fail("cannot create");
  } else {
    file_ = std::fopen(tmpPath_.c_str(), "wb");
    if (!file_) fail("cannot create");
  }
}

TraceFileWriter::~TraceFileWriter() {
  if (file_ || gz_) {
    if (file_) std::fclose(file_);
    if (gz_) gzclose(static_cast<gzFile>(gz_));
    std::remove(tmpPath_.c_str());
  }
}

void TraceFileWriter::fail(const char* what) {
  const int err = errno;
  if (file_) std::fclose(file_);
  if (gz_) gzclose(static_cast<gzFile>(gz_));
  file_ = nullptr;
  gz_ = nullptr;
  std::remove(tmpPath_.c_str());
  throw UserError(std::string(what) + " trace file '" + path_ + "': " + std::strerror(err));
}

void TraceFileWriter::flush() {
  if (buffer_.empty()) return;
  bool ok;
  if (gz_) {
    ok = gzwrite(static_cast<gzFile>(gz_), buffer_.data(), static_cast<unsigned>(buffer_.size())) ==
         static_cast<int>(buffer_.size());
  } else {
    ok = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size();
  }
  if (!ok) fail("cannot write");
  written_ += buffer_.size();
  buffer_.clear();
}

void TraceFileWriter::commit() {
  flush();
  bool ok;
  if (gz_) {
    ok = gzclose(static_cast<gzFile>(gz_)) == Z_OK;
    gz_ = nullptr;
  } else {
    ok = std::fclose(file_) == 0;
    file_ = nullptr;
  }
  if (!ok || std::rename(tmpPath_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(tmpPath_.c_str());
    throw UserError("cannot finish trace file '" + path_ + "': " + std::strerror(err));
  }
}

std::string gunzipBounded(std::string_view data, std::size_t maxBytes, const std::string& what) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw UserError(what + ": cannot start gzip decoder");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::size_t at = z.total_in;
      inflateEnd(&z);
      throw UserError(what + ": corrupt or truncated gzip data at compressed byte " +
                      std::to_string(at));
    }
    out.append(chunk, sizeof chunk - z.avail_out);
    if (out.size() > maxBytes) {
      inflateEnd(&z);
      throw UserError(what + ": inflates to more than " + std::to_string(maxBytes) +
                      " bytes, the import limit");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw UserError(what + ": truncated gzip data (stream ends after " +
                      std::to_string(z.total_in) + " compressed bytes)");
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace parascope::profiler
