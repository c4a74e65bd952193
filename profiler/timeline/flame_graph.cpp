// The flame graph of a selection; see flame_graph.h. Level by level: each span in the range
// finds its parent among the previous level's spans in the range (the last one starting at or
// before it, if it also ends at or after it), whose node it then merges into by name.
#include "profiler/timeline/flame_graph.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/common/checked_math.h"

namespace parascope::profiler {

FlameGraph flameGraph(const TimelineIndex& index, const std::vector<std::uint32_t>& lanes,
                      std::int64_t fromNs, std::int64_t toNs) {
  FlameGraph g;
  std::map<std::pair<int, std::uint32_t>, int> byPath;  // (parent node, name id) -> node
  auto nodeFor = [&](int parent, std::uint32_t nameCat) {
    const auto key = std::make_pair(parent, nameCat >> 4);
    auto [it, added] = byPath.try_emplace(key, static_cast<int>(g.nodes.size()));
    if (added) {
      FlameNode n;
      n.name = index.name(nameCat);
      n.parent = parent;
      n.depth = parent < 0 ? 0 : g.nodes[static_cast<std::size_t>(parent)].depth + 1;
      g.nodes.push_back(std::move(n));
    }
    return it->second;
  };
  for (std::uint32_t laneNo : lanes) {
    const Lane& lane = index.lanes()[laneNo];
    // The previous level's spans in the range: their first index and each one's node.
    std::size_t aboveFirst = 0;
    std::vector<int> aboveNodes;
    for (std::size_t d = 0; d < lane.levels.size(); ++d) {
      const std::vector<SpanRec>& level = lane.levels[d];
      const auto first =
          std::lower_bound(level.begin(), level.end(), fromNs,
                           [](const SpanRec& s, std::int64_t t) { return s.endNs < t; });
      std::vector<int> nodes;
      const std::size_t firstIndex = static_cast<std::size_t>(first - level.begin());
      for (auto it = first; it != level.end() && it->startNs <= toNs; ++it) {
        int parent = -1;
        if (d > 0 && !aboveNodes.empty()) {
          const std::vector<SpanRec>& up = lane.levels[d - 1];
          const auto upFirst = up.begin() + static_cast<std::ptrdiff_t>(aboveFirst);
          const auto upEnd = upFirst + static_cast<std::ptrdiff_t>(aboveNodes.size());
          auto p = std::upper_bound(upFirst, upEnd, it->startNs,
                                    [](std::int64_t t, const SpanRec& r) { return t < r.startNs; });
          if (p != upFirst) {
            --p;
            if (p->endNs >= it->endNs) parent = aboveNodes[static_cast<std::size_t>(p - upFirst)];
          }
        }
        const int node = nodeFor(parent, it->nameCat);
        FlameNode& n = g.nodes[static_cast<std::size_t>(node)];
        n.totalNs =
            saturatingAdd(n.totalNs, std::min(it->endNs, toNs) - std::max(it->startNs, fromNs));
        ++n.count;
        nodes.push_back(node);
      }
      aboveFirst = firstIndex;
      aboveNodes = std::move(nodes);
    }
  }
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    FlameNode& n = g.nodes[i];
    n.selfNs = n.totalNs;
    g.depth = std::max(g.depth, n.depth + 1);
    if (n.parent < 0) {
      g.roots.push_back(static_cast<int>(i));
      g.totalNs = saturatingAdd(g.totalNs, n.totalNs);
    } else {
      g.nodes[static_cast<std::size_t>(n.parent)].children.push_back(static_cast<int>(i));
    }
  }
  for (FlameNode& n : g.nodes) {
    for (int c : n.children) n.selfNs -= g.nodes[static_cast<std::size_t>(c)].totalNs;
  }
  const auto heavier = [&](int a, int b) {
    const FlameNode& x = g.nodes[static_cast<std::size_t>(a)];
    const FlameNode& y = g.nodes[static_cast<std::size_t>(b)];
    return x.totalNs != y.totalNs ? x.totalNs > y.totalNs : x.name < y.name;
  };
  std::sort(g.roots.begin(), g.roots.end(), heavier);
  for (FlameNode& n : g.nodes) std::sort(n.children.begin(), n.children.end(), heavier);
  return g;
}

}  // namespace parascope::profiler
