// A prediction beside its run; see timeline_prediction.h.
#include "profiler/timeline/timeline_prediction.h"

#include <algorithm>
#include <climits>
#include <map>
#include <string>

#include "profiler/timeline/timeline_layout.h"

namespace parascope::profiler {

namespace {

// When each step began: its earliest step span over the ranks.
std::map<std::int32_t, std::int64_t> stepStarts(const profiler::TraceData& trace) {
  std::map<std::int32_t, std::int64_t> starts;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::Span || e.category != Category::Step || e.step < 0) continue;
    const auto [it, added] = starts.emplace(e.step, e.startNs);
    if (!added) it->second = std::min(it->second, e.startNs);
  }
  return starts;
}

Category categoryOf(const SpanRec& s) {
  return static_cast<Category>(s.nameCat & 15);
}

}  // namespace

profiler::TraceData withPredictionBeside(profiler::TraceData measured,
                                         const std::vector<PredictedPart>& parts) {
  const std::map<std::int32_t, std::int64_t> measuredStarts = stepStarts(measured);
  for (const PredictedPart& part : parts) {
    const std::map<std::int32_t, std::int64_t> predictedStarts = stepStarts(*part.trace);
    for (Event e : part.trace->events) {
      const auto from = predictedStarts.find(e.step);
      // Both count from 1: the prediction's first step is the part's first.
      const auto to = measuredStarts.find(part.firstStep + e.step - 1);
      if (from == predictedStarts.end() || to == measuredStarts.end()) continue;
      e.startNs += to->second - from->second;
      e.endNs += to->second - from->second;
      e.step = to->first;
      e.rank += kPredictedRankBase;
      e.name = measured.strings.intern(e.name);
      measured.events.push_back(e);
    }
    for (const auto& [key, name] : part.trace->laneNames) {
      measured.laneNames.emplace(std::pair(key.first + kPredictedRankBase, key.second), name);
    }
  }
  for (const Event& e : measured.events) {
    if (isPredictedRank(e.rank) && !measured.rankNames.count(e.rank)) {
      measured.rankNames[e.rank] =
          "rank " + std::to_string(measuredRankOf(e.rank)) + " (predicted)";
    }
  }
  measured.sortByTime();
  return measured;
}

SpanRef counterpartSpan(const TimelineIndex& index, SpanRef ref) {
  if (!ref.valid()) return {};
  const Event e = index.event(ref);
  if (e.category != Category::Instruction || e.instruction < 0 || e.step < 0) return {};
  const std::int32_t other =
      isPredictedRank(e.rank) ? measuredRankOf(e.rank) : e.rank + kPredictedRankBase;
  const std::int32_t laneId = index.lanes()[ref.lane].laneId;
  // Only the other side's spans of that step are searched: its step span (on its host lane)
  // bounds them, so a hover costs a step's spans, not the run's.
  std::int64_t fromNs = INT64_MIN, toNs = INT64_MAX;
  const Lane* target = nullptr;
  std::uint32_t targetIndex = 0;
  for (std::uint32_t i = 0; i < index.lanes().size(); ++i) {
    const Lane& lane = index.lanes()[i];
    if (lane.rank != other) continue;
    if (lane.laneId == laneId) {
      target = &lane;
      targetIndex = i;
    }
    if (lane.laneId != trace::lane::kHost || lane.levels.empty()) continue;
    for (const SpanRec& s : lane.levels[0]) {
      if (categoryOf(s) == Category::Step && index.details()[s.detail].step == e.step) {
        fromNs = s.startNs;
        toNs = s.endNs;
        break;
      }
    }
  }
  if (!target) return {};
  for (std::uint32_t depth = 0; depth < target->levels.size(); ++depth) {
    const std::vector<SpanRec>& level = target->levels[depth];
    auto it = std::lower_bound(level.begin(), level.end(), fromNs,
                               [](const SpanRec& s, std::int64_t t) { return s.startNs < t; });
    for (; it != level.end() && it->startNs <= toNs; ++it) {
      const SpanDetail& d = index.details()[it->detail];
      if (categoryOf(*it) == Category::Instruction && d.instruction == e.instruction &&
          d.step == e.step) {
        return {targetIndex, depth, static_cast<std::uint32_t>(it - level.begin())};
      }
    }
  }
  return {};
}

}  // namespace parascope::profiler
