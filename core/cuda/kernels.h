// The engine's kernels on an NVIDIA GPU: the same operations, shapes and argument order as the
// CPU kernels of core/kernels (see each one's header for the shapes), on device pointers. Every
// function launches on `stream` and returns without waiting; a launch failure throws CudaError.
//
// Which bits they give, against the CPU kernel with the same inputs:
// - element-wise kernels (GELU, residual, bias, the cross-entropy's backward, AdamW, the 16-bit
//   conversions) compute each element with the CPU's arithmetic (core/kernels/element_math.h):
//   the same bits;
// - sums over a column in row order (the bias's, layernorm's weight and bias gradients, the
//   embedding's gradients): each column is one thread adding the rows in the CPU's order: the
//   same bits;
// - sums along a row (layernorm's statistics and input gradient, the softmaxes' normalisers) are
//   tree reductions across a warp or a block: rounded differently, within a few ulp of the row;
// - attention's products and sums go in their own order (one thread's running sums): within a
//   few ulp of the CPU's row-block products;
// - the gradient's sum of squares adds blocks' partial sums in double in any order: within
//   1e-12 relative.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/comm/comm_types.h"
#include "core/kernels/element_math.h"
#include "core/kernels/flash_attention.h"
#include "core/tensor/dtype.h"

namespace parascope::cuda {

void geluForward(float* out, const float* inp, long n, cudaStream_t stream);
// dinp may be dout (replaced in place).
void geluBackward(float* dinp, const float* inp, const float* dout, long n, cudaStream_t stream);

// p[0 .. n) = value: the gpu suites' work that is still running when a collective is issued.
void fill(float* p, float value, long n, cudaStream_t stream);

// out = a + b (out may alias either); and out[r, :] += bias for each of `rows` rows of C.
void residualForward(float* out, const float* a, const float* b, long n, cudaStream_t stream);
void biasForward(float* out, const float* bias, long rows, long C, cudaStream_t stream);
// dbias (C) += the rows of dout (rows, C), in order.
void biasBackward(float* dbias, const float* dout, long rows, long C, cudaStream_t stream);

// Memory-efficient causal attention, fused (kernels::attentionForward's shapes and statistics):
// no scratch. Backward overwrites dqkv and takes each row's rowsum(P dP) as dOut . out, the
// forward's output. Head sizes up to kernels::kFlashMaxHeadSize; above it, CudaError.
void attentionForward(float* out, float* stats, const float* qkv, int B, int T, int C, int NH,
                      cudaStream_t stream);
void attentionBackward(float* dqkv, const float* dout, const float* qkv, const float* out,
                       const float* stats, int B, int T, int C, int NH, cudaStream_t stream);

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int N, int C, cudaStream_t stream);
// sum = a + b (may alias b), out = layernorm(sum).
void residualLayernormForward(float* sum, float* out, float* mean, float* rstd, const float* a,
                              const float* b, const float* weight, const float* bias, int N, int C,
                              cudaStream_t stream);
// dinp overwritten (plus dresidual where given; null dinp: the weight half alone), dweight and
// dbias accumulated.
void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int N, int C, const float* dresidual, cudaStream_t stream);

void embeddingForward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe,
                      int B, int T, int C, cudaStream_t stream);
// dwte and dwpe accumulated, each column's rows added in token order.
void embeddingBackward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                       int B, int T, int C, cudaStream_t stream);

// Tensor parallelism's vocabulary split (kernels::embeddingPartForward ... positionBackward): the
// gradients' columns one thread each, rows in order, as on the CPU.
void embeddingPartForward(float* out, const std::int32_t* tokens, const float* wtePart, int N,
                          int first, int part, int C, cudaStream_t stream);
void embeddingPartBackward(float* dwtePart, const float* dout, const std::int32_t* tokens, int N,
                           int first, int part, int C, cudaStream_t stream);
void positionForward(float* out, const float* wpe, int rows, int row0, int T, int C,
                     cudaStream_t stream);
void positionBackward(float* dwpe, const float* dout, int rows, int row0, int T, int C,
                      cudaStream_t stream);
// The vocabulary-split cross-entropy's passes (kernels::crossEntropyPartMax ... PartBackward),
// the row reductions a block per row.
void crossEntropyPartMax(float* maxima, const float* logits, int N, int V, cudaStream_t stream);
void crossEntropyPartExp(float* sums, float* probs, const float* logits, const float* maxima,
                         const std::int32_t* targets, int N, int V, int first, cudaStream_t stream);
void crossEntropyPartFinish(float* losses, float* probs, const float* sums, const float* maxima,
                            int N, int V, cudaStream_t stream);
void crossEntropyPartBackward(float* dlogits, const std::int32_t* targets, int N, int V, int first,
                              float weight, cudaStream_t stream);

// Softmax + cross-entropy over rows of V (probs may alias logits); its backward is
// crossEntropyPartBackward's over the whole vocabulary.
void crossEntropyForward(float* losses, float* probs, const float* logits,
                         const std::int32_t* targets, int N, int V, cudaStream_t stream);

// AdamW (core/kernels/adamw.h), the constants from kernels::adamwConstants on the host; grad is
// read times gradScale. The mixed form keeps the f32 master and stores param rounded to `type`.
void adamwUpdate(float* param, const float* grad, float* m, float* v, long n,
                 const kernels::AdamWConstants<float>& k, float gradScale, cudaStream_t stream);
void adamwUpdateMixed(float* master, std::uint16_t* param, const std::uint16_t* grad, float* m,
                      float* v, long n, const kernels::AdamWConstants<float>& k, float gradScale,
                      DType type, cudaStream_t stream);

// *sum (device memory, one double) += the sum of grad's squares, each in double; grad in `type`
// (F32, BF16 or F16).
void addSumOfSquares(double* sum, const void* grad, long n, DType type, cudaStream_t stream);

// 16-bit (BF16 or F16) to float and back, rounding to nearest even.
void widen(const std::uint16_t* in, float* out, long n, DType from, cudaStream_t stream);
void narrow(const float* in, std::uint16_t* out, long n, DType to, cudaStream_t stream);
// Every element replaced by the nearest value of `type`; acc = round(acc + add) in `type`
// (kernels::roundTo, kernels::accumulateRounded).
void roundTo(float* x, long n, DType type, cudaStream_t stream);
void accumulateRounded(std::uint16_t* acc, const float* add, long n, DType type,
                       cudaStream_t stream);
// acc += add with both in `type` (F32, or 16-bit added in f32 and rounded once:
// kernels::accumulate).
void accumulate(void* acc, const void* add, long n, DType type, cudaStream_t stream);

// In-process ranks sharing a GPU (core/comm/device_buffers.h): reduceBuffers' contract
// (core/comm/reduce_kernels.h) on device buffers, each element's sources combined in the order
// given, bf16 / fp16 in f32 and rounded once, integers with wrap-around; every destination gets
// the result and may alias a source. At most kMaxReduceBuffers sources and destinations.
inline constexpr int kMaxReduceBuffers = 8;
void reduceBuffers(void* const* dsts, int ndst, const void* const* srcs, int nsrc, long count,
                   DType type, ReduceOp op, int divisor, cudaStream_t stream);

}  // namespace parascope::cuda
