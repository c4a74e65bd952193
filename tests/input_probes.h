// What the hostile-input suites share: the message of the UserError a call throws, a value
// nested `depth` levels deep, a file written byte for byte, and a program run with raw arguments.
#pragma once

#include <QString>

#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

struct RawRun {
  int status = -1;  // waitpid's
  std::string output;
};

// Runs `program` with `args` as given (bytes that are not UTF-8 included), through fork and exec
// rather than QProcess (ThreadSanitizer's runtime fails on the way Qt starts processes), and
// returns its status and what it wrote to `stream` (STDOUT_FILENO or STDERR_FILENO).
inline RawRun runRaw(const std::string& program, const std::vector<std::string>& args, int stream) {
  int pipe[2];
  if (::pipe(pipe) != 0) return {};
  std::vector<std::string> all{program};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(pipe[1], stream);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe[1]);
  RawRun run;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe[0], buffer, sizeof buffer)) > 0;) {
    run.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe[0]);
  ::waitpid(child, &run.status, 0);
  return run;
}

}  // namespace parascope::test
