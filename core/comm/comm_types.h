// Vocabulary of the communication layer: the ten operations, the reductions, the per-operation
// record of bytes moved per peer (what the profiler's rank x rank matrix is built from), the
// options every backend honours and the error a failed or mismatched operation raises.
// No backend code here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor/dtype.h"

namespace parascope {

enum class CommOp : std::uint8_t {
  Broadcast,
  Reduce,
  AllReduce,
  Gather,
  AllGather,
  Scatter,
  ReduceScatter,
  AllToAll,
  Send,
  Recv,
};
inline constexpr int kCommOpCount = 10;
std::string_view commOpName(CommOp op);  // "allReduce" (collective_traits.h has every fact)

// How every error of an operation starts: "[allReduce] group 'world' (rank 0 of 4)".
std::string operationPrefix(std::string_view op, std::string_view group, int rank, int size);

// Average divides the sum by the group size (floats: in f32; integers: truncating division).
enum class ReduceOp : std::uint8_t { Sum, Avg, Max, Min };
std::string_view reduceOpName(ReduceOp op);
ReduceOp parseReduceOp(std::string_view name);  // sum/avg/max/min; UserError otherwise

// One completed operation as seen by one rank. sentTo[p] / receivedFrom[p] are the bytes this
// rank's algorithm moved to / from group rank p (0 at p == rank): across a group,
// sentTo of rank a at b equals receivedFrom of rank b at a.
struct CommRecord {
  CommOp op = CommOp::AllReduce;
  std::string group;      // "world", "world/2" for color 2 of a split, ...
  std::string backend;    // "threads", "mpi", "nccl"
  std::string algorithm;  // e.g. "direct", "rs-ag" (see docs/communication.md)
  int rank = 0;           // in the group
  int size = 1;
  int root = -1;  // root of rooted collectives, peer of send/recv, else -1
  DType dtype = DType::F32;
  std::size_t count = 0;  // elements as passed by the caller
  std::size_t bytes = 0;  // message size in the nccl-tests convention (see busBandwidthFactor)
  std::vector<std::uint64_t> sentTo;
  std::vector<std::uint64_t> receivedFrom;
  std::int64_t startNs = 0;  // steady clock: issue and completion as seen by this rank
  std::int64_t endNs = 0;

  std::uint64_t totalSent() const;
  std::uint64_t totalReceived() const;
};

// Called once per completed operation, on the thread that observed completion (the caller of
// wait/test or of a blocking operation). Meant for a tracer; keep it cheap.
using CommObserver = std::function<void(const CommRecord&)>;

class DeviceBuffers;

struct CommOptions {
  // An operation that waits longer than this for a peer fails naming the missing ranks.
  std::chrono::milliseconds timeout{60000};
  // MPI: exchange a signature of every collective first so that mismatched counts, types,
  // roots or operations fail with an error instead of corrupting memory (the in-process
  // backend always checks). Also lets a timeout name the ranks that did not arrive.
  bool checkMismatch = false;
  // In-process ranks sharing a GPU: how their device buffers are copied and reduced
  // (device_buffers.h); null when every buffer is host memory.
  std::shared_ptr<const DeviceBuffers> deviceBuffers;
};

// A communication failure (peer failed, exited, timed out, or disagreed on the arguments).
// Argument errors a caller can fix locally are UserError instead.
class CommError : public std::runtime_error {
 public:
  explicit CommError(const std::string& message) : std::runtime_error(message) {}
};

// nccl-tests bus bandwidth factor: busbw = algbw * factor, with algbw = bytes / time.
double busBandwidthFactor(CommOp op, int size);

std::int64_t commNowNs();

}  // namespace parascope
