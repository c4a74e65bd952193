// The arithmetic of one element of the element-wise kernels, in one place for the CPU loops
// (gelu.cpp, adamw.cpp, precision.cpp) and the CUDA kernels (core/cuda/kernels.cu). Both are
// compiled without floating-point contraction (-ffp-contract=off, nvcc --fmad=false) and divide
// and take square roots correctly rounded, so a GPU computes the CPU's bits for these: the tests
// here check the math, a device run checks only how the work is split.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/kernels/math.h"

namespace parascope::kernels {

template <typename T>
inline constexpr T kGeluScale = T(0.7978845608028654);  // sqrt(2 / pi)

// GELU, tanh approximation (GPT-2's): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename T>
PARASCOPE_HD inline T geluValue(T x) {
  const T u = kGeluScale<T> * (x + T(0.044715) * x * x * x);
  return T(0.5) * x * (T(1) + fastTanh(u));
}

// d gelu(x) / dx, which the backward pass multiplies by the output's gradient.
template <typename T>
PARASCOPE_HD inline T geluDerivative(T x) {
  const T u = kGeluScale<T> * (x + T(0.044715) * x * x * x);
  const T th = fastTanh(u);
  const T sech2 = T(1) - th * th;
  return T(0.5) * (T(1) + th) +
         T(0.5) * x * sech2 * kGeluScale<T> * (T(1) + T(3) * T(0.044715) * x * x);
}

// A column sum over many rows (a bias's gradient, layernorm's weight and bias gradients) adds
// the rows in chunks of this many: each chunk's sum starts from zero and adds its rows in order,
// then the chunks' sums are added to the column's total in order. The CPU's loops
// (residual.cpp, layernorm.cpp) and the CUDA kernels (kernels.cu: chunkedColumnSums) keep this
// order, so both give the same bits; the chunks let a GPU sum them in parallel.
inline constexpr int kColumnChunkRows = 64;

// AdamW's per-step constants, computed once on the host (bias corrections in double, as Python
// computes them before they reach PyTorch's kernel).
template <typename T>
struct AdamWConstants {
  T b1, b2, decay, eps, stepSize, biasCorrection2Sqrt;
};

// One element of AdamW, in torch.optim.AdamW's order of operations (single-tensor path); g is
// the gradient already multiplied by its scale.
template <typename T>
PARASCOPE_HD inline void adamwElement(T& param, T g, T& m, T& v, const AdamWConstants<T>& k) {
  param *= k.decay;
  m = m * k.b1 + (T(1) - k.b1) * g;
  v = v * k.b2 + (T(1) - k.b2) * g * g;
  const T denom = std::sqrt(v) / k.biasCorrection2Sqrt + k.eps;
  param -= k.stepSize * (m / denom);
}

// float to bfloat16 without branches, so that loops of it vectorise: round to nearest even, NaN
// kept quiet. Returns the bf16 bits in the upper half.
PARASCOPE_HD inline std::uint32_t bf16Upper(float f) {
  const std::uint32_t u = bitsOf(f);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const std::uint32_t quiet = (u | 0x00400000u) & 0xffff0000u;
  return (u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
}

}  // namespace parascope::kernels
