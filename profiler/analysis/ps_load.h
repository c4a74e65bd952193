// A parameter-server run's load, rank by rank, from its trace (core/ps records it): each server's
// requests, rows and bytes and the time it spent serving against waiting; each worker's pulls and
// pushes and, in async mode, the staleness of its pushes (how many pushes a server applied
// between the worker's pull of the rows and its push of their gradients). Servers are the ranks
// with "serve_pull" or "receive_push" spans, workers those with "pull" or "push" spans on the
// pull and push lanes; a trace without them has neither.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct PsServerActivity {
  std::int32_t rank = 0;
  std::int64_t pulls = 0, pushes = 0;
  std::int64_t rowsHeld = 0, rowsPulled = 0, rowsPushed = 0;  // the counters' last values
  std::int64_t bytesOut = 0, bytesIn = 0;                     // pull replies sent, pushes received
  std::int64_t busyNs = 0;  // serving pulls and taking in (and applying) pushes
  std::int64_t waitNs = 0;  // waiting for the next request
};

struct PsWorkerActivity {
  std::int32_t rank = 0;
  std::int64_t pulls = 0, pushes = 0;
  std::int64_t pullNs = 0, pushNs = 0;
  std::int64_t stalePushes = 0;  // pushes a staleness was recorded for (async mode)
  double stalenessMean = 0;
  std::int64_t stalenessMax = 0;
};

struct PsActivity {
  std::vector<PsServerActivity> servers;  // by rank
  std::vector<PsWorkerActivity> workers;
};

PsActivity computePsActivity(const TraceData& trace);

}  // namespace parascope::profiler
