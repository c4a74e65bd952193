#include "core/kernels/attention.h"

#include <cmath>

#include "core/kernels/blas.h"
#include "core/kernels/math.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
void attentionForward(T* out, T* att, const T* qkv, int B, int Tn, int C, int NH) {
  const trace::Span span("attention_forward", trace::Category::Compute);
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
#pragma omp simd reduction(max : maxv)
        for (int j = 1; j <= t; ++j) maxv = row[j] > maxv ? row[j] : maxv;
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
      gemm(false, false, Tn, hs, Tn, T(1), p, Tn, v, C3, T(0),
           out + static_cast<long>(b) * Tn * C + h * hs, C);
    }
  }
}

template <typename T>
void attentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int B,
                       int Tn, int C, int NH) {
  const trace::Span span("attention_backward", trace::Category::Compute);
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
      const T* p = att + (static_cast<long>(b) * NH + h) * Tn * Tn;
      const T* dout_h = dout + static_cast<long>(b) * Tn * C + h * hs;
      T* dp = scratch;
      // dP = dOut V^T ; dV = P^T dOut
      gemm(false, true, Tn, Tn, hs, T(1), dout_h, C, v, C3, T(0), dp, Tn);
      gemm(true, false, Tn, hs, Tn, T(1), p, Tn, dout_h, C, T(0), dbase + 2 * C + h * hs, C3);
      // Softmax backward in place: dS = P * (dP - rowsum(P * dP)), zero where masked.
      for (int t = 0; t < Tn; ++t) {
        const T* prow = p + static_cast<long>(t) * Tn;
        T* row = dp + static_cast<long>(t) * Tn;
        T dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int j = 0; j <= t; ++j) dot += prow[j] * row[j];
        for (int j = 0; j <= t; ++j) row[j] = prow[j] * (row[j] - dot);
        for (int j = t + 1; j < Tn; ++j) row[j] = T(0);
      }
      // dQ = scale dS K ; dK = scale dS^T Q
      gemm(false, false, Tn, hs, Tn, scale, dp, Tn, k, C3, T(0), dbase + h * hs, C3);
      gemm(true, false, Tn, hs, Tn, scale, dp, Tn, q, C3, T(0), dbase + C + h * hs, C3);
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
