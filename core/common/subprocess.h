// Runs another program and collects what it writes to stdout, with no shell in between: each
// argument reaches the program as it is, so a path holding quotes, spaces or `;` is only a path.
// For the benchmarks that compare with a peer (PyTorch) or relaunch under mpirun.
#pragma once

#include <string>
#include <vector>

namespace parascope {

struct ProcessOutput {
  std::string out;     // everything the program wrote to stdout
  int exitStatus = 0;  // its exit status; 128 + N when signal N ended it
};

// argv[0] is looked up in PATH unless it holds a '/'; stdin is /dev/null, stderr is ours.
// Throws std::runtime_error naming the program when it cannot be started.
ProcessOutput runCapturingOutput(const std::vector<std::string>& argv);

// The arguments as one line for messages, each quoted where a shell would split it.
std::string commandLine(const std::vector<std::string>& argv);

}  // namespace parascope
