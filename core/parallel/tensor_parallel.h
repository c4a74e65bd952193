// Megatron's conjugate operators at the borders of a tensor-parallel region, over the tensor
// group of the mesh. Entering (before a column-parallel layer) and leaving (after a row-parallel
// one), each with its backward:
//   without sequence parallelism   enter: identity / all-reduce   leave: all-reduce / identity
//   with sequence parallelism      enter: all-gather / reduce-scatter
//                                  leave: reduce-scatter / all-gather
// Every backward is issued as the adjoint (core/comm/adjoint.h) of the forward operation it
// mirrors, so it is exactly the transpose. Sequence parallelism shards the token rows (B x T
// flattened, rank r holding rows [r N / t, (r + 1) N / t)), which for one sequence per batch is
// the sequence itself. Over a size-1 group (a default Communicator) every operator is the
// identity: the single-rank model is the same code.
#pragma once

#include <utility>

#include "core/comm/communicator.h"
#include "core/tensor/tensor.h"

namespace parascope {

class TensorParallelRegion {
 public:
  // `group` is a handle (copies share the backend): the region keeps its own.
  TensorParallelRegion(Communicator group, bool sequenceParallel, Allocator& allocator)
      : group_(std::move(group)), sequenceParallel_(sequenceParallel), allocator_(allocator) {}

  Communicator& group() { return group_; }
  int size() const { return group_.size(); }
  int rank() const { return group_.rank(); }
  bool sequenceParallel() const { return sequenceParallel_; }
  // Token rows this rank holds outside the region, of `rows` in the micro-batch.
  int localRows(int rows) const { return sequenceParallel_ ? rows / size() : rows; }

  // x: (localRows, C) -> (rows, C) replicated on the group.
  Tensor enter(const Tensor& x);
  // d: (rows, C) this rank's partial gradient -> (localRows, C) summed over the group.
  Tensor enterBackward(const Tensor& d);
  // partial: (rows, C) partial sums -> (localRows, C) summed over the group.
  Tensor leave(const Tensor& partial);
  // d: (localRows, C) -> (rows, C) replicated.
  Tensor leaveBackward(const Tensor& d);

  // Gradients of parameters held whole on every rank but fed only by this rank's token rows
  // (layernorms and biases outside the region under sequence parallelism): summed over the
  // group in place. Nothing to do without sequence parallelism.
  void sumSharedGradient(float* grad, std::int64_t count);
  // All-reduce over the group of per-row quantities (the vocabulary-parallel cross-entropy).
  void allReduce(void* buf, std::size_t count, DType t, ReduceOp op);

  // Seconds spent in this region's communication since the last call. It blocks the layer that
  // issues it, so all of it is exposed.
  double takeCommSeconds();

 private:
  Tensor gathered(const Tensor& local);
  Tensor scattered(const Tensor& full);

  // Runs one communication call, adding its wall time to commSeconds_.
  template <typename F>
  void timed(F&& call);

  Communicator group_;
  bool sequenceParallel_;
  Allocator& allocator_;
  double commSeconds_ = 0;
};

}  // namespace parascope
