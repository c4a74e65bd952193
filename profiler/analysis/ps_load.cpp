#include "profiler/analysis/ps_load.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "profiler/analysis/intervals.h"

namespace parascope::profiler {

namespace {

struct Staleness {
  std::int64_t sum = 0, max = 0, count = 0;
};

}  // namespace

PsActivity computePsActivity(const TraceData& trace) {
  std::map<std::int32_t, PsServerActivity> servers;
  std::map<std::int32_t, PsWorkerActivity> workers;
  std::map<std::int32_t, Staleness> staleness;  // by worker
  // The rows counters are cumulative: the last sample of each is the run's total.
  struct Last {
    std::int64_t time = -1, value = 0;
  };
  std::map<std::pair<std::int32_t, std::string_view>, Last> counters;
  // A server's busy time: its requests and updates, united (a sync round's update, and the pulls
  // it releases, run inside the push that completed the round).
  std::map<std::int32_t, std::vector<Interval>> busy;
  for (const Event& e : trace.events) {
    const std::string_view name = e.name;
    if (e.kind == EventKind::Counter) {
      if (name == "staleness" && e.peer >= 0) {
        Staleness& s = staleness[e.peer];
        s.sum += e.bytes;
        s.max = std::max(s.max, e.bytes);
        ++s.count;
      } else if (name == "rows_held" || name == "rows_pulled" || name == "rows_pushed") {
        Last& l = counters[{e.rank, name}];
        if (e.startNs >= l.time) l = {e.startNs, e.bytes};
      }
      continue;
    }
    if (e.kind != EventKind::Span) continue;
    if (name == "serve_pull" || name == "receive_push") {
      PsServerActivity& s = servers[e.rank];
      const bool pull = name == "serve_pull";
      (pull ? s.pulls : s.pushes) += 1;
      (pull ? s.bytesOut : s.bytesIn) += e.bytes;
      busy[e.rank].push_back({e.startNs, e.endNs});
    } else if (name == "apply" && e.lane == trace::lane::kApply) {
      busy[e.rank].push_back({e.startNs, e.endNs});
    } else if (name == "wait" && e.lane == trace::lane::kWait) {
      servers[e.rank].waitNs += e.durationNs();
    } else if ((name == "pull" && e.lane == trace::lane::kPull) ||
               (name == "push" && e.lane == trace::lane::kPush)) {
      PsWorkerActivity& w = workers[e.rank];
      const bool pull = name == "pull";
      (pull ? w.pulls : w.pushes) += 1;
      (pull ? w.pullNs : w.pushNs) += e.durationNs();
    }
  }
  PsActivity out;
  for (auto& [rank, s] : servers) {
    // A rank that only waited (no request reached it) is no server of this trace.
    if (s.pulls + s.pushes == 0) continue;
    s.rank = rank;
    s.busyNs = totalLength(unite(std::move(busy[rank])));
    s.rowsHeld = counters[{rank, "rows_held"}].value;
    s.rowsPulled = counters[{rank, "rows_pulled"}].value;
    s.rowsPushed = counters[{rank, "rows_pushed"}].value;
    out.servers.push_back(s);
  }
  for (auto& [rank, w] : workers) {
    w.rank = rank;
    const auto it = staleness.find(rank);
    if (it != staleness.end() && it->second.count > 0) {
      w.stalePushes = it->second.count;
      w.stalenessMax = it->second.max;
      w.stalenessMean = static_cast<double>(it->second.sum) / static_cast<double>(it->second.count);
    }
    out.workers.push_back(w);
  }
  return out;
}

}  // namespace parascope::profiler
