#include "core/kernels/matmul.h"

#include "core/kernels/blas.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
void matmulForward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC) {
  const trace::Span span("matmul_forward", trace::Category::Compute);
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
  const trace::Span span("matmul_backward", trace::Category::Compute);
  if (dinp != nullptr) gemm(false, false, N, C, OC, T(1), dout, OC, weight, C, T(0), dinp, C);
  if (dweight != nullptr) gemm(true, false, OC, C, N, T(1), dout, OC, inp, C, T(1), dweight, C);
  if (dbias != nullptr) {
    for (int n = 0; n < N; ++n) {
      const T* d = dout + static_cast<long>(n) * OC;
      for (int j = 0; j < OC; ++j) dbias[j] += d[j];
    }
  }
}

void setBlasThreads(int n) {
  openblas_set_num_threads(n);
}

template void matmulForward<float>(float*, const float*, const float*, const float*, int, int, int);
template void matmulForward<double>(double*, const double*, const double*, const double*, int, int,
                                    int);
template void matmulBackward<float>(float*, float*, float*, const float*, const float*,
                                    const float*, int, int, int);
template void matmulBackward<double>(double*, double*, double*, const double*, const double*,
                                     const double*, int, int, int);

}  // namespace parascope::kernels
