// The GPU's fused causal attention (core/cuda/kernels.cu) run on the CPU: the same rows, zero
// padding, tiles and per-row arithmetic (core/kernels/flash_attention.h), one row after another
// instead of a thread each. Its results are the kernels' bits, so the tests here check their math
// against attention.cpp and a device run checks the kernels against this. Shapes and statistics
// as kernels::attentionForward; backward overwrites dqkv and reads the forward's output.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/kernels/flash_attention.h"

namespace parascope::flashref {

// Rows [r0, r0 + rows) of a tensor with rows `stride` apart, hs columns from `src`, into rows
// of HS with zeros past hs and past T.
template <int HS>
void loadRows(std::vector<float>& dst, const float* src, long stride, int r0, int rows, int T,
              int hs) {
  dst.assign(static_cast<std::size_t>(rows) * HS, 0.0f);
  for (int r = 0; r < rows && r0 + r < T; ++r)
    for (int d = 0; d < hs; ++d)
      dst[static_cast<std::size_t>(r * HS + d)] = src[(r0 + r) * stride + d];
}

// The fused kernels' dispatch on the head size, as their launchers run it.
template <typename F>
void requireHead(int hs, F f) {
  if (!kernels::withFlashHeadSize(hs, f))
    throw std::invalid_argument("head size above the fused kernels' limit");
}

inline void attentionForward(float* out, float* stats, const float* qkv, int B, int T, int C,
                             int NH) {
  const int hs = C / NH;
  const float scale = kernels::flashScale(hs);
  const long C3 = 3L * C;
  requireHead(hs, [&](auto padded) {
    constexpr int HS = decltype(padded)::value;
    constexpr int kTile = kernels::flashTile(HS);
    std::vector<float> q, kt, vt;
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < NH; ++h) {
        const float* head = qkv + static_cast<long>(b) * T * C3 + h * hs;
        for (int t = 0; t < T; ++t) {
          loadRows<HS>(q, head, C3, t, 1, T, hs);
          float o[HS] = {};
          float m = -INFINITY, l = 0.0f;
          for (int j0 = 0; j0 <= t; j0 += kTile) {
            loadRows<HS>(kt, head + C, C3, j0, kTile, T, hs);
            loadRows<HS>(vt, head + 2 * C, C3, j0, kTile, T, hs);
            kernels::flashForwardTile<HS>(q.data(), kt.data(), vt.data(),
                                          std::min(kTile, t - j0 + 1), scale, m, l, o);
          }
          const float inv = 1.0f / l;
          float* row = out + (static_cast<long>(b) * T + t) * C + h * hs;
          for (int d = 0; d < hs; ++d) row[d] = o[d] * inv;
          float* st = stats + ((static_cast<long>(b) * NH + h) * T + t) * 2;
          st[0] = m;
          st[1] = inv;
        }
      }
    }
  });
}

inline void attentionBackward(float* dqkv, const float* dout, const float* qkv, const float* out,
                              const float* stats, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = kernels::flashScale(hs);
  const long C3 = 3L * C;
  requireHead(hs, [&](auto padded) {
    constexpr int HS = decltype(padded)::value;
    constexpr int kTile = kernels::flashTile(HS);
    std::vector<float> q, dO, kt, vt, k, v, qt, dt;
    for (int b = 0; b < B; ++b) {
      const long rowB = static_cast<long>(b) * T;
      for (int h = 0; h < NH; ++h) {
        const float* head = qkv + rowB * C3 + h * hs;
        const float* doutHead = dout + rowB * C + h * hs;
        const float* headStats = stats + (static_cast<long>(b) * NH + h) * T * 2;
        auto rowDot = [&](long t) {
          return kernels::flashRowDot(doutHead + t * C, out + (rowB + t) * C + h * hs, hs);
        };
        for (int t = 0; t < T; ++t) {  // dQ: the query kernel's thread for row t
          loadRows<HS>(q, head, C3, t, 1, T, hs);
          loadRows<HS>(dO, doutHead, C, t, 1, T, hs);
          float dq[HS] = {};
          for (int j0 = 0; j0 <= t; j0 += kTile) {
            loadRows<HS>(kt, head + C, C3, j0, kTile, T, hs);
            loadRows<HS>(vt, head + 2 * C, C3, j0, kTile, T, hs);
            kernels::flashQueryGradTile<HS>(q.data(), dO.data(), kt.data(), vt.data(),
                                            std::min(kTile, t - j0 + 1), scale, headStats[2 * t],
                                            headStats[2 * t + 1], rowDot(t), dq);
          }
          float* row = dqkv + (rowB + t) * C3 + h * hs;
          for (int d = 0; d < hs; ++d) row[d] = scale * dq[d];
        }
        for (int j = 0; j < T; ++j) {  // dK, dV: the key kernel's thread for row j
          loadRows<HS>(k, head + C, C3, j, 1, T, hs);
          loadRows<HS>(v, head + 2 * C, C3, j, 1, T, hs);
          float dk[HS] = {}, dv[HS] = {};
          float mt[kTile], invt[kTile], Dt[kTile];
          for (int r0 = j / kernels::kFlashRows * kernels::kFlashRows; r0 < T; r0 += kTile) {
            loadRows<HS>(qt, head, C3, r0, kTile, T, hs);
            loadRows<HS>(dt, doutHead, C, r0, kTile, T, hs);
            const int rows = std::min(kTile, T - r0);
            for (int i = 0; i < rows; ++i) {
              mt[i] = headStats[2 * (r0 + i)];
              invt[i] = headStats[2 * (r0 + i) + 1];
              Dt[i] = rowDot(r0 + i);
            }
            kernels::flashKeyGradTile<HS>(k.data(), v.data(), qt.data(), dt.data(), mt, invt, Dt,
                                          std::max(0, j - r0), rows, scale, dk, dv);
          }
          float* row = dqkv + (rowB + j) * C3 + h * hs;
          for (int d = 0; d < hs; ++d) {
            row[C + d] = scale * dk[d];
            row[2 * C + d] = dv[d];
          }
        }
      }
    }
  });
}

}  // namespace parascope::flashref
