#include "core/kernels/attention.h"

#include <algorithm>
#include <cmath>

#include "core/kernels/blas.h"
#include "core/kernels/math.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {

// One row block's shape: its rows and the keys they see.
struct RowBlock {
  int r0, rows, cols;
  RowBlock(int first, int Tn)
      : r0(first), rows(std::min(kAttentionRowBlock, Tn - first)), cols(first + rows) {}
};

// A row's exponentials relative to its maximum, in place over [0, n), and their sum. The sum is
// sixteen partial sums, of the elements j = i (mod 16), added pairwise in a fixed order at the
// end: the loop vectorises (a single running sum would not, its order being fixed) and every
// vector width adds the same numbers in the same order, so every CPU level computes the same bits.
template <typename T>
[[gnu::always_inline]] inline T expAndSumLoop(T* row, int n, T maxv) {
  constexpr int kLanes = 16;
  T acc[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int i = 0; i < kLanes; ++i) {
      const T e = fastExp(row[j + i] - maxv);
      row[j + i] = e;
      acc[i] += e;
    }
  }
  for (int i = 0; j + i < n; ++i) {
    const T e = fastExp(row[j + i] - maxv);
    row[j + i] = e;
    acc[i] += e;
  }
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) acc[i] += acc[i + w];
  return acc[0];
}

float expAndSumBaseline(float* row, int n, float maxv) {
  return expAndSumLoop(row, n, maxv);
}
#if defined(__x86_64__)
PARASCOPE_TARGET_AVX2 float expAndSumAvx2(float* row, int n, float maxv) {
  return expAndSumLoop(row, n, maxv);
}
PARASCOPE_TARGET_AVX512 float expAndSumAvx512(float* row, int n, float maxv) {
  return expAndSumLoop(row, n, maxv);
}
#endif

float expAndSum(float* row, int n, float maxv) {
  static const CpuLevel level = cpuLevel();
  return softmaxExpSum(row, n, maxv, level);
}
double expAndSum(double* row, int n, double maxv) {
  return expAndSumLoop(row, n, maxv);
}

// The block's probabilities in place over its scores (rows x cols, leading dimension cols): each
// row's exponentials relative to its maximum, times the reciprocal of their sum, zeros past the
// diagonal. Forward finds each row's maximum and reciprocal and records them (record, 2 per row of
// the sequence); backward gives them back (given) and gets the forward's bits again.
template <typename T>
void blockProbabilities(T* s, const RowBlock& blk, T* record, const T* given) {
  for (int i = 0; i < blk.rows; ++i) {
    const int t = blk.r0 + i;
    T* row = s + static_cast<long>(i) * blk.cols;
    T maxv = given ? given[2L * t] : row[0];
    if (!given) {
      // fmax: Clang vectorises a maxnum reduction, not a compare-and-select one.
#pragma omp simd reduction(max : maxv)
      for (int j = 1; j <= t; ++j) maxv = std::fmax(maxv, row[j]);
    }
    const T sum = expAndSum(row, t + 1, maxv);
    const T inv = given ? given[2L * t + 1] : T(1) / sum;
    for (int j = 0; j <= t; ++j) row[j] *= inv;
    for (int j = t + 1; j < blk.cols; ++j) row[j] = T(0);
    if (record) {
      record[2L * t] = maxv;
      record[2L * t + 1] = inv;
    }
  }
}

}  // namespace

float softmaxExpSum(float* row, int n, float maxv, CpuLevel level) {
#if defined(__x86_64__)
  if (level == CpuLevel::Avx512) return expAndSumAvx512(row, n, maxv);
  if (level == CpuLevel::Avx2) return expAndSumAvx2(row, n, maxv);
#else
  (void)level;
#endif
  return expAndSumBaseline(row, n, maxv);
}

long attentionScratch(int Tn, bool backward) {
  return (backward ? 2L : 1L) * std::min(kAttentionRowBlock, Tn) * Tn;
}

