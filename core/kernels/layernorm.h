// LayerNorm over the last dimension (eps 1e-5, as PyTorch's default).
// Shapes: inp/out (N, C), weight/bias (C), mean/rstd (N) saved for the backward pass.
// float runs at the CPU's level (cpu_level.h), each row's sums by lanes (lanes.h), so every level
// computes the same bits; double, for the gradient checks, at the baseline.
#pragma once

#include "core/kernels/cpu_level.h"

namespace parascope::kernels {

template <typename T>
void layernormForward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int N,
                      int C);

// The residual connection and the layernorm after it in one pass over the rows:
// sum = a + b (kept, the next residual's input), out = layernorm(sum). Each row of the sum is
// normalised while it is still in cache, so the sum is not read back from memory; the bits are
// residualForward's and layernormForward's. sum may alias a or b.
template <typename T>
void residualLayernormForward(T* sum, T* out, T* mean, T* rstd, const T* a, const T* b,
                              const T* weight, const T* bias, int N, int C);

// dinp is overwritten; dweight and dbias are accumulated (+=). A null dinp computes the weight
// and bias gradients alone, the same to the bit. A residual connection's gradient, when given,
// is added to dinp in the same pass (dinp = layernorm's input gradient + dresidual, the bits of
// a separate residual add); it must not overlap dinp.
template <typename T>
void layernormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                       const T* mean, const T* rstd, int N, int C, const T* dresidual = nullptr);

// The same at a given level (one this CPU runs), untraced: the tests hold each level to the
// baseline's bits.
void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int N, int C, CpuLevel level);
void residualLayernormForward(float* sum, float* out, float* mean, float* rstd, const float* a,
                              const float* b, const float* weight, const float* bias, int N, int C,
                              CpuLevel level);
void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int N, int C, const float* dresidual, CpuLevel level);

}  // namespace parascope::kernels
