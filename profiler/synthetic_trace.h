// A synthetic trace shaped like a pipeline-parallel training run, for the timeline and trace-I/O
// benchmarks and tests: per rank, steps holding F/B/W instructions per micro-batch, each holding
// short kernels, activation sends/receives linked by flows, an all-reduce per step and a memory
// counter. Deterministic for a seed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct SyntheticOptions {
  std::size_t events = 100'000;  // about this many in total
  int ranks = 8;
  int stages = 4;
  int microBatches = 8;
  int kernelsPerInstruction = 20;
  std::uint64_t seed = 1;
};

TraceData syntheticTrainingTrace(const SyntheticOptions& options);

}  // namespace parascope::profiler
