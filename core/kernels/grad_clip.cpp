#include "core/kernels/grad_clip.h"

#include <type_traits>

#include "core/kernels/cpu_level.h"
#include "core/kernels/lanes.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {

// By lanes (lanes.h): each level computes the baseline's bits. A float's square is exact in
// double.
template <typename T>
[[gnu::always_inline]] inline double squaresLoop(const T* grad, long N) {
  return laneSum<double>(N, [&](long i) {
    const auto g = static_cast<double>(grad[i]);
    return g * g;
  });
}

double squaresBaseline(const float* grad, long N) {
  return squaresLoop(grad, N);
}
#if defined(__x86_64__)
PARASCOPE_TARGET_AVX2 double squaresAvx2(const float* grad, long N) {
  return squaresLoop(grad, N);
}
PARASCOPE_TARGET_AVX512 double squaresAvx512(const float* grad, long N) {
  return squaresLoop(grad, N);
}
#endif

}  // namespace

double sumOfSquares(const float* grad, long N, CpuLevel level) {
#if defined(__x86_64__)
  if (level == CpuLevel::Avx512) return squaresAvx512(grad, N);
  if (level == CpuLevel::Avx2) return squaresAvx2(grad, N);
#else
  (void)level;
#endif
  return squaresBaseline(grad, N);
}

template <typename T>
double sumOfSquares(const T* grad, long N) {
  trace::Span span("grad_norm", trace::Category::Optimizer);
  span.bytes(arrayBytes<T>(N));
  if constexpr (std::is_same_v<T, float>) {
    static const CpuLevel level = cpuLevel();
    return sumOfSquares(grad, N, level);
  } else {
    return squaresLoop(grad, N);
  }
}

double clipFactor(double norm, double maxNorm) {
  if (maxNorm <= 0) return 1.0;
  const double f = maxNorm / (norm + 1e-6);
  return f < 1.0 ? f : 1.0;
}

template double sumOfSquares<float>(const float*, long);
template double sumOfSquares<double>(const double*, long);

}  // namespace parascope::kernels
