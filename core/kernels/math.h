// Branch-free exp and tanh that compilers vectorise inside plain loops (std::exp/std::tanh are
// scalar library calls and would dominate the elementwise kernels). Accurate to a few ulp in
// float; the double overloads defer to the standard library (used only by the gradient checks).
// The float forms are the CUDA kernels' too (element_math.h), so the GPU computes their bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

// Functions the CPU kernels and the CUDA kernels share (nvcc compiles them for both).
#if defined(__CUDACC__)
#define PARASCOPE_HD __host__ __device__
#else
#define PARASCOPE_HD
#endif

namespace parascope::kernels {

PARASCOPE_HD inline std::uint32_t bitsOf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
PARASCOPE_HD inline float floatOfBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// exp(x) for x in float range: 2^n * p(r), r = x - n ln2 with a Cody-Waite split and a degree-6
// polynomial (Cephes expf). Inputs below -87.3 flush to 0, above 88.7 saturate to FLT_MAX-ish.
PARASCOPE_HD inline float fastExp(float x) {
  x = x < -87.33654f ? -87.33654f : (x > 88.72283f ? 88.72283f : x);
  // n = nearbyint(x log2 e), rounded by adding and taking away 1.5 * 2^23, where a float's ulp
  // is 1 (exact for |v| < 2^22; here |v| <= 128): std::nearbyint is a library call on CPUs
  // without SSE4.1's roundps, the baseline x86-64 of a portable build, and a call in the loop
  // keeps every element-wise kernel using this from vectorising there.
  const float v = x * 1.44269504088896341f;
  const float n = (v + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n by building the exponent; n in [-126, 128] after the clamp, split to stay normal.
  const auto ni = static_cast<std::int32_t>(n);
  const std::int32_t n1 = ni / 2;
  const std::int32_t n2 = ni - n1;
  const float s1 = floatOfBits(static_cast<std::uint32_t>(n1 + 127) << 23);
  const float s2 = floatOfBits(static_cast<std::uint32_t>(n2 + 127) << 23);
  return p * s1 * s2;
}
inline double fastExp(double x) {
  return std::exp(x);
}

// tanh(u) = sign(u) (1 - 2 / (exp(2|u|) + 1)); absolute error ~1e-7.
PARASCOPE_HD inline float fastTanh(float u) {
  const float a = std::fabs(u);
  const float t = 1.0f - 2.0f / (fastExp(2.0f * a) + 1.0f);
  return std::copysign(t, u);
}
inline double fastTanh(double u) {
  return std::tanh(u);
}

}  // namespace parascope::kernels
