// Global gradient-norm clipping as torch.nn.utils.clip_grad_norm_: the L2 norm over all
// gradients, and the factor min(1, maxNorm / (norm + 1e-6)) to scale them by.
#pragma once

#include <span>

#include "core/kernels/cpu_level.h"

namespace parascope::kernels {

// Sum of squares of one gradient buffer, accumulated in double so the result does not depend
// on how parameters are split across buffers (or, later, ranks). float runs at the CPU's level
// (cpu_level.h); double, for the gradient checks, at the baseline.
template <typename T>
double sumOfSquares(const T* grad, long N);
// The same at a given level (one this CPU runs), untraced: the tests hold each level to the
// baseline's bits.
double sumOfSquares(const float* grad, long N, CpuLevel level);

// Clip factor for a global norm; 1 when no clipping is needed or maxNorm <= 0 (disabled).
double clipFactor(double norm, double maxNorm);

}  // namespace parascope::kernels
