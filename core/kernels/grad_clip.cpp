#include "core/kernels/grad_clip.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
double sumOfSquares(const T* grad, long N) {
  trace::Span span("grad_norm", trace::Category::Optimizer);
  span.bytes(arrayBytes<T>(N));
  // Vector lanes of partial sums (the order of a reduction is ours to choose); double lanes
  // keep the result independent of how the gradients are split into buffers.
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (long i = 0; i < N; ++i) s += static_cast<double>(grad[i]) * static_cast<double>(grad[i]);
  return s;
}

double clipFactor(double norm, double maxNorm) {
  if (maxNorm <= 0) return 1.0;
  const double f = maxNorm / (norm + 1e-6);
  return f < 1.0 ? f : 1.0;
}

template double sumOfSquares<float>(const float*, long);
template double sumOfSquares<double>(const double*, long);

}  // namespace parascope::kernels
