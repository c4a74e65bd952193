// Communicator: the value type every parallel strategy talks to, over one backend (in-process
// threads, Open MPI or NCCL). Ten operations, each blocking (returns the CommRecord) or
// asynchronous (returns a CommHandle). A default-constructed Communicator is a size-1 group, so
// single-rank code is the same code. One thread uses a given rank's Communicator at a time.
//
// Ordering: collectives on one communicator are matched across ranks by issue order and run in
// issue order on each rank; send/recv match per (source, destination) pair in issue order,
// independently of collectives. Details and in-place positions: docs/communication.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/comm/comm_backend.h"
#include "core/tensor/tensor.h"

namespace parascope {

// What the tracer needs to name a group's operations in world terms: the world rank of each
// group rank (empty: unknown, the group's own ranks are used), an id equal on every member,
// and the point-to-point operations issued so far per peer, which pair each send with its
// receive without communicating. Shared by the copies of one rank's Communicator.
struct CommTraceInfo {
  std::vector<int> worldRanks;
  std::int32_t groupId = -1;
  std::vector<std::uint64_t> sends, receives;
};

// The trace side of one issued operation; startTicks < 0 when tracing was off at issue.
struct CommTraceMark {
  std::shared_ptr<const CommTraceInfo> info;
  std::int64_t startTicks = -1;
  std::uint64_t correlation = 0;  // send/recv: equal on both ends
};

class CommHandle {
 public:
  CommHandle() = default;
  CommHandle(std::shared_ptr<CommRequest> request, std::shared_ptr<CommBackend> backend,
             CommTraceMark mark = {})
      : request_(std::move(request)), backend_(std::move(backend)), mark_(std::move(mark)) {}
  bool valid() const { return request_ != nullptr; }
  // True once complete (then the observer has run and, while tracing, the operation has been
  // recorded as a span from issue to completion); throws CommError if the operation failed.
  bool test();
  // Blocks until complete; throws CommError if it failed or a peer failed or timed out.
  const CommRecord& wait();
  // Withdraws the operation if it is still unmatched (CommRequest::cancel): for a rank leaving
  // on a failure with operations posted into buffers it is about to free.
  void cancel() {
    if (request_) request_->cancel();
  }

 private:
  void finish();
  std::shared_ptr<CommRequest> request_;
  std::shared_ptr<CommBackend> backend_;
  CommTraceMark mark_;
};

class Communicator {
 public:
  Communicator();  // a size-1 in-process group named "self"
  // A world: the backend's ranks are the world ranks (sub-groups come from split).
  explicit Communicator(std::shared_ptr<CommBackend> backend);

  int rank() const { return backend_->rank(); }
  int size() const { return backend_->size(); }
  const std::string& name() const { return backend_->name(); }
  std::string_view backendKind() const { return backend_->kind(); }
  const CommOptions& options() const { return backend_->options(); }
  // color >= 0; ranks with equal color form a group, ordered by (key, rank). Collective.
  Communicator split(int color, int key) const;
  void setObserver(CommObserver observer) { backend_->observer = std::move(observer); }

  // In place: broadcast always; reduce/allReduce send == recv; gather send == recv + rank*count
  // (at root); allGather send == recv + rank*count; scatter recv == send + rank*count (at root);
  // reduceScatter recv == send + rank*count; allToAll send == recv.
  CommHandle broadcastAsync(void* buf, std::size_t count, DType t, int root);
  CommHandle reduceAsync(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                         int root);
  CommHandle allReduceAsync(const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
  CommHandle gatherAsync(const void* send, void* recv, std::size_t count, DType t, int root);
  CommHandle allGatherAsync(const void* send, void* recv, std::size_t count, DType t);
  CommHandle scatterAsync(const void* send, void* recv, std::size_t count, DType t, int root);
  CommHandle reduceScatterAsync(const void* send, void* recv, std::size_t count, DType t,
                                ReduceOp op);
  CommHandle allToAllAsync(const void* send, void* recv, std::size_t count, DType t);
  CommHandle sendAsync(const void* buf, std::size_t count, DType t, int peer);
  CommHandle recvAsync(void* buf, std::size_t count, DType t, int peer);
  CommHandle startAsync(const CommArgs& args);  // any of the above, by value
  CommRecord run(const CommArgs& args);         // blocking form of startAsync

  CommRecord broadcast(void* buf, std::size_t count, DType t, int root);
  CommRecord reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                    int root);
  CommRecord allReduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
  CommRecord gather(const void* send, void* recv, std::size_t count, DType t, int root);
  CommRecord allGather(const void* send, void* recv, std::size_t count, DType t);
  CommRecord scatter(const void* send, void* recv, std::size_t count, DType t, int root);
  CommRecord reduceScatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
  CommRecord allToAll(const void* send, void* recv, std::size_t count, DType t);
  CommRecord send(const void* buf, std::size_t count, DType t, int peer);
  CommRecord recv(void* buf, std::size_t count, DType t, int peer);

  // Tensor forms (contiguous tensors; sizes checked against the group size).
  CommHandle allReduceAsync(const Tensor& t, ReduceOp op);  // in place
  CommHandle reduceScatterAsync(const Tensor& in, const Tensor& out, ReduceOp op);
  CommHandle allGatherAsync(const Tensor& in, const Tensor& out);
  CommHandle broadcastAsync(const Tensor& t, int root);

 private:
  CommHandle issue(const CommArgs& args, bool blocking);
  CommTraceMark traceMark(const CommArgs& args);
  std::shared_ptr<CommBackend> backend_;
  std::shared_ptr<CommTraceInfo> trace_;
};

}  // namespace parascope
