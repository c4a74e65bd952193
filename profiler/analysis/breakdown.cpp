// Per-rank, per-step time breakdown. A step's window is its Step span when the rank recorded
// one, else the extent of the events tagged with the step; busy time is clipped to it.
#include "profiler/analysis/breakdown.h"

#include <algorithm>
#include <map>

#include "core/common/checked_math.h"
#include "profiler/analysis/intervals.h"

namespace parascope::profiler {

namespace {

enum class Busy { Compute, Communication, Other, None };

Busy classify(Category c) {
  switch (c) {
    case Category::Compute:
    case Category::Optimizer: return Busy::Compute;
    case Category::Communication: return Busy::Communication;
    case Category::Memcpy:
    case Category::Memset:
    case Category::DataLoad:
    case Category::Io: return Busy::Other;
    default: return Busy::None;
  }
}

struct Window {
  std::int64_t start = INT64_MAX;
  std::int64_t end = INT64_MIN;
  bool fromStepSpan = false;
  void extend(const Event& e) {
    start = std::min(start, e.startNs);
    end = std::max(end, e.endNs);
  }
};

std::map<std::int32_t, Window> stepWindows(const std::vector<const Event*>& events) {
  std::map<std::int32_t, Window> w;
  for (const Event* e : events) {
    if (e->kind != EventKind::Span || e->category != Category::Step || e->step < 0) continue;
    Window& x = w[e->step];
    if (!x.fromStepSpan) x = Window{};
    x.fromStepSpan = true;
    x.extend(*e);
  }
  for (const Event* e : events) {
    if (e->kind == EventKind::Span && e->step >= 0 && !w[e->step].fromStepSpan)
      w[e->step].extend(*e);
  }
  if (w.empty()) {
    Window all;
    for (const Event* e : events) all.extend(*e);
    if (all.end > all.start) w[-1] = all;
  }
  return w;
}

StepBreakdown measure(const std::vector<const Event*>& events, bool gpu, std::int64_t lo,
                      std::int64_t hi) {
  std::vector<Interval> parts[3];
  for (const Event* e : events) {
    if (e->kind != EventKind::Span || trace::lane::isGpu(e->lane) != gpu) continue;
    Busy b = classify(e->category);
    Interval i{e->startNs, e->endNs};
    if (b != Busy::None && clipTo(i, lo, hi)) parts[static_cast<int>(b)].push_back(i);
  }
  auto compute = unite(std::move(parts[0]));
  auto comm = unite(std::move(parts[1]));
  auto other = unite(std::move(parts[2]));
  auto computeOrComm = unionOf(compute, comm);

  StepBreakdown r;
  r.gpu = gpu;
  r.windowStartNs = lo;
  r.windowEndNs = hi;
  r.computeNs = totalLength(compute);
  r.communicationNs = totalLength(comm);
  r.exposedCommunicationNs = lengthOutside(comm, compute);
  r.otherNs = lengthOutside(other, computeOrComm);
  r.idleNs = saturatingSub(saturatingSub(hi, lo), totalLength(unionOf(computeOrComm, other)));
  if (r.communicationNs > 0) {
    r.overlapRatio =
        static_cast<double>(saturatingSub(r.communicationNs, r.exposedCommunicationNs)) /
        static_cast<double>(r.communicationNs);
  }
  return r;
}

}  // namespace

std::vector<StepBreakdown> computeBreakdown(const TraceData& trace) {
  std::map<std::int32_t, std::vector<const Event*>> byRank;
  for (const Event& e : trace.events) byRank[e.rank].push_back(&e);

  std::vector<StepBreakdown> out;
  for (const auto& [rank, events] : byRank) {
    const bool gpu = std::any_of(events.begin(), events.end(), [](const Event* e) {
      return e->kind == EventKind::Span && trace::lane::isGpu(e->lane);
    });
    for (const auto& [step, w] : stepWindows(events)) {
      StepBreakdown r = measure(events, gpu, w.start, w.end);
      r.rank = rank;
      r.step = step;
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace parascope::profiler
