#include "core/kernels/adamw.h"

#include <cmath>
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
void adamwUpdate(T* param, const T* grad, T* m, T* v, long N, const AdamWHyper& h, int step,
                 T gradScale) {
  const trace::Span span("adamw", trace::Category::Optimizer);
  const T lr = h.lr;
  const T b1 = h.beta1;
  const T b2 = h.beta2;
  // Bias corrections in double, as Python computes them before they reach the kernel.
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), step);
  const auto biasCorrection2Sqrt =
      static_cast<T>(std::sqrt(1.0 - std::pow(static_cast<double>(h.beta2), step)));
  const auto stepSize = static_cast<T>(static_cast<double>(h.lr) / bc1);
  const T decay = T(1) - lr * static_cast<T>(h.weightDecay);
  const T eps = h.eps;
  for (long i = 0; i < N; ++i) {
    const T g = grad[i] * gradScale;
    param[i] *= decay;
    m[i] = m[i] * b1 + (T(1) - b1) * g;
    v[i] = v[i] * b2 + (T(1) - b2) * g * g;
    const T denom = std::sqrt(v[i]) / biasCorrection2Sqrt + eps;
    param[i] -= stepSize * (m[i] / denom);
  }
}

template void adamwUpdate<float>(float*, const float*, float*, float*, long, const AdamWHyper&, int,
                                 float);
template void adamwUpdate<double>(double*, const double*, double*, double*, long, const AdamWHyper&,
                                  int, double);

}  // namespace parascope::kernels
