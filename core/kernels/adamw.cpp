#include "core/kernels/adamw.h"

#include <algorithm>
#include <cmath>

#include "core/kernels/element_math.h"
#include "core/kernels/precision.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {

template <typename T>
AdamWConstants<T> constants(const AdamWHyper& h, int step) {
  const T lr = h.lr;
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), step);
  return {T(h.beta1),
          T(h.beta2),
          T(1) - lr * static_cast<T>(h.weightDecay),
          T(h.eps),
          static_cast<T>(static_cast<double>(h.lr) / bc1),
          static_cast<T>(std::sqrt(1.0 - std::pow(static_cast<double>(h.beta2), step)))};
}

// Inlined into each level's function below and vectorised there for its target (cpu_level.h).
template <typename T>
[[gnu::always_inline]] inline void update(T* param, const T* grad, T* m, T* v, long N,
                                          const AdamWConstants<T>& k, T gradScale) {
  for (long i = 0; i < N; ++i) adamwElement(param[i], grad[i] * gradScale, m[i], v[i], k);
}

void updateBaseline(float* param, const float* grad, float* m, float* v, long N,
                    const AdamWConstants<float>& k, float gradScale) {
  update(param, grad, m, v, N, k, gradScale);
}
#if defined(__x86_64__)
PARASCOPE_TARGET_AVX2 void updateAvx2(float* param, const float* grad, float* m, float* v, long N,
                                      const AdamWConstants<float>& k, float gradScale) {
  update(param, grad, m, v, N, k, gradScale);
}
PARASCOPE_TARGET_AVX512 void updateAvx512(float* param, const float* grad, float* m, float* v,
                                          long N, const AdamWConstants<float>& k, float gradScale) {
  update(param, grad, m, v, N, k, gradScale);
}
#endif

void updateAt(CpuLevel level, float* param, const float* grad, float* m, float* v, long N,
              const AdamWConstants<float>& k, float gradScale) {
#if defined(__x86_64__)
  if (level == CpuLevel::Avx512) return updateAvx512(param, grad, m, v, N, k, gradScale);
  if (level == CpuLevel::Avx2) return updateAvx2(param, grad, m, v, N, k, gradScale);
#endif
  updateBaseline(param, grad, m, v, N, k, gradScale);
}

}  // namespace

AdamWConstants<float> adamwConstants(const AdamWHyper& h, int step) {
  return constants<float>(h, step);
}

void adamwUpdate(float* param, const float* grad, float* m, float* v, long N, const AdamWHyper& h,
                 int step, float gradScale, CpuLevel level) {
  updateAt(level, param, grad, m, v, N, constants<float>(h, step), gradScale);
}

template <>
void adamwUpdate<float>(float* param, const float* grad, float* m, float* v, long N,
                        const AdamWHyper& h, int step, float gradScale) {
  trace::Span span("adamw", trace::Category::Optimizer);
  span.bytes(arrayBytes<float>(7 * N));  // grad read; param, m and v read and written
  updateAt(cpuLevel(), param, grad, m, v, N, constants<float>(h, step), gradScale);
}

template <typename T>
void adamwUpdate(T* param, const T* grad, T* m, T* v, long N, const AdamWHyper& h, int step,
                 T gradScale) {
  trace::Span span("adamw", trace::Category::Optimizer);
  span.bytes(arrayBytes<T>(7 * N));
  update(param, grad, m, v, N, constants<T>(h, step), gradScale);
}

void adamwUpdateMixed(float* master, std::uint16_t* param, const std::uint16_t* grad, float* m,
                      float* v, long N, const AdamWHyper& h, int step, float gradScale,
                      DType type) {
  // 16-bit grad read and param written; the f32 master, m and v read and written.
  trace::Span span("adamw", trace::Category::Optimizer);
  span.bytes(28 * N);
  const AdamWConstants<float> k = constants<float>(h, step);
  constexpr long kChunk = 1024;  // gradients widened through the stack
  float g[kChunk];
  for (long at = 0; at < N; at += kChunk) {
    const long n = std::min(kChunk, N - at);
    widen(grad + at, g, n, type);
    updateAt(cpuLevel(), master + at, g, m + at, v + at, n, k, gradScale);
    narrow(master + at, param + at, n, type);
  }
}

template void adamwUpdate<double>(double*, const double*, double*, double*, long, const AdamWHyper&,
                                  int, double);

}  // namespace parascope::kernels
