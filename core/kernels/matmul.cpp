#include "core/kernels/matmul.h"

#include "core/kernels/blas.h"
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
  if (bias != nullptr) {
    for (int n = 0; n < N; ++n) {
      T* o = out + static_cast<long>(n) * OC;
      for (int j = 0; j < OC; ++j) o[j] = bias[j];
    }
  }
  gemm(false, true, N, OC, C, T(1), inp, C, weight, C, bias != nullptr ? T(1) : T(0), out, OC);
}

template <typename T>
void matmulBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                    int N, int C, int OC) {
  // Reads dout; for dinp, weight (writing dinp); for dweight, inp (adding into dweight); for
  // dbias, adds into it.
  trace::Span span("matmul_backward", trace::Category::Compute);
  span.bytes(
      arrayBytes<T>(static_cast<long>(N) * OC +
                    (dinp != nullptr ? static_cast<long>(OC) * C + static_cast<long>(N) * C : 0) +
                    (dweight != nullptr ? static_cast<long>(N) * C + 2L * OC * C : 0) +
                    (dbias != nullptr ? 2L * OC : 0)));
  if (dinp != nullptr) gemm(false, false, N, C, OC, T(1), dout, OC, weight, C, T(0), dinp, C);
  if (dweight != nullptr) gemm(true, false, OC, C, N, T(1), dout, OC, inp, C, T(1), dweight, C);
  if (dbias != nullptr) addColumnSums(dbias, dout, static_cast<long>(N), static_cast<long>(OC));
}

template void matmulForward<float>(float*, const float*, const float*, const float*, int, int, int);
template void matmulForward<double>(double*, const double*, const double*, const double*, int, int,
                                    int);
template void matmulBackward<float>(float*, float*, float*, const float*, const float*,
                                    const float*, int, int, int);
template void matmulBackward<double>(double*, double*, double*, const double*, const double*,
                                     const double*, int, int, int);

}  // namespace parascope::kernels
