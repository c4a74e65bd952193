#include "core/common/printable.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace parascope {

namespace {

bool continuationByte(char c) {
  return (static_cast<unsigned char>(c) & 0xc0) == 0x80;
}

}  // namespace

std::string printableText(std::string_view text, std::size_t maxBytes) {
  if (text.size() > maxBytes) {
    std::size_t head = maxBytes / 2, tail = text.size() - maxBytes / 2;
    while (head > 0 && continuationByte(text[head])) --head;
    while (tail < text.size() && continuationByte(text[tail])) ++tail;
    return printableText(text.substr(0, head), maxBytes) + " ... [" + std::to_string(text.size()) +
           " bytes] ... " + printableText(text.substr(tail), maxBytes);
  }
  std::string out;
  out.reserve(text.size());
  const auto escape = [&](unsigned char c) {
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // U+0080..U+009F: C1 controls (0x9b is CSI on terminals that take them).
      escape(c);
      escape(static_cast<unsigned char>(text[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool isValidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    std::size_t length = 0;
    std::uint32_t point = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2;
      point = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3;
      point = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4;
      point = c & 0x07;
    } else {
      return false;
    }
    if (i + length > n) return false;
    for (std::size_t k = 1; k < length; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      point = (point << 6) | (p[i + k] & 0x3f);
    }
    const std::uint32_t least = length == 3 ? 0x800 : length == 4 ? 0x10000 : 0x80;
    if (point < least || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

std::string formatBytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

}  // namespace parascope
