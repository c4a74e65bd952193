// Trace file writing (deflate into an OutputFile) and bounded reading with gzip support.
#include "profiler/io/trace_file.h"

#include <zlib.h>

#include <cstdint>

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

std::string gunzipBounded(std::string_view data, std::size_t maxBytes, const std::string& what,
                          std::size_t padding) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw UserError(what + ": cannot start gzip decoder");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  // A gzip member ends with its inflated size mod 2^32 (RFC 1952 ISIZE). Within the limit
  // (below 4 GiB) it is exact: refuse a larger claim before inflating anything, and allocate
  // the output once, so a bomb never makes the buffer double past the limit.
  const bool gzip = data.size() >= 18 && static_cast<unsigned char>(data[0]) == 0x1f &&
                    static_cast<unsigned char>(data[1]) == 0x8b;
  std::size_t stated = maxBytes;
  if (gzip) {
    const auto* t = reinterpret_cast<const unsigned char*>(data.data() + data.size() - 4);
    stated = t[0] | (t[1] << 8) | (t[2] << 16) | (std::uint32_t{t[3]} << 24);
    if (stated > maxBytes) {
      inflateEnd(&z);
      throw UserError(what + ": states an inflated size of " + std::to_string(stated) +
                      " bytes, more than the import limit of " + std::to_string(maxBytes));
    }
  }
  std::string out;
  out.reserve(stated + padding);
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
    if (out.size() + (sizeof chunk - z.avail_out) > stated) {
      inflateEnd(&z);
      // The trailer holds the size modulo 4 GiB: past it, the data is corrupt or holds that
      // plus a multiple of 4 GiB, over the limit either way.
      throw UserError(what + (stated < maxBytes
                                  ? ": inflates past the " + std::to_string(stated) +
                                        " bytes its gzip trailer states (the size modulo 4 GiB): "
                                        "corrupt, or more than the import limit of " +
                                        std::to_string(maxBytes) + " bytes"
                                  : ": inflates to more than " + std::to_string(maxBytes) +
                                        " bytes, the import limit"));
    }
    out.append(chunk, sizeof chunk - z.avail_out);
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw UserError(what + ": truncated gzip data (stream ends after " +
                      std::to_string(z.total_in) + " compressed bytes)");
    }
  }
  inflateEnd(&z);
  out.append(padding, '\0');  // within the reservation: no second copy of the text
  return out;
}

}  // namespace parascope::profiler
