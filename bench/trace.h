// parascope-cli bench trace: its options and its run (bench/trace.cpp says what it measures).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace parascope::bench {

struct BenchTraceOptions {
  std::int64_t events = 1'000'000;
  int stepPairs = 10;  // traced + untraced GPT-mini steps
  std::string dir = std::filesystem::temp_directory_path().string();
  bool json = false;
};

void runBenchTrace(const BenchTraceOptions& o);

}  // namespace parascope::bench
