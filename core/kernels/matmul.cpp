#include "core/kernels/matmul.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/kernels/blas.h"
#include "core/kernels/element_math.h"
#include "core/kernels/residual.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
void matmulForward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC) {
  // Reads inp, weight and bias; writes out.
  trace::Span span("matmul_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(static_cast<long>(N) * C + static_cast<long>(OC) * C +
                           (bias != nullptr ? OC : 0) + static_cast<long>(N) * OC));
  if constexpr (std::is_same_v<T, float>) {
    if (bias != nullptr) return sgemmBias(N, OC, C, inp, weight, bias, out);
  }
  if (bias != nullptr) {
    for (int n = 0; n < N; ++n) {
      T* o = out + static_cast<long>(n) * OC;
      for (int j = 0; j < OC; ++j) o[j] = bias[j];
    }
  }
  gemm(false, true, N, OC, C, T(1), inp, C, weight, C, bias != nullptr ? T(1) : T(0), out, OC);
}

namespace {

// dweight += dout^T inp, or = as `write` says (dout N x OC, inp N x C). Where dout's rows are a
// multiple of 128 elements apart (512 bytes of float), the library's product reads dout^T's
// columns through a few cache sets that alias: GPT-mini's MLP weight gradient (OC 1024) ran at
// 181 GFLOP/s against 227 with rows 16 floats further apart, its QKV one (OC 768) at 197-207
// against 210-220, and OC 384 5-8% slower (one Zen 5 core; 20-25% for every multiple of 1024
// floats measured, up to 4096; OC 128 and 256, the whole of dout in cache, the same either way).
// There, up to the widest measured, it reads copies of 256 rows at a time so spaced, in a buffer
// each thread keeps (1 MiB for an OC of 1024), the copy costing a tenth of what it saves; a head's
// vocabulary of tens of thousands would keep tens of megabytes there. The bias gradient (dbias,
// where not null) is summed there from each block while it is in cache; blocks are whole chunks
// of the sums (kColumnChunkRows), so its bits are those of one pass over all rows. With no rows,
// the product of no terms: dweight as `write` leaves it.
template <typename T>
void weightGradient(T* dweight, T* dbias, const T* dout, const T* inp, int N, int C, int OC,
                    WeightGradient write) {
  // What dweight holds counts once, in the first product; with beta 0 BLAS reads none of it.
  const T first = write == WeightGradient::Add ? T(1) : T(0);
  if (OC % 128 != 0 || OC > 4096 || N == 0) {
    gemm(true, false, OC, C, N, T(1), dout, OC, inp, C, first, dweight, C);
    if (dbias != nullptr) addColumnSums(dbias, dout, static_cast<long>(N), static_cast<long>(OC));
    return;
  }
  constexpr int kRows = 256;
  static_assert(kRows % kColumnChunkRows == 0);
  const long spaced = OC + 16;
  thread_local std::vector<T> copy;
  copy.resize(std::max(copy.size(), static_cast<std::size_t>(kRows * spaced)));
  for (int n0 = 0; n0 < N; n0 += kRows) {
    const int rows = std::min(kRows, N - n0);
    for (int n = 0; n < rows; ++n) {
      const T* row = dout + static_cast<long>(n0 + n) * OC;
      std::copy(row, row + OC, copy.data() + n * spaced);
    }
    if (dbias != nullptr) addColumnSums(dbias, dout + static_cast<long>(n0) * OC, rows, OC);
    gemm(true, false, OC, C, rows, T(1), copy.data(), static_cast<int>(spaced),
         inp + static_cast<long>(n0) * C, C, n0 == 0 ? first : T(1), dweight, C);
  }
}

}  // namespace

template <typename T>
void matmulBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                    int N, int C, int OC, WeightGradient write) {
  // Reads dout; for dinp, weight (writing dinp); for dweight, inp (adding into dweight, or
  // writing it); for dbias, adds into it.
  trace::Span span("matmul_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(
      static_cast<long>(N) * OC +
      (dinp != nullptr ? static_cast<long>(OC) * C + static_cast<long>(N) * C : 0) +
      (dweight != nullptr
           ? static_cast<long>(N) * C + (write == WeightGradient::Add ? 2L : 1L) * OC * C
           : 0) +
      (dbias != nullptr ? 2L * OC : 0)));
  if (dinp != nullptr) gemm(false, false, N, C, OC, T(1), dout, OC, weight, C, T(0), dinp, C);
  if (dweight != nullptr) {
    weightGradient(dweight, dbias, dout, inp, N, C, OC, write);
  } else if (dbias != nullptr) {
    addColumnSums(dbias, dout, static_cast<long>(N), static_cast<long>(OC));
  }
}

template void matmulForward<float>(float*, const float*, const float*, const float*, int, int, int);
template void matmulForward<double>(double*, const double*, const double*, const double*, int, int,
                                    int);
template void matmulBackward<float>(float*, float*, float*, const float*, const float*,
                                    const float*, int, int, int, WeightGradient);
template void matmulBackward<double>(double*, double*, double*, const double*, const double*,
                                     const double*, int, int, int, WeightGradient);

}  // namespace parascope::kernels
