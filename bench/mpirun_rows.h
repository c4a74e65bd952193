// The benchmarks' MPI halves: this executable re-launched under mpirun, its figures read back
// from the JSON lines it prints.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace parascope::bench {

// Runs `mpirun -np ranks <this executable> args...` and returns the JSON objects of its output
// whose "bench" is `bench`; says on stderr which command gave none.
std::vector<nlohmann::json> benchRowsUnderMpirun(int ranks, const std::vector<std::string>& args,
                                                 const std::string& bench);

}  // namespace parascope::bench
