// The workbench benchmark behind `parascope --bench-ui`: the same 4-rank session run twice in
// one process, first headless (the session alone), then in the workbench window with its charts,
// log and report queue attached. While the window's session runs, a 16 ms precise timer on the
// GUI thread measures, per frame period, the GUI thread's CPU time (every drain, model update and
// repaint: what a frame costs) and the interval between its ticks (what the user sees, including
// waits for a core). Prints both as median and p99 and the training throughput of both runs
// (tokens over summed step time, all steps). Needs a QApplication.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

namespace parascope::ui {

struct WorkbenchBenchOptions {
  nlohmann::json document;  // the session; data_parallel_size is set to 4
  int steps = 12;
  bool json = false;
};

// Returns 0, or 1 when a run failed (its reason printed).
int runWorkbenchBench(const WorkbenchBenchOptions& options, std::ostream& out);

}  // namespace parascope::ui
