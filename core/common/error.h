// Error types shared by the whole engine. A UserError is something the user can fix (a bad
// config key, a missing or malformed file, an invalid argument); front ends report its message
// as one line and exit with status 2. Interrupted is a stop signal honoured at a safe point
// (exit 128 + signal). Anything else that escapes is a runtime failure (exit 1).
#pragma once

#include <csignal>
#include <stdexcept>
#include <string>

namespace parascope {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal)
      : std::runtime_error(signal == SIGINT    ? "interrupted (SIGINT)"
                           : signal == SIGTERM ? "terminated (SIGTERM)"
                                               : "stopped by signal " + std::to_string(signal)),
        signal_(signal) {}
  int signal() const { return signal_; }
  int exitCode() const { return 128 + signal_; }

 private:
  int signal_;
};

}  // namespace parascope
