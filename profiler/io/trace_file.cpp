// Trace file writing (deflate into an OutputFile) and bounded reading with gzip support.
#include "profiler/io/trace_file.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/common/error.h"

namespace parascope::profiler {

void appendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      static const char hex[] = "0123456789abcdef";
      const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      out.append(esc, 6);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
}

namespace {
bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

TraceFileWriter::TraceFileWriter(std::string path) : file_(std::move(path), "trace file") {
  buffer_.reserve(kFlushAt + 4096);
  if (endsWith(file_.path(), ".gz")) {
    auto* z = new z_stream{};
    // windowBits 15 + 16: a gzip wrapper, as gzopen writes; level 6 as "wb6".
    if (deflateInit2(z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      delete z;
      file_.fail("cannot start the gzip encoder");
    }
    gz_ = z;
  }
}

TraceFileWriter::~TraceFileWriter() {
  if (gz_) {
    deflateEnd(static_cast<z_stream*>(gz_));
    delete static_cast<z_stream*>(gz_);
  }
}

// Deflates `in` (with Z_FINISH at the end) into the file in 64 KiB pieces.
void TraceFileWriter::deflateInto(std::string_view in, int flush) {
  auto* z = static_cast<z_stream*>(gz_);
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z->avail_in = static_cast<uInt>(in.size());
  unsigned char out[1 << 16];
  do {
    z->next_out = out;
    z->avail_out = sizeof out;
    if (deflate(z, flush) == Z_STREAM_ERROR) file_.fail("gzip encoder failed");
    file_.write(out, sizeof out - z->avail_out);
  } while (z->avail_out == 0);
}

void TraceFileWriter::flush() {
  if (buffer_.empty()) return;
  if (gz_) {
    deflateInto(buffer_, Z_NO_FLUSH);
  } else {
    file_.write(buffer_.data(), buffer_.size());
  }
  written_ += buffer_.size();
  buffer_.clear();
}

void TraceFileWriter::commit() {
  flush();
  if (gz_) deflateInto({}, Z_FINISH);
  file_.commit();
}

std::size_t MemorySource::read(char* out, std::size_t n) {
  n = std::min(n, data_.size());
  std::memcpy(out, data_.data(), n);
  data_.remove_prefix(n);
  return n;
}

std::size_t FileSource::read(char* out, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd_, out + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw UserError("cannot read " + what_ + ": " + std::strerror(errno));
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  total_ += got;
  // Files that state size 0 (under /proc) are bounded here, as they are read.
  if (total_ > maxBytes_) {
    throw UserError(what_ + " has more than the import limit of " + std::to_string(maxBytes_) +
                    " bytes");
  }
  return got;
}

bool isGzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::size_t gzipTrailerSize(const char lastFour[4]) {
  const auto* t = reinterpret_cast<const unsigned char*>(lastFour);
  return t[0] | (t[1] << 8) | (t[2] << 16) | (std::size_t{t[3]} << 24);
}

std::optional<std::size_t> gzipStatedSize(std::string_view data) {
  if (!isGzip(data) || data.size() < 18) return std::nullopt;
  return gzipTrailerSize(data.data() + data.size() - 4);
}

GunzipSource::GunzipSource(ByteSource& compressed, std::optional<std::size_t> statedSize,
                           std::size_t maxBytes, std::string what)
    : compressed_(compressed),
      limit_(statedSize.value_or(maxBytes)),
      maxBytes_(maxBytes),
      what_(std::move(what)),
      z_(new z_stream{}),
      in_(std::size_t{1} << 16, '\0') {
  // Within the limit (below 4 GiB) the trailer is exact: a larger claim is refused before
  // anything is inflated.
  if (statedSize && *statedSize > maxBytes) {
    delete static_cast<z_stream*>(z_);
    throw UserError(what_ + ": states an inflated size of " + std::to_string(*statedSize) +
                    " bytes, more than the import limit of " + std::to_string(maxBytes));
  }
  if (inflateInit2(static_cast<z_stream*>(z_), 15 + 32) != Z_OK) {
    delete static_cast<z_stream*>(z_);
    throw UserError(what_ + ": cannot start gzip decoder");
  }
}

GunzipSource::~GunzipSource() {
  inflateEnd(static_cast<z_stream*>(z_));
  delete static_cast<z_stream*>(z_);
}

void GunzipSource::fail(const std::string& why) {
  throw UserError(what_ + ": " + why);
}

std::size_t GunzipSource::read(char* out, std::size_t n) {
  auto* z = static_cast<z_stream*>(z_);
  std::size_t produced = 0;
  while (produced < n && !done_) {
    if (z->avail_in == 0 && !inputEnded_) {
      const std::size_t got = compressed_.read(in_.data(), in_.size());
      inputEnded_ = got == 0;
      z->next_in = reinterpret_cast<Bytef*>(in_.data());
      z->avail_in = static_cast<uInt>(got);
    }
    z->next_out = reinterpret_cast<Bytef*>(out + produced);
    z->avail_out = static_cast<uInt>(std::min<std::size_t>(n - produced, 1U << 30));
    const uInt room = z->avail_out;
    const int rc = inflate(z, Z_NO_FLUSH);
    produced += room - z->avail_out;
    if (rc == Z_STREAM_END) {
      done_ = true;
    } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && z->avail_in == 0 && !inputEnded_)) {
      if (rc == Z_BUF_ERROR) {
        fail("truncated gzip data (stream ends after " + std::to_string(z->total_in) +
             " compressed bytes)");
      }
      fail("corrupt or truncated gzip data at compressed byte " + std::to_string(z->total_in));
    } else if (z->avail_in == 0 && inputEnded_ && z->avail_out != 0) {
      fail("truncated gzip data (stream ends after " + std::to_string(z->total_in) +
           " compressed bytes)");
    }
  }
  total_ += produced;
  if (total_ > limit_) {
    // The trailer holds the size modulo 4 GiB: past it, the data is corrupt or holds that plus a
    // multiple of 4 GiB, over the limit either way.
    fail(limit_ < maxBytes_
             ? "inflates past the " + std::to_string(limit_) +
                   " bytes its gzip trailer states (the size modulo 4 GiB): "
                   "corrupt, or more than the import limit of " +
                   std::to_string(maxBytes_) + " bytes"
             : "inflates to more than " + std::to_string(maxBytes_) + " bytes, the import limit");
  }
  return produced;
}

std::string gunzipBounded(std::string_view data, std::size_t maxBytes, const std::string& what,
                          std::size_t padding) {
  MemorySource compressed(data);
  GunzipSource gunzip(compressed, gzipStatedSize(data), maxBytes, what);
  const std::size_t stated = gzipStatedSize(data).value_or(maxBytes);
  // One allocation for the output: a bomb never makes the buffer double past the limit.
  std::string out;
  out.reserve(stated + padding);
  char chunk[1 << 16];
  while (const std::size_t got = gunzip.read(chunk, sizeof chunk)) out.append(chunk, got);
  out.append(padding, '\0');  // within the reservation: no second copy of the text
  return out;
}

}  // namespace parascope::profiler
