// This machine's hardware description (measured by short runs, cached per user) and
// parascope-cli bench plan: predicted against measured step time, idle fraction and memory over
// a set of strategies of two GPTs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/plan/calibrate.h"

namespace parascope::bench {

// Short traced runs of GPT shapes in each precision and timed collectives over two in-process
// ranks, fitted (core/plan/calibrate.h). About a minute on a 2-core machine.
CalibrationFit calibrateThisMachine();

// The same fit from traced runs the user recorded (`train --trace`, the workbench's runs), each
// file holding its run's config; UserError for a trace without one or of a switched run.
CalibrationFit calibrateFromTraces(const std::vector<std::string>& paths);

// $XDG_CACHE_HOME/parascope/system.json (else ~/.cache/...); empty when neither is known.
std::string systemCachePath();

// Stores `system` as this machine's description; false when the cache cannot be written (which
// costs a calibration next time, nothing else).
bool cacheSystem(const SystemDescription& system);

// The cached description when it is this machine's (same CPU and sgemm kernels).
std::optional<SystemDescription> cachedMachine();

// The cached description when it is this machine's, else calibrated now and cached, with one
// line on stderr saying so.
SystemDescription thisMachine();

struct BenchPlanOptions {
  std::string model = "all";  // "mini", "large" or "all"
  int steps = 3;              // measured steps per strategy, after one warm-up step
  bool json = false;
  std::string system;  // a description file; empty: this machine's
};
void runBenchPlan(const BenchPlanOptions& o);

}  // namespace parascope::bench
