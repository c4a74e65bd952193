// parascope-cli bench switch: its options and its run (bench/switch.cpp says what it measures).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace parascope::bench {

struct BenchSwitchOptions {
  std::string config = "resources/configs/default.json";
  std::vector<std::string> overrides;
  int rounds = 2;   // there-and-back pairs per pair of layouts
  std::string dir;  // where its scratch directory goes; empty: the temporary directory
  bool json = false;
};

void runBenchSwitch(const BenchSwitchOptions& o);

}  // namespace parascope::bench
