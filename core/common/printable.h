// Text from files and users made safe for a terminal: messages quote names read from manifests,
// traces and configs, and a name holding an escape sequence must not reach the terminal as one.
#pragma once

#include <string>
#include <string_view>

namespace parascope {

// `text` with every control character (C0, DEL, and C1 as UTF-8 encodes it) written as \xHH;
// everything else, UTF-8 included, as it was.
std::string printableText(std::string_view text);

}  // namespace parascope
