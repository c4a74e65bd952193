// Pipeline bubble per stage. The window of step s is the union extent of its Step spans on all
// ranks, or of all events tagged s when no rank recorded Step spans.
#include "profiler/analysis/bubbles.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/common/checked_math.h"
#include "profiler/analysis/intervals.h"

namespace parascope::profiler {

namespace {
struct Extent {
  std::int64_t start = INT64_MAX;
  std::int64_t end = INT64_MIN;
  void add(const Event& e) {
    start = std::min(start, e.startNs);
    end = std::max(end, e.endNs);
  }
};

std::map<std::int32_t, Extent> stepExtents(const TraceData& trace) {
  std::map<std::int32_t, Extent> spans, tagged;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::Span || e.step < 0) continue;
    (e.category == Category::Step ? spans : tagged)[e.step].add(e);
  }
  for (const auto& [step, x] : spans) tagged[step] = x;
  return tagged;
}
}  // namespace

std::vector<StageBubble> computeBubbles(const TraceData& trace) {
  using Key = std::tuple<std::int32_t, std::int32_t, std::int32_t>;  // step, stage, rank
  std::map<Key, std::vector<Interval>> busy;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::Span && e.category == Category::Compute && e.stage >= 0 &&
        e.step >= 0) {
      busy[{e.step, e.stage, e.rank}].push_back({e.startNs, e.endNs});
    }
  }
  // A bubble is what a stage waits for another: a step whose work is all on one stage (a run
  // with pipeline_model_parallel_size 1 through the pipeline engine, or switched live to one)
  // has none, whatever else it waits for.
  std::map<std::int32_t, std::set<std::int32_t>> stagesOfStep;
  for (const auto& [key, intervals] : busy) stagesOfStep[std::get<0>(key)].insert(std::get<1>(key));
  const auto extents = stepExtents(trace);
  std::vector<StageBubble> out;
  for (auto& [key, intervals] : busy) {
    if (stagesOfStep[std::get<0>(key)].size() < 2) continue;
    const Extent& w = extents.at(std::get<0>(key));
    for (Interval& i : intervals) clipTo(i, w.start, w.end);
    StageBubble b;
    b.step = std::get<0>(key);
    b.stage = std::get<1>(key);
    b.rank = std::get<2>(key);
    b.windowNs = saturatingSub(w.end, w.start);
    b.busyNs = totalLength(unite(std::move(intervals)));
    b.bubbleNs = saturatingSub(b.windowNs, b.busyNs);
    b.bubbleFraction =
        b.windowNs > 0 ? static_cast<double>(b.bubbleNs) / static_cast<double>(b.windowNs) : 0;
    out.push_back(b);
  }
  return out;
}

StepDurations meanInstructionDurations(const TraceData& trace) {
  std::map<std::string_view, std::pair<double, long>> sums;
  for (const Event& e : trace.events) {
    if (e.category != Category::Instruction || e.kind != EventKind::Span) continue;
    auto& s = sums[e.name];
    s.first += static_cast<double>(e.durationNs()) * 1e-9;
    s.second += 1;
  }
  auto mean = [&](std::string_view op, double otherwise) {
    const auto it = sums.find(op);
    return it == sums.end() ? otherwise : it->second.first / static_cast<double>(it->second.second);
  };
  if (!sums.count("F")) return {};
  StepDurations d;
  d.forward = mean("F", 0);
  d.backward = mean("B", 2 * d.forward);
  d.backwardInput = mean("Bi", d.backward / 2);
  d.backwardWeight = mean("W", d.backward / 2);
  return d;
}

double idealBubbleOf(const TraceData& trace, std::string_view schedule,
                     const PipelineShape& shape) {
  return findSchedule(schedule).idealBubble(shape, meanInstructionDurations(trace));
}

}  // namespace parascope::profiler
