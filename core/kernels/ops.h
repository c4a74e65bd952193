// The kernels a model's layers call, for the device their tensors are on: one interface, so that
// a layer's order of operations is written once for the CPU and the GPU. Each function is the
// kernel of the same name in this folder (see its header for shapes and which arguments are
// accumulated into); pointers are the device's memory. The CPU's are the kernels themselves;
// a CUDA device's (core/cuda/cuda_ops.h) launch on the rank's compute stream.
#pragma once

#include <cstdint>
#include <memory>

#include "core/kernels/adamw.h"
#include "core/kernels/matmul.h"
#include "core/tensor/allocator.h"

namespace parascope::kernels {

class KernelOps {
 public:
  virtual ~KernelOps() = default;
  virtual Device device() const = 0;

  virtual void embeddingForward(float* out, const std::int32_t* tokens, const float* wte,
                                const float* wpe, int B, int T, int C) const = 0;
  virtual void embeddingBackward(float* dwte, float* dwpe, const float* dout,
                                 const std::int32_t* tokens, int B, int T, int C) const = 0;
  virtual void layernormForward(float* out, float* mean, float* rstd, const float* inp,
                                const float* weight, const float* bias, int N, int C) const = 0;
  virtual void residualLayernormForward(float* sum, float* out, float* mean, float* rstd,
                                        const float* a, const float* b, const float* weight,
                                        const float* bias, int N, int C) const = 0;
  virtual void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                                 const float* inp, const float* weight, const float* mean,
                                 const float* rstd, int N, int C, const float* dresidual) const = 0;
  virtual void matmulForward(float* out, const float* inp, const float* weight, const float* bias,
                             int N, int C, int OC) const = 0;
  virtual void matmulBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                              const float* inp, const float* weight, int N, int C, int OC,
                              WeightGradient write) const = 0;
  // Memory-efficient causal attention (attention.h): forward records each query row's statistics
  // (B, NH, T, 2) for backward instead of the probabilities. Scratch is what each pass takes
  // (attentionScratch, in floats; none where 0, and the pointer may then be null). Backward may
  // read the forward's output `out` (a GPU's does, for each row's rowsum(P dP) = dOut . out).
  virtual long attentionScratch(int B, int T, int C, int NH, bool backward) const = 0;
  virtual void attentionForward(float* out, float* stats, float* scratch, const float* qkv, int B,
                                int T, int C, int NH) const = 0;
  virtual void attentionBackward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                                 const float* out, const float* stats, int B, int T, int C,
                                 int NH) const = 0;
  virtual void geluForward(float* out, const float* inp, long N) const = 0;
  virtual void geluBackward(float* dinp, const float* inp, const float* dout, long N) const = 0;
  virtual void residualForward(float* out, const float* a, const float* b, long N) const = 0;
  virtual void biasForward(float* out, const float* bias, long rows, long C) const = 0;
  virtual void biasBackward(float* dbias, const float* dout, long rows, long C) const = 0;
  virtual void crossEntropyForward(float* losses, float* probs, const float* logits,
                                   const std::int32_t* targets, int N, int V) const = 0;
  // acc[0 .. n) += add, both in `type` (precision.h's accumulate: a gradient summed elsewhere
  // added to the stored one).
  virtual void accumulate(void* acc, const void* add, long n, DType type) const = 0;
  // Tensor parallelism's vocabulary-split embedding and cross-entropy (embedding.h,
  // cross_entropy.h).
  virtual void embeddingPartForward(float* out, const std::int32_t* tokens, const float* wtePart,
                                    int N, int first, int part, int C) const = 0;
  virtual void embeddingPartBackward(float* dwtePart, const float* dout, const std::int32_t* tokens,
                                     int N, int first, int part, int C) const = 0;
  virtual void positionForward(float* out, const float* wpe, int rows, int row0, int T,
                               int C) const = 0;
  virtual void positionBackward(float* dwpe, const float* dout, int rows, int row0, int T,
                                int C) const = 0;
  virtual void crossEntropyPartMax(float* maxima, const float* logits, int N, int V) const = 0;
  virtual void crossEntropyPartExp(float* sums, float* probs, const float* logits,
                                   const float* maxima, const std::int32_t* targets, int N, int V,
                                   int first) const = 0;
  virtual void crossEntropyPartFinish(float* losses, float* probs, const float* sums,
                                      const float* maxima, int N, int V) const = 0;
  virtual void crossEntropyPartBackward(float* dlogits, const std::int32_t* targets, int N, int V,
                                        int first, float weight) const = 0;
  // Mixed precision's conversions (precision.h): a 16-bit (`type`: BF16 or F16) stored value
  // widened into an f32 working copy, or an f32 one narrowed to it; f32 values rounded in place
  // to `type`'s; an f32 gradient added into a 16-bit one, rounded once.
  virtual void widen(const std::uint16_t* in, float* out, long n, DType type) const = 0;
  virtual void narrow(const float* in, std::uint16_t* out, long n, DType type) const = 0;
  virtual void roundTo(float* x, long n, DType type) const = 0;
  virtual void accumulateRounded(std::uint16_t* acc, const float* add, long n,
                                 DType type) const = 0;
  // The optimizer's: AdamW on f32 parameters (step 1-based, grad read times gradScale); the same
  // on an f32 master with the parameter and its gradient stored in `type`; and the sum of a
  // gradient's squares (in double; stored in `type`, F32 or 16-bit) for its norm, returned to
  // the host.
  virtual void adamwUpdate(float* param, const float* grad, float* m, float* v, long n,
                           const AdamWHyper& h, int step, float gradScale) const = 0;
  virtual void adamwUpdateMixed(float* master, std::uint16_t* param, const std::uint16_t* grad,
                                float* m, float* v, long n, const AdamWHyper& h, int step,
                                float gradScale, DType type) const = 0;
  virtual double sumOfSquares(const void* grad, long n, DType type) const = 0;
  // Returns once everything launched so far has run (the CPU's return after running).
  virtual void synchronize() const = 0;
  // While the returned guard lives, the collectives the calling thread issues wait for the work
  // these kernels have launched, rather than for all of the device's (a GPU's compute stream,
  // core/cuda/stream.h). Null on the CPU, where a kernel has run when it returns.
  virtual std::shared_ptr<void> enter() const = 0;
};

// The CPU's kernels, shared by every CPU model.
const KernelOps& cpuOps();

}  // namespace parascope::kernels
