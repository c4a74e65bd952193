#include "core/kernels/stream_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace parascope::kernels {

double measureStreamBandwidth(std::size_t elements, int repeats) {
  // Touched once first, so the samples measure traffic, not page faults.
  std::vector<float> a(elements, 0.0f), b(elements, 1.0f), c(elements, 2.0f);
  const float s = 3.0f;
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    float* __restrict out = a.data();
    const float* __restrict x = b.data();
    const float* __restrict y = c.data();
    for (std::size_t i = 0; i < elements; ++i) out[i] = x[i] + s * y[i];
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0) best = std::max(best, 3.0 * sizeof(float) * elements / seconds);
    std::swap(a, b);  // the next triad reads what this one wrote
  }
  // Read back, so that no triad's stores are optimised away.
  volatile float sink = b[elements / 2];
  (void)sink;
  return best;
}

}  // namespace parascope::kernels
