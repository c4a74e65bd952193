// Error types shared by the whole engine. A UserError is something the user can fix (a bad
// config key, a missing or malformed file, an invalid argument); front ends report its message
// as one line and exit with status 2. Anything else that escapes is a runtime failure (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace parascope {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace parascope
