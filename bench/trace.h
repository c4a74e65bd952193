// parascope-cli bench trace: its options and its run (bench/trace.cpp says what it measures).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace parascope::bench {

struct BenchTraceOptions {
  std::int64_t events = 1'000'000;
  int stepPairs = 10;  // traced + untraced GPT-mini steps
  std::string dir;     // where its scratch directory goes; empty: the temporary directory
  bool json = false;
};

void runBenchTrace(const BenchTraceOptions& o);

}  // namespace parascope::bench
