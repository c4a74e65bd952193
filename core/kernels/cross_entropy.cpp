#include "core/kernels/cross_entropy.h"

#include <cmath>
#include <type_traits>

#include "core/kernels/lanes.h"
#include "core/kernels/math.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {

// The forward's rows, inlined into each level's function below and vectorised there for its
// target (cpu_level.h). The maximum and the sum go by lanes (lanes.h), so every level computes the
// same bits.
template <typename T>
[[gnu::always_inline]] inline void forwardRows(T* losses, T* probs, const T* logits,
                                               const std::int32_t* targets, int N, int V) {
  for (int n = 0; n < N; ++n) {
    const T* x = logits + static_cast<long>(n) * V;
    T* p = probs + static_cast<long>(n) * V;
    const T maxv = laneMax(x, V);
    const T target = x[targets[n]];  // read before p, which may be x, is written
    // In place where p is x: each element is read before it is written.
#pragma omp simd
    for (int v = 0; v < V; ++v) p[v] = fastExp(x[v] - maxv);
    const T sum = laneSum<T>(V, [&](long v) { return p[v]; });
    const T inv = T(1) / sum;
    for (int v = 0; v < V; ++v) p[v] *= inv;
    losses[n] = std::log(sum) - (target - maxv);
  }
}

void forwardBaseline(float* losses, float* probs, const float* logits, const std::int32_t* targets,
                     int N, int V) {
  forwardRows(losses, probs, logits, targets, N, V);
}
#if defined(__x86_64__)
PARASCOPE_TARGET_AVX2 void forwardAvx2(float* losses, float* probs, const float* logits,
                                       const std::int32_t* targets, int N, int V) {
  forwardRows(losses, probs, logits, targets, N, V);
}
PARASCOPE_TARGET_AVX512 void forwardAvx512(float* losses, float* probs, const float* logits,
                                           const std::int32_t* targets, int N, int V) {
  forwardRows(losses, probs, logits, targets, N, V);
}
#endif

}  // namespace

void crossEntropyForward(float* losses, float* probs, const float* logits,
                         const std::int32_t* targets, int N, int V, CpuLevel level) {
#if defined(__x86_64__)
  if (level == CpuLevel::Avx512) return forwardAvx512(losses, probs, logits, targets, N, V);
  if (level == CpuLevel::Avx2) return forwardAvx2(losses, probs, logits, targets, N, V);
#else
  (void)level;
#endif
  forwardBaseline(losses, probs, logits, targets, N, V);
}

template <typename T>
void crossEntropyForward(T* losses, T* probs, const T* logits, const std::int32_t* targets, int N,
                         int V) {
  // Reads logits and targets; writes probs and losses.
  trace::Span span("cross_entropy_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2L * N * V + N) + 4L * N);
  if constexpr (std::is_same_v<T, float>) {
    static const CpuLevel level = cpuLevel();
    crossEntropyForward(losses, probs, logits, targets, N, V, level);
  } else {
    forwardRows(losses, probs, logits, targets, N, V);
  }
}

template <typename T>
void crossEntropyBackward(T* dlogits, const T* probs, const std::int32_t* targets, const T* dlosses,
                          int N, int V) {
  // Reads probs, targets and dlosses; writes dlogits.
  trace::Span span("cross_entropy_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2L * N * V + N) + 4L * N);
  for (int n = 0; n < N; ++n) {
    const T* p = probs + static_cast<long>(n) * V;
    T* d = dlogits + static_cast<long>(n) * V;
    const T dl = dlosses[n];
    for (int v = 0; v < V; ++v) d[v] = p[v] * dl;
    d[targets[n]] -= dl;
  }
}

template void crossEntropyForward<float>(float*, float*, const float*, const std::int32_t*, int,
                                         int);
template void crossEntropyForward<double>(double*, double*, const double*, const std::int32_t*, int,
                                          int);
template void crossEntropyBackward<float>(float*, const float*, const std::int32_t*, const float*,
                                          int, int);
template void crossEntropyBackward<double>(double*, const double*, const std::int32_t*,
                                           const double*, int, int);

void crossEntropyPartMax(float* maxima, const float* logits, int N, int V) {
  // Reads logits; writes maxima.
  trace::Span span("cross_entropy_max", trace::Category::Compute);
  span.bytes(arrayBytes<float>(static_cast<long>(N) * V + N));
  for (int n = 0; n < N; ++n) {
    const float* l = logits + static_cast<long>(n) * V;
    float m = l[0];
    for (int v = 1; v < V; ++v) m = l[v] > m ? l[v] : m;
    maxima[n] = m;
  }
}

void crossEntropyPartExp(float* sums, float* probs, const float* logits, const float* maxima,
                         const std::int32_t* targets, int N, int V, int first) {
  // Reads logits, maxima and targets; writes probs and sums.
  trace::Span span("cross_entropy_exp", trace::Category::Compute);
  span.bytes(arrayBytes<float>(2L * N * V + 3L * N) + 4L * N);
  for (int n = 0; n < N; ++n) {
    const float* l = logits + static_cast<long>(n) * V;
    float* p = probs + static_cast<long>(n) * V;
    const int local = targets[n] - first;
    sums[N + n] = local >= 0 && local < V ? l[local] : 0.0f;
    float sum = 0;
    for (int v = 0; v < V; ++v) {
      p[v] = fastExp(l[v] - maxima[n]);
      sum += p[v];
    }
    sums[n] = sum;
  }
}

void crossEntropyPartFinish(float* losses, float* probs, const float* sums, const float* maxima,
                            int N, int V) {
  // Reads probs, sums and maxima; writes probs and losses.
  trace::Span span("cross_entropy_normalize", trace::Category::Compute);
  span.bytes(arrayBytes<float>(2L * N * V + 4L * N));
  for (int n = 0; n < N; ++n) {
    float* p = probs + static_cast<long>(n) * V;
    const float inv = 1.0f / sums[n];
    for (int v = 0; v < V; ++v) p[v] *= inv;
    losses[n] = std::log(sums[n]) - (sums[N + n] - maxima[n]);
  }
}

void crossEntropyPartBackward(float* dlogits, const std::int32_t* targets, int N, int V, int first,
                              float weight) {
  // Reads dlogits (the probabilities) and targets; writes dlogits.
  trace::Span span("cross_entropy_backward", trace::Category::Compute);
  span.bytes(arrayBytes<float>(2L * N * V) + 4L * N);
  for (int n = 0; n < N; ++n) {
    float* d = dlogits + static_cast<long>(n) * V;
    for (int v = 0; v < V; ++v) d[v] *= weight;
    const int local = targets[n] - first;
    if (local >= 0 && local < V) d[local] -= weight;
  }
}

}  // namespace parascope::kernels
