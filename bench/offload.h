// parascope-cli bench offload: its options and its run (bench/offload.cpp says what it measures).
#pragma once

#include <string>
#include <vector>

namespace parascope::bench {

struct BenchOffloadOptions {
  std::string config = "resources/configs/default.json";
  std::vector<std::string> overrides;
  int steps = 3;    // measured steps of each run, after one unmeasured
  std::string dir;  // where the swap and the disk's test file go; empty: the temporary directory
  bool json = false;
};

void runBenchOffload(const BenchOffloadOptions& o);

}  // namespace parascope::bench
