#include "core/kernels/layernorm.h"

#include <cmath>
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
void layernormForward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int N,
                      int C) {
  // Reads inp, weight and bias; writes out, mean and rstd.
  trace::Span span("layernorm_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2L * N * C + 2L * C + 2L * N));
  const T eps = T(1e-5);
  for (int n = 0; n < N; ++n) {
    const T* x = inp + static_cast<long>(n) * C;
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < C; ++i) sum += x[i];
    const T m = sum / C;
    T var = 0;
#pragma omp simd reduction(+ : var)
    for (int i = 0; i < C; ++i) var += (x[i] - m) * (x[i] - m);
    const T s = T(1) / std::sqrt(var / C + eps);
    T* o = out + static_cast<long>(n) * C;
    for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

template <typename T>
void layernormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                       const T* mean, const T* rstd, int N, int C) {
  // Reads dout, inp, mean and rstd, adds into dweight and dbias; with dinp, reads weight and
  // writes dinp too.
  trace::Span span("layernorm_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2L * N * C + 2L * N + 4L * C +
                           (dinp != nullptr ? static_cast<long>(N) * C + C : 0)));
  for (int n = 0; n < N; ++n) {
    const T* x = inp + static_cast<long>(n) * C;
    const T* d = dout + static_cast<long>(n) * C;
    const T m = mean[n];
    const T s = rstd[n];
    if (dinp == nullptr) {
      // The weight half alone (zero-bubble's W): the same element-wise sums, nothing else.
      for (int i = 0; i < C; ++i) {
        const T xhat = (x[i] - m) * s;
        dbias[i] += d[i];
        dweight[i] += d[i] * xhat;
      }
      continue;
    }
    // dnorm = dout * weight; dx = s * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat))
    T dnormMean = 0;
    T dnormXhatMean = 0;
#pragma omp simd reduction(+ : dnormMean, dnormXhatMean)
    for (int i = 0; i < C; ++i) {
      const T xhat = (x[i] - m) * s;
      const T dnorm = d[i] * weight[i];
      dnormMean += dnorm;
      dnormXhatMean += dnorm * xhat;
      dbias[i] += d[i];
      dweight[i] += d[i] * xhat;
    }
    dnormMean /= C;
    dnormXhatMean /= C;
    T* dx = dinp + static_cast<long>(n) * C;
    for (int i = 0; i < C; ++i) {
      const T xhat = (x[i] - m) * s;
      dx[i] = s * (d[i] * weight[i] - dnormMean - xhat * dnormXhatMean);
    }
  }
}

template void layernormForward<float>(float*, float*, float*, const float*, const float*,
                                      const float*, int, int);
template void layernormForward<double>(double*, double*, double*, const double*, const double*,
                                       const double*, int, int);
template void layernormBackward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, const float*, const float*, int, int);
template void layernormBackward<double>(double*, double*, double*, const double*, const double*,
                                        const double*, const double*, const double*, int, int);

}  // namespace parascope::kernels
