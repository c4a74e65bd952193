// What the hostile-input suites share: the message of the UserError a call throws, a value
// nested `depth` levels deep, and a file written byte for byte.
#pragma once

#include <QString>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/common/error.h"

namespace parascope::test {

// The UserError's message, or "(no UserError)" when `f` returns.
template <class F>
QString userErrorOf(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return QString::fromStdString(e.what());
  }
  return "(no UserError)";
}

// `depth` nested empty arrays: "[[...]]".
inline std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

inline void write(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

}  // namespace parascope::test
