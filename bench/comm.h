// parascope-cli bench comm: its options and its run (bench/comm.cpp says what it measures).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace parascope::bench {

struct BenchCommOptions {
  int ranks = 2;
  std::string backend = "all";
  std::vector<std::string> ops = {"allReduce", "allGather", "reduceScatter", "broadcast",
                                  "reduce",    "gather",    "scatter",       "allToAll"};
  std::size_t minBytes = 1 << 10;
  std::size_t maxBytes = 64u << 20;
  double secondsPerPoint = 0.15;
  bool json = false;
};

void runBenchComm(const BenchCommOptions& o);

}  // namespace parascope::bench
