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
#include <memory>

#include "core/comm/comm_backend.h"
#include "core/tensor/tensor.h"

namespace parascope {

class CommHandle {
 public:
  CommHandle() = default;
  CommHandle(std::shared_ptr<CommRequest> request, std::shared_ptr<CommBackend> backend)
      : request_(std::move(request)), backend_(std::move(backend)) {}
  bool valid() const { return request_ != nullptr; }
  // True once complete (then the observer has run); throws CommError if the operation failed.
  bool test();
  // Blocks until complete; throws CommError if it failed or a peer failed or timed out.
  const CommRecord& wait();

 private:
  void finish();
  std::shared_ptr<CommRequest> request_;
  std::shared_ptr<CommBackend> backend_;
};

class Communicator {
 public:
  Communicator();  // a size-1 in-process group named "self"
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
  std::shared_ptr<CommBackend> backend_;
};

}  // namespace parascope
