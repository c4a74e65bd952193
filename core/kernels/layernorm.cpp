#include "core/kernels/layernorm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/kernels/element_math.h"
#include "core/kernels/lanes.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {

// One row: its mean and reciprocal standard deviation, and the normalised, scaled row.
template <typename T>
[[gnu::always_inline]] inline void normalizeRow(T* o, T* mean, T* rstd, const T* x, const T* weight,
                                                const T* bias, int C) {
  const T eps = T(1e-5);
  // By lanes (lanes.h): every level computes the baseline's bits, where a vectorised reduction's
  // order would follow the vector width.
  const T m = laneSum<T>(C, [&](long i) { return x[i]; }) / C;
  const T var = laneSum<T>(C, [&](long i) { return (x[i] - m) * (x[i] - m); });
  const T s = T(1) / std::sqrt(var / C + eps);
  for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * s * weight[i] + bias[i];
  *mean = m;
  *rstd = s;
}

template <typename T>
[[gnu::always_inline]] inline void forwardLoop(T* out, T* mean, T* rstd, const T* inp,
                                               const T* weight, const T* bias, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const long row = static_cast<long>(n) * C;
    normalizeRow(out + row, mean + n, rstd + n, inp + row, weight, bias, C);
  }
}

template <typename T>
[[gnu::always_inline]] inline void residualForwardLoop(T* sum, T* out, T* mean, T* rstd, const T* a,
                                                       const T* b, const T* weight, const T* bias,
                                                       int N, int C) {
  for (int n = 0; n < N; ++n) {
    const long row = static_cast<long>(n) * C;
    T* x = sum + row;
    for (int i = 0; i < C; ++i) x[i] = a[row + i] + b[row + i];
    normalizeRow(out + row, mean + n, rstd + n, x, weight, bias, C);
  }
}

// The weight and bias gradients are column sums: each chunk of kColumnChunkRows rows is added up
// from zero (in chunkBias and chunkWeight, C each), then added to them (element_math.h), as the
// GPU's kernel adds them.
template <typename T>
[[gnu::always_inline]] inline void backwardLoop(T* dinp, T* dweight, T* dbias, const T* dout,
                                                const T* inp, const T* weight, const T* mean,
                                                const T* rstd, int N, int C, const T* dresidual,
                                                T* chunkBias, T* chunkWeight) {
  for (int n = 0; n < N; ++n) {
    if (n % kColumnChunkRows == 0) {
      std::fill(chunkBias, chunkBias + C, T(0));
      std::fill(chunkWeight, chunkWeight + C, T(0));
    }
    const T* x = inp + static_cast<long>(n) * C;
    const T* d = dout + static_cast<long>(n) * C;
    const T m = mean[n];
    const T s = rstd[n];
    T* pb = chunkBias;
    T* pw = chunkWeight;
    if (dinp == nullptr) {
      // The weight half alone (zero-bubble's W): the same element-wise sums, nothing else.
      for (int i = 0; i < C; ++i) {
        const T xhat = (x[i] - m) * s;
        pb[i] += d[i];
        pw[i] += d[i] * xhat;
      }
    } else {
      // dnorm = dout * weight; dx = s * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat)); the
      // two means by lanes, beside the column sums.
      T accDnorm[kLanes] = {}, accDnormXhat[kLanes] = {};
      const auto term = [&](int i, int l) {
        const T xhat = (x[i] - m) * s;
        const T dnorm = d[i] * weight[i];
        accDnorm[l] += dnorm;
        accDnormXhat[l] += dnorm * xhat;
        pb[i] += d[i];
        pw[i] += d[i] * xhat;
      };
      int i = 0;
      for (; i + kLanes <= C; i += kLanes)
        for (int l = 0; l < kLanes; ++l) term(i + l, l);
      for (int l = 0; i + l < C; ++l) term(i + l, l);
      const T dnormMean = foldSum(accDnorm) / C;
      const T dnormXhatMean = foldSum(accDnormXhat) / C;
      T* dx = dinp + static_cast<long>(n) * C;
      for (int j = 0; j < C; ++j) {
        const T xhat = (x[j] - m) * s;
        dx[j] = s * (d[j] * weight[j] - dnormMean - xhat * dnormXhatMean);
      }
      // Its own statement: contracted with the line above into an FMA it would not be the bits
      // of a separate residual add.
      if (dresidual != nullptr) {
        const T* r = dresidual + static_cast<long>(n) * C;
        for (int j = 0; j < C; ++j) dx[j] = dx[j] + r[j];
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

// Each level's three loops, compiled for its instructions.
struct Kernels {
  void (*forward)(float*, float*, float*, const float*, const float*, const float*, int, int);
  void (*residualForward)(float*, float*, float*, float*, const float*, const float*, const float*,
                          const float*, int, int);
  void (*backward)(float*, float*, float*, const float*, const float*, const float*, const float*,
                   const float*, int, int, const float*, float*, float*);
};

#define PARASCOPE_LAYERNORM_LEVEL(Suffix, Target)                                                 \
  Target void forward##Suffix(float* out, float* mean, float* rstd, const float* inp,             \
                              const float* weight, const float* bias, int N, int C) {             \
    forwardLoop(out, mean, rstd, inp, weight, bias, N, C);                                        \
  }                                                                                               \
  Target void residualForward##Suffix(float* sum, float* out, float* mean, float* rstd,           \
                                      const float* a, const float* b, const float* weight,        \
                                      const float* bias, int N, int C) {                          \
    residualForwardLoop(sum, out, mean, rstd, a, b, weight, bias, N, C);                          \
  }                                                                                               \
  Target void backward##Suffix(float* dinp, float* dweight, float* dbias, const float* dout,      \
                               const float* inp, const float* weight, const float* mean,          \
                               const float* rstd, int N, int C, const float* dresidual,           \
                               float* chunkBias, float* chunkWeight) {                            \
    backwardLoop(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, dresidual, chunkBias, \
                 chunkWeight);                                                                    \
  }

PARASCOPE_LAYERNORM_LEVEL(Baseline, )
#if defined(__x86_64__)
PARASCOPE_LAYERNORM_LEVEL(Avx2, PARASCOPE_TARGET_AVX2)
PARASCOPE_LAYERNORM_LEVEL(Avx512, PARASCOPE_TARGET_AVX512)
#endif
#undef PARASCOPE_LAYERNORM_LEVEL

Kernels kernelsAt(CpuLevel level) {
#if defined(__x86_64__)
  if (level == CpuLevel::Avx512) return {forwardAvx512, residualForwardAvx512, backwardAvx512};
  if (level == CpuLevel::Avx2) return {forwardAvx2, residualForwardAvx2, backwardAvx2};
#endif
  return {forwardBaseline, residualForwardBaseline, backwardBaseline};
}

const Kernels& cpusKernels() {
  static const Kernels kernels = kernelsAt(cpuLevel());
  return kernels;
}

}  // namespace

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int N, int C, CpuLevel level) {
  kernelsAt(level).forward(out, mean, rstd, inp, weight, bias, N, C);
}

