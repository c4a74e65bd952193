#include "core/parallel/tensor_parallel.h"

#include <chrono>

#include "core/comm/adjoint.h"

namespace parascope {

namespace {

// Activations are (rows, C) whatever their shape: (B, T, C) as the pipeline passes them counts
// B x T rows.
std::int64_t width(const Tensor& t) {
  return t.dim(t.rank() - 1);
}
std::int64_t rowsOf(const Tensor& t) {
  return t.numel() / width(t);
}
Tensor rowsLike(const Tensor& t, std::int64_t rows, Allocator& a) {
  return Tensor::empty({rows, width(t)}, DType::F32, MemoryCategory::Activation, a);
}

}  // namespace

template <typename F>
void TensorParallelRegion::timed(F&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  commSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double TensorParallelRegion::takeCommSeconds() {
  const double s = commSeconds_;
  commSeconds_ = 0;
  return s;
}

void TensorParallelRegion::allReduce(void* buf, std::size_t count, DType t, ReduceOp op) {
  if (size() == 1) return;  // one rank's values are the group's: no call to make or to time
  timed([&] { group_.allReduce(buf, buf, count, t, op); });
}

Tensor TensorParallelRegion::gathered(const Tensor& local) {
  Tensor full = rowsLike(local, rowsOf(local) * size(), allocator_);
  timed([&] {
    group_.allGather(local.data<float>(), full.data<float>(), local.numel(), DType::F32);
  });
  return full;
}

// The adjoint of gathered(): this rank's rows of the sum over the group.
Tensor TensorParallelRegion::scattered(const Tensor& full) {
  Tensor local = rowsLike(full, rowsOf(full) / size(), allocator_);
  const CommArgs gather{CommOp::AllGather,
                        local.data<float>(),
                        full.data<float>(),
                        static_cast<std::size_t>(local.numel()),
                        DType::F32,
                        ReduceOp::Sum,
                        0};
  timed([&] { adjointAsync(group_, gather, full.data<float>(), local.data<float>()).wait(); });
  return local;
}

Tensor TensorParallelRegion::enter(const Tensor& x) {
  if (size() == 1 || !sequenceParallel_) return x;
  return gathered(x);
}

Tensor TensorParallelRegion::enterBackward(const Tensor& d) {
  if (size() == 1) return d;
  if (sequenceParallel_) return scattered(d);
  // The adjoint of leave()'s all-reduce, its conjugate.
  const CommArgs sum{CommOp::AllReduce,
                     d.data<float>(),
                     d.data<float>(),
                     static_cast<std::size_t>(d.numel()),
                     DType::F32,
                     ReduceOp::Sum,
                     0};
  timed([&] { adjointAsync(group_, sum, d.data<float>(), d.data<float>()).wait(); });
  return d;
}

Tensor TensorParallelRegion::leave(const Tensor& partial) {
  if (size() == 1) return partial;
  if (sequenceParallel_) {
    Tensor local = rowsLike(partial, rowsOf(partial) / size(), allocator_);
    timed([&] {
      group_.reduceScatter(partial.data<float>(), local.data<float>(), local.numel(), DType::F32,
                           ReduceOp::Sum);
    });
    return local;
  }
  timed([&] {
    group_.allReduce(partial.data<float>(), partial.data<float>(), partial.numel(), DType::F32,
                     ReduceOp::Sum);
  });
  return partial;
}

Tensor TensorParallelRegion::leaveBackward(const Tensor& d) {
  if (size() == 1 || !sequenceParallel_) return d;
  // The adjoint of leave()'s reduce-scatter: an all-gather.
  Tensor full = rowsLike(d, rowsOf(d) * size(), allocator_);
  const CommArgs scatter{CommOp::ReduceScatter,
                         full.data<float>(),
                         d.data<float>(),
                         static_cast<std::size_t>(d.numel()),
                         DType::F32,
                         ReduceOp::Sum,
                         0};
  timed([&] { adjointAsync(group_, scatter, d.data<float>(), full.data<float>()).wait(); });
  return full;
}

void TensorParallelRegion::sumSharedGradient(float* grad, std::int64_t count) {
  if (size() == 1 || !sequenceParallel_) return;
  allReduce(grad, static_cast<std::size_t>(count), DType::F32, ReduceOp::Sum);
}

}  // namespace parascope
