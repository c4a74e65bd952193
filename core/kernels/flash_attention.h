// The arithmetic of the GPU's fused causal attention (core/cuda/kernels.cu), written once for
// nvcc and the C++ compiler: one query or key row, zero-padded to HS floats, against one tile of
// rows of the other side. The CUDA kernels give each row a thread and stream the tiles through
// shared memory; tests/flash_attention_reference.h runs the same functions over the same tiles
// on the CPU, so the math is tested wherever the project builds and a device run checks only how
// the rows and tiles are split. Both compile without multiply-add contraction, so the two give
// the same bits.
//
// Shapes per call: q, dO, k, v, o, dq, dk, dv (HS); a tile kt, vt, qt, dt (flashTile(HS) x HS,
// rows packed); mt, invt, Dt (flashTile(HS)): the tile rows' forward maximum, reciprocal sum and
// rowsum(P dP).
#pragma once

#include <cmath>
#include <type_traits>

#include "core/kernels/math.h"

// nvcc unrolls on request; the host compilers decide for themselves. No contraction into
// multiply-adds on the host either, whatever the including target's flags: Clang contracts
// within an expression unless told not to, GCC does not in ISO C++ mode (the project's), and
// nvcc's kernels build with --fmad=false.
#if defined(__CUDACC__)
#define PARASCOPE_UNROLL _Pragma("unroll")
#define PARASCOPE_NO_UNROLL _Pragma("unroll 1")
#else
#define PARASCOPE_UNROLL
#define PARASCOPE_NO_UNROLL
#endif
#if defined(__clang__) && !defined(__CUDACC__)
#define PARASCOPE_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define PARASCOPE_NO_CONTRACT
#endif

namespace parascope::kernels {

// Rows per CUDA block (one thread each), and rows per tile of the other side: what fits the 48 KiB
// of static shared memory beside the block's own rows.
inline constexpr int kFlashRows = 32;
PARASCOPE_HD constexpr int flashTile(int HS) {
  return HS <= 64 ? 32 : 8;
}
// The largest head the kernels take; a GPU run with a wider one is refused in its config.
inline constexpr int kFlashMaxHeadSize = 128;

// For the host side of the kernels and of their reference: the scores' scale 1 / sqrt(hs), and
// f called with the padded head size that runs a head of hs (the smallest of 32, 64 and 128
// that holds it), as std::integral_constant. False, f not called, above kFlashMaxHeadSize.
inline float flashScale(int hs) {
  return 1.0f / std::sqrt(static_cast<float>(hs));
}
template <typename F>
bool withFlashHeadSize(int hs, F f) {
  if (hs <= 32) {
    f(std::integral_constant<int, 32>{});
  } else if (hs <= 64) {
    f(std::integral_constant<int, 64>{});
  } else if (hs <= kFlashMaxHeadSize) {
    f(std::integral_constant<int, kFlashMaxHeadSize>{});
  } else {
    return false;
  }
  return true;
}

// Forward: query row q against the tile's first `visible` keys (1 or more). m and l are the
// online softmax's running maximum and sum, o the running sum of values weighted by the
// exponentials; what was summed is rescaled when the maximum grows. Start from m = -inf, l = 0,
// o = 0; after the last tile the row's output is o / l, its statistics m and 1 / l.
template <int HS>
PARASCOPE_HD inline void flashForwardTile(const float* q, const float* kt, const float* vt,
                                          int visible, float scale, float& m, float& l, float* o) {
  PARASCOPE_NO_CONTRACT
  constexpr int kTile = flashTile(HS);
  float sc[kTile];
  float tileMax = -INFINITY;
  PARASCOPE_UNROLL
  for (int jj = 0; jj < kTile; ++jj) {
    float dot = 0.0f;
    PARASCOPE_UNROLL
    for (int d = 0; d < HS; ++d) dot += q[d] * kt[jj * HS + d];
    sc[jj] = scale * dot;
    if (jj < visible) tileMax = fmaxf(tileMax, sc[jj]);
  }
  const float mNew = fmaxf(m, tileMax);
  const float rescale = fastExp(m - mNew);  // 0 (a tiny value times l = 0) before the first tile
  l *= rescale;
  PARASCOPE_UNROLL
  for (int d = 0; d < HS; ++d) o[d] *= rescale;
  PARASCOPE_UNROLL
  for (int jj = 0; jj < kTile; ++jj) {
    if (jj >= visible) break;
    const float p = fastExp(sc[jj] - mNew);
    l += p;
    PARASCOPE_UNROLL
    for (int d = 0; d < HS; ++d) o[d] += p * vt[jj * HS + d];
  }
  m = mNew;
}

// rowsum(P dP) of a query row, FlashAttention's way: dOut . out over the head's hs columns.
PARASCOPE_HD inline float flashRowDot(const float* dO, const float* o, int hs) {
  PARASCOPE_NO_CONTRACT
  float dot = 0.0f;
  for (int x = 0; x < hs; ++x) dot += dO[x] * o[x];
  return dot;
}

// A probability again from the forward's statistics, with the forward's score arithmetic.
PARASCOPE_HD inline float flashProbability(float dot, float scale, float m, float inv) {
  PARASCOPE_NO_CONTRACT
  return fastExp(scale * dot - m) * inv;
}

// dQ: query row q (its dOut dO, statistics m, inv and rowsum D) against the tile's first
// `visible` keys; dq accumulates dS K, to be scaled once at the end.
template <int HS>
PARASCOPE_HD inline void flashQueryGradTile(const float* q, const float* dO, const float* kt,
                                            const float* vt, int visible, float scale, float m,
                                            float inv, float D, float* dq) {
  PARASCOPE_NO_CONTRACT
  // Not unrolled on the GPU: the accumulators and the rows' dot products take the registers.
  PARASCOPE_NO_UNROLL
  for (int jj = 0; jj < visible; ++jj) {
    float s = 0.0f, dp = 0.0f;
    PARASCOPE_UNROLL
    for (int d = 0; d < HS; ++d) {
      s += q[d] * kt[jj * HS + d];
      dp += dO[d] * vt[jj * HS + d];
    }
    const float ds = flashProbability(s, scale, m, inv) * (dp - D);
    PARASCOPE_UNROLL
    for (int d = 0; d < HS; ++d) dq[d] += ds * kt[jj * HS + d];
  }
}

// dK and dV: key row k, v against the tile's query rows [first, rows), those that see it; dk
// accumulates dS^T Q (scaled once at the end), dv P^T dOut.
template <int HS>
PARASCOPE_HD inline void flashKeyGradTile(const float* k, const float* v, const float* qt,
                                          const float* dt, const float* mt, const float* invt,
                                          const float* Dt, int first, int rows, float scale,
                                          float* dk, float* dv) {
  PARASCOPE_NO_CONTRACT
  PARASCOPE_NO_UNROLL
  for (int ii = first; ii < rows; ++ii) {
    float s = 0.0f, dp = 0.0f;
    PARASCOPE_UNROLL
    for (int d = 0; d < HS; ++d) {
      s += qt[ii * HS + d] * k[d];
      dp += dt[ii * HS + d] * v[d];
    }
    const float p = flashProbability(s, scale, mt[ii], invt[ii]);
    const float ds = p * (dp - Dt[ii]);
    PARASCOPE_UNROLL
    for (int d = 0; d < HS; ++d) {
      dv[d] += p * dt[ii * HS + d];
      dk[d] += ds * qt[ii * HS + d];
    }
  }
}

}  // namespace parascope::kernels
