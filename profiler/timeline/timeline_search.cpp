// Search; see timeline_search.h.
#include "profiler/timeline/timeline_search.h"

#include <algorithm>
#include <regex>

namespace parascope::profiler {

std::vector<SearchHit> searchSpans(const TimelineIndex& index, const std::string& pattern,
                                   bool regex) {
  std::vector<char> match(index.nameCount(), 0);
  if (regex) {
    const std::regex re(pattern);
    for (std::size_t i = 0; i < match.size(); ++i) {
      match[i] = std::regex_search(index.name(static_cast<std::uint32_t>(i << 4)), re);
    }
  } else {
    for (std::size_t i = 0; i < match.size(); ++i) {
      match[i] = index.name(static_cast<std::uint32_t>(i << 4)).find(pattern) != std::string::npos;
    }
  }
  std::vector<SearchHit> hits;
  if (pattern.empty()) return hits;
  for (std::uint32_t l = 0; l < index.lanes().size(); ++l) {
    const auto& levels = index.lanes()[l].levels;
    for (std::uint32_t d = 0; d < levels.size(); ++d) {
      for (std::uint32_t i = 0; i < levels[d].size(); ++i) {
        if (match[levels[d][i].nameCat >> 4]) hits.push_back({levels[d][i].startNs, {l, d, i}});
      }
    }
  }
  std::sort(hits.begin(), hits.end(), [](const SearchHit& a, const SearchHit& b) {
    if (a.startNs != b.startNs) return a.startNs < b.startNs;
    if (a.ref.lane != b.ref.lane) return a.ref.lane < b.ref.lane;
    return a.ref.depth < b.ref.depth;
  });
  return hits;
}

}  // namespace parascope::profiler
