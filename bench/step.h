// parascope-cli bench step: its options and its run (bench/step.cpp says what it measures).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace parascope::bench {

struct BenchStepOptions {
  int steps = 20;
  int warmup = 3;
  bool json = false;
  bool pytorch = false;
  int dp = 1;
  int tp = 1;
  bool sequenceParallel = false;
  int zero = 0;
  std::string precision = "fp32";
  int pp = 1;            // pipeline ranks
  std::string schedule;  // empty: no pipeline program unless --pp > 1 (then 1f1b)
  int microbatches = 0;  // per step in a pipeline program; 0: 8 with --pp > 1
  std::string recompute = "none";
  int vpp = 0;                     // model chunks per pipeline rank; 0: 2 when interleaved
  std::string python = "python3";  // the Python with PyTorch, for --pytorch
  std::string pytorchScript;       // empty: tests/tools/torch_gpt_step.py of this build's tree
  std::string device = "cpu";      // "cuda": the GPT on the first GPU (config key `device`)
  bool largestBatch = false;       // cuda: also at the largest micro-batch each side fits
  std::vector<std::string> overrides;
};

void runBenchStep(const BenchStepOptions& o);

}  // namespace parascope::bench