void residualLayernormForward(float* sum, float* out, float* mean, float* rstd, const float* a,
                              const float* b, const float* weight, const float* bias, int N, int C,
                              CpuLevel level) {
  kernelsAt(level).residualForward(sum, out, mean, rstd, a, b, weight, bias, N, C);
}

void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int N, int C, const float* dresidual, CpuLevel level) {
  std::vector<float> chunks(2 * static_cast<std::size_t>(C));
  kernelsAt(level).backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, dresidual,
                            chunks.data(), chunks.data() + C);
}

template <typename T>
void layernormForward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int N,
                      int C) {
  // Reads inp, weight and bias; writes out, mean and rstd.
  trace::Span span("layernorm_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2L * N * C + 2L * C + 2L * N));
  if constexpr (std::is_same_v<T, float>) {
    cpusKernels().forward(out, mean, rstd, inp, weight, bias, N, C);
  } else {
    forwardLoop(out, mean, rstd, inp, weight, bias, N, C);
  }
}

template <typename T>
void residualLayernormForward(T* sum, T* out, T* mean, T* rstd, const T* a, const T* b,
                              const T* weight, const T* bias, int N, int C) {
  // Reads a, b, weight and bias; writes sum, out, mean and rstd.
  trace::Span span("residual_layernorm_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(4L * N * C + 2L * C + 2L * N));
  if constexpr (std::is_same_v<T, float>) {
    cpusKernels().residualForward(sum, out, mean, rstd, a, b, weight, bias, N, C);
  } else {
    residualForwardLoop(sum, out, mean, rstd, a, b, weight, bias, N, C);
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
  std::vector<T> chunks(2 * static_cast<std::size_t>(C));
  if constexpr (std::is_same_v<T, float>) {
    cpusKernels().backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, dresidual,
                           chunks.data(), chunks.data() + C);
  } else {
    backwardLoop(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, dresidual,
                 chunks.data(), chunks.data() + C);
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
