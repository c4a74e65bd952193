// The FMA peak probe: one loop per instruction set, each compiled for its own target whatever the
// build's flags, the widest this CPU runs chosen at run time.
#include "core/kernels/fma_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace parascope::kernels {

namespace {

// Independent accumulators per loop: more than an FMA's latency (4 cycles) times the FMA units
// (2) on the CPUs of this decade, so the units never wait, and few enough to stay in registers.
constexpr int kChains = kFmaPeakChains;
// Iterations per sample: about a millisecond at 100 GFLOP/s with 16 lanes.
constexpr std::int64_t kIterations = kFmaPeakIterations;
// Bounds the probe's time even with a clock that does not advance: each sample sleeps 1 ms.
constexpr int kMaxSamples = 1000;

// The loops return their accumulators' sum so that the compiler keeps every chain; the
// multiplier and addend come in as arguments so that it cannot fold them.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) float chainsAvx512(std::int64_t n, float mul, float add) {
  const __m512 m = _mm512_set1_ps(mul), a = _mm512_set1_ps(add);
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  for (std::int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  }
  for (int c = 1; c < kChains; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2,fma"))) float chainsAvx2(std::int64_t n, float mul, float add) {
  const __m256 m = _mm256_set1_ps(mul), a = _mm256_set1_ps(add);
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  for (std::int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  }
  for (int c = 1; c < kChains; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

// x86-64's baseline: a multiply and an add, the two FLOPs of a multiply-add.
float chainsSse2(std::int64_t n, float mul, float add) {
  const __m128 m = _mm_set1_ps(mul), a = _mm_set1_ps(add);
  __m128 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm_set1_ps(static_cast<float>(c));
  for (std::int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm_add_ps(_mm_mul_ps(acc[c], m), a);
  }
  for (int c = 1; c < kChains; ++c) acc[0] = _mm_add_ps(acc[0], acc[c]);
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, acc[0]);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

struct Probe {
  const char* isa;
  int lanes;
  float (*run)(std::int64_t, float, float);
};

Probe widestProbe() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", 16, chainsAvx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2+fma", 8, chainsAvx2};
  }
  return {"sse2", 4, chainsSse2};
#else
  return {"scalar", 1, [](std::int64_t n, float mul, float add) {
            float acc[kChains];
            for (int c = 0; c < kChains; ++c) acc[c] = static_cast<float>(c);
            for (std::int64_t i = 0; i < n; ++i) {
              for (float& v : acc) v = v * mul + add;
            }
            float sum = 0;
            for (float v : acc) sum += v;
            return sum;
          }};
#endif
}

}  // namespace

FmaPeak measureFmaPeak(const SecondsClock& clock) {
  const Probe probe = widestProbe();
  const double flops = 2.0 * probe.lanes * kChains * static_cast<double>(kIterations);
  // A multiplier just below 1 and a small addend keep every value finite and normal: a
  // denormal would slow the units and understate the peak.
  volatile float mul = 0.999f, add = 0.001f;
  volatile float sink = probe.run(kIterations / 16, mul, add);  // the clocks ramp up
  double best = 0;
  const double start = clock();
  double now = start;
  for (int i = 0; i < kMaxSamples && now - start < kFmaPeakBudgetSeconds; ++i) {
    const double t0 = clock();
    sink = probe.run(kIterations, mul, add);
    now = clock();
    if (now > t0) best = std::max(best, flops / (now - t0));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  (void)sink;
  return {probe.isa, probe.lanes, best};
}

}  // namespace parascope::kernels
