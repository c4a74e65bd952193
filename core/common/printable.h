// Text for people: sizes as they read them, and text from files and users made safe for a
// terminal: messages quote names read from manifests, traces and configs, and a name holding an
// escape sequence must not reach the terminal as one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace parascope {

// The most of a text printableText keeps: a message quoting a path of thousands of characters
// stays one readable line.
inline constexpr std::size_t kMaxPrintableBytes = 4096;

// `text` with every control character (C0, DEL, and C1 as UTF-8 encodes it) written as \xHH;
// everything else, UTF-8 included, as it was. Longer than maxBytes, its first and last halves
// are kept (cut at UTF-8 character boundaries) around " ... [N bytes] ... ", so both the name a
// message starts with and the reason it ends with remain.
std::string printableText(std::string_view text, std::size_t maxBytes = kMaxPrintableBytes);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF): what JSON output can carry.
bool isValidUtf8(std::string_view text);

// "1.5 GiB", "640 KiB": sizes in messages and views.
std::string formatBytes(double bytes);

}  // namespace parascope
