#include "core/kernels/attention.h"

#include <algorithm>
#include <cmath>

#include "core/kernels/blas.h"
#include "core/kernels/math.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {
// Products with V and the whole backward pass go by blocks of query rows that see only the keys
// at or before their last row, skipping most of the masked triangle. The score product stays
// one full square: at these sizes one large product beats several triangular blocks.
constexpr int kRowBlock = 32;
}  // namespace

template <typename T>
void attentionForward(T* out, T* att, const T* qkv, int B, int Tn, int C, int NH) {
  // Reads qkv; writes att and out (the products' re-reads of their blocks not counted).
  trace::Span span("attention_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(static_cast<long>(B) * Tn * (4L * C + static_cast<long>(NH) * Tn)));
  const int hs = C / NH;
  const int C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  for (int b = 0; b < B; ++b) {
    const T* base = qkv + static_cast<long>(b) * Tn * C3;
    for (int h = 0; h < NH; ++h) {
      const T* q = base + h * hs;
      const T* k = base + C + h * hs;
      const T* v = base + 2 * C + h * hs;
      T* p = att + (static_cast<long>(b) * NH + h) * Tn * Tn;
      gemm(false, true, Tn, Tn, hs, scale, q, C3, k, C3, T(0), p, Tn);
      for (int t = 0; t < Tn; ++t) {
        T* row = p + static_cast<long>(t) * Tn;
        T maxv = row[0];
        // fmax: Clang vectorises a maxnum reduction, not a compare-and-select one.
#pragma omp simd reduction(max : maxv)
        for (int j = 1; j <= t; ++j) maxv = std::fmax(maxv, row[j]);
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j <= t; ++j) {
          row[j] = fastExp(row[j] - maxv);
          sum += row[j];
        }
        const T inv = T(1) / sum;
        for (int j = 0; j <= t; ++j) row[j] *= inv;
        for (int j = t + 1; j < Tn; ++j) row[j] = T(0);
      }
      for (int r0 = 0; r0 < Tn; r0 += kRowBlock) {
        const int rows = std::min(kRowBlock, Tn - r0), cols = r0 + rows;
        gemm(false, false, rows, hs, cols, T(1), p + static_cast<long>(r0) * Tn, Tn, v, C3, T(0),
             out + (static_cast<long>(b) * Tn + r0) * C + h * hs, C);
      }
    }
  }
}

template <typename T>
void attentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int B,
                       int Tn, int C, int NH) {
  // Reads dout, qkv and the causal blocks of att; writes dqkv (scratch stays in cache).
  trace::Span span("attention_backward", trace::Category::Compute);
  long blocks = 0;  // elements of att the row blocks read, per (b, h)
  for (int r0 = 0; r0 < Tn; r0 += kRowBlock) {
    const int rows = std::min(kRowBlock, Tn - r0);
    blocks += static_cast<long>(rows) * (r0 + rows);
  }
  span.bytes(arrayBytes<T>(static_cast<long>(B) * (7L * Tn * C + static_cast<long>(NH) * blocks)));
  const int hs = C / NH;
  const int C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  for (int b = 0; b < B; ++b) {
    const T* base = qkv + static_cast<long>(b) * Tn * C3;
    T* dbase = dqkv + static_cast<long>(b) * Tn * C3;
    for (int h = 0; h < NH; ++h) {
      const T* q = base + h * hs;
      const T* k = base + C + h * hs;
      const T* v = base + 2 * C + h * hs;
      T* dq = dbase + h * hs;
      T* dk = dbase + C + h * hs;
      T* dv = dbase + 2 * C + h * hs;
      const T* p = att + (static_cast<long>(b) * NH + h) * Tn * Tn;
      const T* dout_h = dout + static_cast<long>(b) * Tn * C + h * hs;
      // dK and dV gather contributions from every row block below them.
      for (int t = 0; t < Tn; ++t) {
        std::fill(dk + static_cast<long>(t) * C3, dk + static_cast<long>(t) * C3 + hs, T(0));
        std::fill(dv + static_cast<long>(t) * C3, dv + static_cast<long>(t) * C3 + hs, T(0));
      }
      for (int r0 = 0; r0 < Tn; r0 += kRowBlock) {
        const int rows = std::min(kRowBlock, Tn - r0), cols = r0 + rows;
        const T* pb = p + static_cast<long>(r0) * Tn;
        const T* doutb = dout_h + static_cast<long>(r0) * C;
        T* ds = scratch;  // rows x cols, leading dimension cols
        // dP = dOut V^T ; dV += P^T dOut
        gemm(false, true, rows, cols, hs, T(1), doutb, C, v, C3, T(0), ds, cols);
        gemm(true, false, cols, hs, rows, T(1), pb, Tn, doutb, C, T(1), dv, C3);
        // Softmax backward in place: dS = P * (dP - rowsum(P * dP)), zero where masked.
        for (int i = 0; i < rows; ++i) {
          const int t = r0 + i;
          const T* prow = pb + static_cast<long>(i) * Tn;
          T* row = ds + static_cast<long>(i) * cols;
          T dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int j = 0; j <= t; ++j) dot += prow[j] * row[j];
          for (int j = 0; j <= t; ++j) row[j] = prow[j] * (row[j] - dot);
          for (int j = t + 1; j < cols; ++j) row[j] = T(0);
        }
        // dQ = scale dS K ; dK += scale dS^T Q
        gemm(false, false, rows, hs, cols, scale, ds, cols, k, C3, T(0),
             dq + static_cast<long>(r0) * C3, C3);
        gemm(true, false, cols, hs, rows, scale, ds, cols, q + static_cast<long>(r0) * C3, C3, T(1),
             dk, C3);
      }
    }
  }
}

template void attentionForward<float>(float*, float*, const float*, int, int, int, int);
template void attentionForward<double>(double*, double*, const double*, int, int, int, int);
template void attentionBackward<float>(float*, float*, const float*, const float*, const float*,
                                       int, int, int, int);
template void attentionBackward<double>(double*, double*, const double*, const double*,
                                        const double*, int, int, int, int);

}  // namespace parascope::kernels
