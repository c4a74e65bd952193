// The flame graph (aggregated call tree) of a timeline selection: the spans of the selected
// lanes that overlap [fromNs, toNs], merged by their path of names from the outermost span in,
// over every rank and lane selected, as Perfetto's and speedscope's "left heavy" views merge
// them. A span is the child of the span one level up that encloses it; one that no span
// encloses (or that only overlaps the one above) starts a path of its own. Times are clipped to
// the range, so a node's total is what it took inside the selection. Plain C++, no Qt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/timeline/timeline_index.h"

namespace parascope::profiler {

struct FlameNode {
  std::string name;
  std::int64_t totalNs = 0;  // inside the range, summed over the spans merged here
  std::int64_t selfNs = 0;   // totalNs less the children's
  std::int64_t count = 0;    // spans merged here
  int parent = -1;           // index into FlameGraph::nodes; -1 for a root
  int depth = 0;
  std::vector<int> children;  // by totalNs, largest first, then by name
};

struct FlameGraph {
  std::vector<FlameNode> nodes;
  std::vector<int> roots;    // ordered as children are
  std::int64_t totalNs = 0;  // the roots' totals summed
  int depth = 0;             // levels (the deepest node's depth + 1); 0 when empty
};

FlameGraph flameGraph(const TimelineIndex& index, const std::vector<std::uint32_t>& lanes,
                      std::int64_t fromNs, std::int64_t toNs);

}  // namespace parascope::profiler
