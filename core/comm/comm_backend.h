// The interface every backend implements (threads/, mpi/, nccl/): start one validated
// operation and return its request, split into sub-groups. Communicator is the value type over
// it; callers never see a backend directly. Arguments arrive already validated.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/comm/comm_types.h"

namespace parascope {

// count is per rank: elements of broadcast/reduce/allReduce/send/recv, of each rank's
// contribution to gather/allGather, of each rank's share of scatter/reduceScatter, of each
// peer's block of allToAll. root is the peer for send/recv. In place means send == recv at the
// position the operation defines (see Communicator).
struct CommArgs {
  CommOp op = CommOp::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  DType dtype = DType::F32;
  ReduceOp reduce = ReduceOp::Sum;
  int root = -1;
};

// One issued operation. record is complete except endNs when start() returns; test and wait
// throw CommError when the operation failed, every time they are called after that.
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
  // Withdraws an operation still waiting for its match: once this returns nothing is copied
  // into or out of its buffers, so a caller unwinding from a failure may free them. A completed
  // operation stays as it was. The in-process backend recalls unmatched sends and receives; Open
  // MPI's are not recalled (a failing process ends the job), nor are collectives.
  virtual void cancel() {}

  CommRecord record;
  bool reported = false;  // the observer has seen it (set by Communicator)
};

class CommBackend {
 public:
  virtual ~CommBackend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view kind() const = 0;  // "threads", "mpi", "nccl"
  const std::string& name() const { return name_; }
  const CommOptions& options() const { return options_; }

  // blocking: the caller waits right away, so the backend may run the operation on the calling
  // thread when nothing earlier is pending.
  virtual std::shared_ptr<CommRequest> start(const CommArgs& args, bool blocking) = 0;
  // Collective over the group; members with equal color form a group ordered by (key, rank).
  virtual std::shared_ptr<CommBackend> split(int color, int key) = 0;

  CommObserver observer;

 protected:
  CommBackend(std::string name, CommOptions options)
      : name_(std::move(name)), options_(std::move(options)) {}

 private:
  std::string name_;
  CommOptions options_;
};

}  // namespace parascope
