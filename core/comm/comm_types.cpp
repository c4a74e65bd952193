// Names, parsing and bandwidth conventions of the communication vocabulary; the per-operation
// facts are read from the traits table.
#include "core/comm/comm_types.h"

#include <numeric>

#include "core/comm/collective_traits.h"
#include "core/common/error.h"

namespace parascope {

std::string operationPrefix(std::string_view op, std::string_view group, int rank, int size) {
  std::string s = "[";
  s.append(op).append("] group '").append(group).append("' (rank ");
  s.append(std::to_string(rank)).append(" of ").append(std::to_string(size)).append(")");
  return s;
}

// Guarded: an MPI peer's mismatch signature carries the operation as a number.
std::string_view commOpName(CommOp op) {
  return static_cast<int>(op) < kCommOpCount ? commTraits(op).name : "?";
}

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

ReduceOp parseReduceOp(std::string_view name) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min})
    if (reduceOpName(op) == name) return op;
  throw UserError("unknown reduction '" + std::string(name) + "' (allowed: sum, avg, max, min)");
}

std::uint64_t CommRecord::totalSent() const {
  return std::accumulate(sentTo.begin(), sentTo.end(), std::uint64_t{0});
}
std::uint64_t CommRecord::totalReceived() const {
  return std::accumulate(receivedFrom.begin(), receivedFrom.end(), std::uint64_t{0});
}

double busBandwidthFactor(CommOp op, int size) {
  return commTraits(op).busFactor(size);
}

std::int64_t commNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace parascope