template <typename T>
void attentionForward(T* out, T* stats, T* scratch, const T* qkv, int B, int Tn, int C, int NH) {
  // Reads qkv; writes out and the row statistics (the scores stay in cache).
  trace::Span span("attention_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(static_cast<long>(B) * Tn * (4L * C + 2L * NH)));
  const ProductSignals held;  // once for its many small products
  const int hs = C / NH;
  const int C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  for (int b = 0; b < B; ++b) {
    const T* base = qkv + static_cast<long>(b) * Tn * C3;
    for (int h = 0; h < NH; ++h) {
      const T* q = base + h * hs;
      const T* k = base + C + h * hs;
      const T* v = base + 2 * C + h * hs;
      T* rowStats = stats + (static_cast<long>(b) * NH + h) * Tn * 2;
      for (int r0 = 0; r0 < Tn; r0 += kAttentionRowBlock) {
        const RowBlock blk(r0, Tn);
        // S = scale Q_blk K^T over the keys the block sees; then P V.
        gemm(false, true, blk.rows, blk.cols, hs, scale, q + static_cast<long>(r0) * C3, C3, k, C3,
             T(0), scratch, blk.cols);
        blockProbabilities(scratch, blk, rowStats, static_cast<const T*>(nullptr));
        gemm(false, false, blk.rows, hs, blk.cols, T(1), scratch, blk.cols, v, C3, T(0),
             out + (static_cast<long>(b) * Tn + r0) * C + h * hs, C);
      }
    }
  }
}

template <typename T>
void attentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* stats, int B,
                       int Tn, int C, int NH) {
  // Reads dout, qkv and the statistics; writes dqkv (the blocks' scores stay in cache).
  trace::Span span("attention_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(static_cast<long>(B) * Tn * (7L * C + 2L * NH)));
  const ProductSignals held;  // once for its many small products
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
      const T* rowStats = stats + (static_cast<long>(b) * NH + h) * Tn * 2;
      const T* dout_h = dout + static_cast<long>(b) * Tn * C + h * hs;
      // dK and dV gather contributions from every row block below them.
      for (int t = 0; t < Tn; ++t) {
        std::fill(dk + static_cast<long>(t) * C3, dk + static_cast<long>(t) * C3 + hs, T(0));
        std::fill(dv + static_cast<long>(t) * C3, dv + static_cast<long>(t) * C3 + hs, T(0));
      }
      for (int r0 = 0; r0 < Tn; r0 += kAttentionRowBlock) {
        const RowBlock blk(r0, Tn);
        const int rows = blk.rows, cols = blk.cols;
        const T* doutb = dout_h + static_cast<long>(r0) * C;
        const T* qb = q + static_cast<long>(r0) * C3;
        T* p = scratch;                                    // rows x cols, leading dimension cols
        T* ds = scratch + static_cast<long>(rows) * cols;  // the same
        // The forward's probabilities again: its product, then its exponentials and reciprocal.
        gemm(false, true, rows, cols, hs, scale, qb, C3, k, C3, T(0), p, cols);
        blockProbabilities(p, blk, static_cast<T*>(nullptr), rowStats);
        // dP = dOut V^T ; dV += P^T dOut
        gemm(false, true, rows, cols, hs, T(1), doutb, C, v, C3, T(0), ds, cols);
        gemm(true, false, cols, hs, rows, T(1), p, cols, doutb, C, T(1), dv, C3);
        // Softmax backward in place: dS = P * (dP - rowsum(P * dP)), zero where masked.
        for (int i = 0; i < rows; ++i) {
          const int t = r0 + i;
          const T* prow = p + static_cast<long>(i) * cols;
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
        gemm(true, false, cols, hs, rows, scale, ds, cols, qb, C3, T(1), dk, C3);
      }
    }
  }
}

template void attentionForward<float>(float*, float*, float*, const float*, int, int, int, int);
template void attentionForward<double>(double*, double*, double*, const double*, int, int, int,
                                       int);
template void attentionBackward<float>(float*, float*, const float*, const float*, const float*,
                                       int, int, int, int);
template void attentionBackward<double>(double*, double*, const double*, const double*,
                                        const double*, int, int, int, int);

}  // namespace parascope::kernels
