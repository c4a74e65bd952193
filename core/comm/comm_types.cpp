// Names, parsing and bandwidth conventions of the communication vocabulary.
#include "core/comm/comm_types.h"

#include <numeric>

#include "core/common/error.h"

namespace parascope {

std::string operationPrefix(std::string_view op, std::string_view group, int rank, int size) {
  std::string s = "[";
  s.append(op).append("] group '").append(group).append("' (rank ");
  s.append(std::to_string(rank)).append(" of ").append(std::to_string(size)).append(")");
  return s;
}

std::string_view commOpName(CommOp op) {
  switch (op) {
    case CommOp::Broadcast: return "broadcast";
    case CommOp::Reduce: return "reduce";
    case CommOp::AllReduce: return "allReduce";
    case CommOp::Gather: return "gather";
    case CommOp::AllGather: return "allGather";
    case CommOp::Scatter: return "scatter";
    case CommOp::ReduceScatter: return "reduceScatter";
    case CommOp::AllToAll: return "allToAll";
    case CommOp::Send: return "send";
    case CommOp::Recv: return "recv";
  }
  return "?";
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
  const double n = size;
  switch (op) {
    case CommOp::AllReduce: return size > 1 ? 2.0 * (n - 1) / n : 0.0;
    case CommOp::Gather:
    case CommOp::AllGather:
    case CommOp::Scatter:
    case CommOp::ReduceScatter:
    case CommOp::AllToAll: return (n - 1) / n;
    case CommOp::Broadcast:
    case CommOp::Reduce:
    case CommOp::Send:
    case CommOp::Recv: return size > 1 ? 1.0 : 0.0;
  }
  return 0.0;
}

std::int64_t commNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace parascope
