#include "core/common/printable.h"

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

}  // namespace parascope
