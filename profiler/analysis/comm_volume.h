// Who sends how many bytes to whom. Built from the communication layer's own accounting as
// recorded: every Communication event with a peer and without flag::kReceive adds its bytes
// to matrix[rank][peer] (a collective records one Instant per peer it sends to); per-operation
// totals count Communication spans by name. The matrix holds only the pairs that communicated,
// so a trace naming many peers costs memory in its events, not in the square of its ranks;
// sums saturate at INT64_MAX (byte counts come from files).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct CommMatrix {
  std::vector<std::int32_t> ranks;  // every rank that sent or received, ascending
  // (sender, receiver) -> bytes, only pairs with bytes > 0, ordered by sender then receiver.
  std::map<std::pair<std::int32_t, std::int32_t>, std::int64_t> cells;
  std::int64_t at(std::int32_t src, std::int32_t dst) const;  // 0 for pairs that never spoke
  std::int64_t total() const;
};

struct OpTotal {
  std::string name;
  std::int64_t count = 0;
  std::int64_t bytes = 0;   // sent (receive-flagged spans excluded)
  std::int64_t timeNs = 0;  // summed span durations over all ranks
};

struct CommVolume {
  CommMatrix matrix;
  std::vector<OpTotal> ops;  // ordered by name
};

CommVolume computeCommVolume(const TraceData& trace);

}  // namespace parascope::profiler
