// AdamW (Loshchilov & Hutter): decoupled weight decay and bias-corrected moments, in the same
// order of operations as PyTorch 1.13's torch.optim.AdamW (single-tensor path). Shapes: param,
// grad, m, v all (N). step is 1-based. The mixed-precision form updates an f32 master copy from
// 16-bit gradients with the same arithmetic and stores the master rounded to the 16-bit type.
#pragma once

#include <cstdint>

#include "core/kernels/cpu_level.h"
#include "core/kernels/element_math.h"
#include "core/tensor/dtype.h"

namespace parascope::kernels {

struct AdamWHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weightDecay = 0.01f;
};

// The constants of step `step` (1-based) that every element's update uses, the CUDA kernel's too.
AdamWConstants<float> adamwConstants(const AdamWHyper& h, int step);

// grad is read as grad * gradScale (used by clipping and loss scaling without a separate pass).
// float runs at the CPU's level (cpu_level.h); double, for the gradient checks, at the baseline.
template <typename T>
void adamwUpdate(T* param, const T* grad, T* m, T* v, long N, const AdamWHyper& h, int step,
                 T gradScale);
template <>
void adamwUpdate<float>(float* param, const float* grad, float* m, float* v, long N,
                        const AdamWHyper& h, int step, float gradScale);
// The same at a given level (one this CPU runs), untraced: the tests hold each level to the
// baseline's bits.
void adamwUpdate(float* param, const float* grad, float* m, float* v, long N, const AdamWHyper& h,
                 int step, float gradScale, CpuLevel level);

// Mixed precision: master, m, v f32; grad and param in `type` (BF16 or F16). grad is read as
// float(grad) * gradScale (clipping / loss scale); afterwards param = master rounded to `type`.
void adamwUpdateMixed(float* master, std::uint16_t* param, const std::uint16_t* grad, float* m,
                      float* v, long N, const AdamWHyper& h, int step, float gradScale, DType type);

}  // namespace parascope::kernels
