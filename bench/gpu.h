// parascope-cli bench gpu: its options and its run (bench/gpu.cpp says what it measures).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace parascope::bench {

struct BenchGpuOptions {
  int n = 8192;
  int reps = 20;
  bool pytorch = false;
  std::string python = "python3";
  std::string pytorchScript;  // empty: tests/tools/torch_gemm_peak.py of this build's tree
  bool json = false;
};

void runBenchGpu(const BenchGpuOptions& o);

}  // namespace parascope::bench
