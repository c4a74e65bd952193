#include "core/kernels/gelu.h"

#include "core/kernels/math.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {
template <typename T>
constexpr T kScale = T(0.7978845608028654);  // sqrt(2 / pi)
}

template <typename T>
void geluForward(T* out, const T* inp, long N) {
  const trace::Span span("gelu_forward", trace::Category::Compute);
  for (long i = 0; i < N; ++i) {
    const T x = inp[i];
    const T u = kScale<T> * (x + T(0.044715) * x * x * x);
    out[i] = T(0.5) * x * (T(1) + fastTanh(u));
  }
}

template <typename T>
void geluBackward(T* dinp, const T* inp, const T* dout, long N) {
  const trace::Span span("gelu_backward", trace::Category::Compute);
  // Callers pass dinp == dout (the gradient replaced in place): each element is read before it
  // is written, so the loop vectorises, which the compiler's overlap check would refuse.
#pragma omp simd
  for (long i = 0; i < N; ++i) {
    const T x = inp[i];
    const T u = kScale<T> * (x + T(0.044715) * x * x * x);
    const T th = fastTanh(u);
    const T sech2 = T(1) - th * th;
    const T local =
        T(0.5) * (T(1) + th) + T(0.5) * x * sech2 * kScale<T> * (T(1) + T(3) * T(0.044715) * x * x);
    dinp[i] = local * dout[i];
  }
}

template void geluForward<float>(float*, const float*, long);
template void geluForward<double>(double*, const double*, long);
template void geluBackward<float>(float*, const float*, const float*, long);
template void geluBackward<double>(double*, const double*, const double*, long);

}  // namespace parascope::kernels
