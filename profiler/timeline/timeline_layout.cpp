// Row layout; see timeline_layout.h.
#include "profiler/timeline/timeline_layout.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace parascope::profiler {

std::int32_t rankStage(const TimelineIndex& index, std::int32_t rank) {
  for (const Lane& l : index.lanes()) {
    if (l.rank != rank) continue;
    if (l.levels.empty()) continue;
    for (const SpanRec& s : l.levels[0]) {
      if (index.details()[s.detail].stage >= 0) return index.details()[s.detail].stage;
    }
  }
  return -1;
}

std::vector<TimelineRow> layoutRows(const TimelineIndex& index, const LayoutOptions& options) {
  std::map<std::int32_t, std::vector<std::uint32_t>> lanesByRank, countersByRank;
  for (std::uint32_t i = 0; i < index.lanes().size(); ++i) {
    lanesByRank[index.lanes()[i].rank].push_back(i);
  }
  for (std::uint32_t i = 0; i < index.counters().size(); ++i) {
    countersByRank[index.counters()[i].rank].push_back(i);
    lanesByRank[index.counters()[i].rank];
  }
  std::map<std::int32_t, std::int32_t> stages;
  for (const auto& [rank, lanes] : lanesByRank) stages[rank] = rankStage(index, rank);
  // (stage or 0, measured rank, rank): a predicted rank follows the rank it predicts, at that
  // rank's stage (its own, when the prediction is of another strategy, would part them).
  std::vector<std::tuple<std::int32_t, std::int32_t, std::int32_t>> order;
  for (const auto& [rank, stage] : stages) {
    const std::int32_t measured = measuredRankOf(rank);
    const auto beside = stages.find(measured);
    const std::int32_t key = beside != stages.end() ? beside->second : stage;
    order.emplace_back(options.byStage ? key : 0, measured, rank);
  }
  std::sort(order.begin(), order.end());
  std::vector<TimelineRow> rows;
  int y = 0;
  auto push = [&](TimelineRow r, int h) {
    r.y = y;
    r.height = h;
    y += h;
    rows.push_back(r);
  };
  for (const auto& [key, measured, rank] : order) {
    TimelineRow header{TimelineRow::Kind::RankHeader, rank};
    header.stage = stages[rank];
    push(header, options.headerHeight);
    if (options.collapsed.count(rank)) continue;
    auto lanes = lanesByRank[rank];
    std::sort(lanes.begin(), lanes.end(), [&](std::uint32_t a, std::uint32_t b) {
      return index.lanes()[a].laneId < index.lanes()[b].laneId;
    });
    for (std::uint32_t lane : lanes) {
      const std::size_t depths = std::max<std::size_t>(index.lanes()[lane].levels.size(), 1);
      for (std::uint32_t d = 0; d < depths; ++d) {
        push({TimelineRow::Kind::Level, rank, lane, d}, options.levelHeight);
      }
    }
    for (std::uint32_t c : countersByRank[rank]) {
      push({TimelineRow::Kind::Counter, rank, 0, 0, c}, options.counterHeight);
    }
  }
  return rows;
}

int rowAt(const std::vector<TimelineRow>& rows, int y) {
  auto it = std::upper_bound(rows.begin(), rows.end(), y,
                             [](int v, const TimelineRow& r) { return v < r.y; });
  if (it == rows.begin()) return -1;
  --it;
  return y < it->y + it->height ? static_cast<int>(it - rows.begin()) : -1;
}

}  // namespace parascope::profiler
