// GELU, tanh approximation (PyTorch's approximate='tanh'):
// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Shapes: inp/out (N).
#pragma once

#include "core/kernels/cpu_level.h"

namespace parascope::kernels {

// float runs at the CPU's level (cpu_level.h); double, for the gradient checks, at the baseline.
template <typename T>
void geluForward(T* out, const T* inp, long N);
template <>
void geluForward<float>(float* out, const float* inp, long N);

// dinp is overwritten; it may be dout itself (in place), not any other overlap of the two.
template <typename T>
void geluBackward(T* dinp, const T* inp, const T* dout, long N);
template <>
void geluBackward<float>(float* dinp, const float* inp, const float* dout, long N);

// The same at a given level (one this CPU runs), untraced: the tests hold each level to the
// baseline's bits.
void geluForward(float* out, const float* inp, long N, CpuLevel level);
void geluBackward(float* dinp, const float* inp, const float* dout, long N, CpuLevel level);

}  // namespace parascope::kernels
