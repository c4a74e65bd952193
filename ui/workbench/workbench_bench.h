// The workbench benchmark behind `parascope --bench-ui`: the same 4-rank session run in one
// process three ways, for several rounds: headless (the session alone), traced (headless with
// the workbench's run recorder: the tracer and its drain thread, no window) and attached (in the
// workbench window with its charts, live timeline, log and views). The order alternates from
// round to round (headless, traced, attached, then attached, traced, headless, ...) so that
// whatever drifts over a process's life (caches, clocks, a neighbour's load) does not always
// favour the same run. While the window's session runs, a 16 ms precise timer on the GUI thread
// measures, per frame period, the GUI thread's CPU time (every drain, model update and repaint:
// what a frame costs) and the interval between its ticks (what the user sees, including waits
// for a core). Prints frame figures over all rounds as median and p99, each run's training
// throughput (tokens over summed step time, all steps) per round and as the median of the
// rounds, and the slowdowns against headless as the median of each round's own. Needs a
// QApplication.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

namespace parascope::ui {

struct WorkbenchBenchOptions {
  nlohmann::json document;  // the session; data_parallel_size is set to 4
  int steps = 12;
  int rounds = 3;
  bool json = false;
};

// Returns 0, or 1 when a run failed (its reason printed).
int runWorkbenchBench(const WorkbenchBenchOptions& options, std::ostream& out);

}  // namespace parascope::ui
