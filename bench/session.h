// The step benchmarks' run: warm-up, measured and traced steps of a config through a Session
// (steps only, no evaluation), and what each rank measured over the measured steps.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/config/config.h"
#include "core/session/run_recorder.h"
#include "profiler/tracer.h"

namespace parascope::bench {

struct RankFigures {
  std::vector<double> times;  // seconds, per measured step
  double exposed = 0;         // exposed communication seconds, summed over measured steps
  double busy = 0, idle = 0;  // pipeline compute and idle seconds, summed over measured steps
  int skipped = 0;            // fp16 steps skipped on a gradient overflow
  int pipelineRank = 0;
  std::array<std::int64_t, kMemoryCategoryCount> peak{};  // bytes, over measured steps
};

struct BenchRun {
  std::vector<RankFigures> ranks;
  std::int64_t tokensPerStep = 0;
  double medianSeconds = 0;  // rank 0's median measured step
};

// `warmup` + `steps` + `traced` steps; `tracer` (if given) is installed for the traced steps
// only, `recorder` (if given) records the whole run as `train --trace` does. Throws the session's
// failure.
BenchRun runBenchSession(const TrainConfig& config, int warmup, int steps, int traced,
                         profiler::Tracer* tracer, std::shared_ptr<RunRecorder> recorder = {});

}  // namespace parascope::bench
