// parascope-cli bench step with pipeline programs (--pp, --schedule, --microbatches,
// --recompute): in-process ranks of the pipeline x data mesh; throughput, MFU, each pipeline
// rank's measured idle fraction next to its schedule's ideal bubble, peak activation memory.
#pragma once

#include "core/config/config.h"

namespace parascope::bench {

// sgemmPeak: this machine's single-thread sgemm FLOP/s, measured by the caller.
void runBenchStepPipeline(const TrainConfig& config, int steps, int warmup, bool json,
                          double sgemmPeak);

}  // namespace parascope::bench
