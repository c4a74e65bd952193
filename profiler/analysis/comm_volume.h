// Who sends how many bytes to whom. Built from the communication layer's own accounting as
// recorded: every Communication event with a peer and without flag::kReceive adds its bytes
// to matrix[rank][peer] (a collective records one Instant per peer it sends to); per-operation
// totals count Communication spans by name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct CommMatrix {
  std::vector<std::int32_t> ranks;  // row/column i is rank ranks[i]
  std::vector<std::int64_t> bytes;  // row-major, ranks.size()^2, sender x receiver
  std::int64_t at(std::int32_t src, std::int32_t dst) const;
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
