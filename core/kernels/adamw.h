// AdamW (Loshchilov & Hutter): decoupled weight decay and bias-corrected moments, in the same
// order of operations as PyTorch 1.13's torch.optim.AdamW (single-tensor path). Shapes: param,
// grad, m, v all (N). step is 1-based.
#pragma once

namespace parascope::kernels {

struct AdamWHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weightDecay = 0.01f;
};

// grad is read as grad * gradScale (used by clipping and loss scaling without a separate pass).
template <typename T>
void adamwUpdate(T* param, const T* grad, T* m, T* v, long N, const AdamWHyper& h, int step,
                 T gradScale);

}  // namespace parascope::kernels
