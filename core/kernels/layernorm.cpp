#include "core/kernels/layernorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/kernels/element_math.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {

// One row: its mean and reciprocal standard deviation, and the normalised, scaled row.
template <typename T>
void normalizeRow(T* o, T* mean, T* rstd, const T* x, const T* weight, const T* bias, int C) {
  const T eps = T(1e-5);
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < C; ++i) sum += x[i];
  const T m = sum / C;
  T var = 0;
#pragma omp simd reduction(+ : var)
  for (int i = 0; i < C; ++i) var += (x[i] - m) * (x[i] - m);
  const T s = T(1) / std::sqrt(var / C + eps);
  for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * s * weight[i] + bias[i];
  *mean = m;
  *rstd = s;
}

}  // namespace

template <typename T>
void layernormForward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int N,
                      int C) {
  // Reads inp, weight and bias; writes out, mean and rstd.
  trace::Span span("layernorm_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2L * N * C + 2L * C + 2L * N));
  for (int n = 0; n < N; ++n) {
    const long row = static_cast<long>(n) * C;
    normalizeRow(out + row, mean + n, rstd + n, inp + row, weight, bias, C);
  }
}

template <typename T>
void residualLayernormForward(T* sum, T* out, T* mean, T* rstd, const T* a, const T* b,
                              const T* weight, const T* bias, int N, int C) {
  // Reads a, b, weight and bias; writes sum, out, mean and rstd.
  trace::Span span("residual_layernorm_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(4L * N * C + 2L * C + 2L * N));
  for (int n = 0; n < N; ++n) {
    const long row = static_cast<long>(n) * C;
    T* x = sum + row;
    for (int i = 0; i < C; ++i) x[i] = a[row + i] + b[row + i];
    normalizeRow(out + row, mean + n, rstd + n, x, weight, bias, C);
  }
}

template <typename T>
void layernormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                       const T* mean, const T* rstd, int N, int C, const T* dresidual) {
  // Reads dout, inp, mean and rstd, adds into dweight and dbias; with dinp, reads weight and
  // writes dinp too, reading dresidual when given.
  trace::Span span("layernorm_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2L * N * C + 2L * N + 4L * C +
                           (dinp != nullptr ? static_cast<long>(N) * C + C : 0) +
                           (dresidual != nullptr ? static_cast<long>(N) * C : 0)));
  // The weight and bias gradients are column sums: each chunk of kColumnChunkRows rows is
  // added up from zero, then added to them (element_math.h), as the GPU's kernel adds them.
  std::vector<T> chunkBias(static_cast<std::size_t>(C)), chunkWeight(static_cast<std::size_t>(C));
  for (int n = 0; n < N; ++n) {
    if (n % kColumnChunkRows == 0) {
      std::fill(chunkBias.begin(), chunkBias.end(), T(0));
      std::fill(chunkWeight.begin(), chunkWeight.end(), T(0));
    }
    const T* x = inp + static_cast<long>(n) * C;
    const T* d = dout + static_cast<long>(n) * C;
    const T m = mean[n];
    const T s = rstd[n];
    T* pb = chunkBias.data();
    T* pw = chunkWeight.data();
    if (dinp == nullptr) {
      // The weight half alone (zero-bubble's W): the same element-wise sums, nothing else.
      for (int i = 0; i < C; ++i) {
        const T xhat = (x[i] - m) * s;
        pb[i] += d[i];
        pw[i] += d[i] * xhat;
      }
    } else {
      // dnorm = dout * weight; dx = s * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat))
      T dnormMean = 0;
      T dnormXhatMean = 0;
#pragma omp simd reduction(+ : dnormMean, dnormXhatMean)
      for (int i = 0; i < C; ++i) {
        const T xhat = (x[i] - m) * s;
        const T dnorm = d[i] * weight[i];
        dnormMean += dnorm;
        dnormXhatMean += dnorm * xhat;
        pb[i] += d[i];
        pw[i] += d[i] * xhat;
      }
      dnormMean /= C;
      dnormXhatMean /= C;
      T* dx = dinp + static_cast<long>(n) * C;
      for (int i = 0; i < C; ++i) {
        const T xhat = (x[i] - m) * s;
        dx[i] = s * (d[i] * weight[i] - dnormMean - xhat * dnormXhatMean);
      }
      // Its own statement: contracted with the line above into an FMA it would not be the bits
      // of a separate residual add.
      if (dresidual != nullptr) {
        const T* r = dresidual + static_cast<long>(n) * C;
        for (int i = 0; i < C; ++i) dx[i] = dx[i] + r[i];
      }
    }
    if (n % kColumnChunkRows == kColumnChunkRows - 1 || n == N - 1) {
      for (int i = 0; i < C; ++i) {
        dbias[i] += pb[i];
        dweight[i] += pw[i];
      }
    }
  }
}

template void layernormForward<float>(float*, float*, float*, const float*, const float*,
                                      const float*, int, int);
template void layernormForward<double>(double*, double*, double*, const double*, const double*,
                                       const double*, int, int);
template void residualLayernormForward<float>(float*, float*, float*, float*, const float*,
                                              const float*, const float*, const float*, int, int);
template void residualLayernormForward<double>(double*, double*, double*, double*, const double*,
                                               const double*, const double*, const double*, int,
                                               int);
template void layernormBackward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, const float*, const float*, int, int,
                                       const float*);
template void layernormBackward<double>(double*, double*, double*, const double*, const double*,
                                        const double*, const double*, const double*, int, int,
                                        const double*);

}  // namespace parascope::kernels
