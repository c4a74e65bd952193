#include "core/kernels/residual.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
void residualForward(T* out, const T* a, const T* b, long N) {
  trace::Span span("residual_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(3 * N));
  for (long i = 0; i < N; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void residualBackward(T* da, T* db, const T* dout, long N) {
  trace::Span span("residual_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(5 * N));  // dout read, da and db read and written
  for (long i = 0; i < N; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

template <typename T>
void biasForward(T* out, const T* bias, long rows, long C) {
  trace::Span span("bias_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2 * rows * C + C));
  for (long n = 0; n < rows; ++n) {
    T* o = out + n * C;
    for (long i = 0; i < C; ++i) o[i] = o[i] + bias[i];
  }
}

template <typename T>
void biasBackward(T* dbias, const T* dout, long rows, long C) {
  trace::Span span("bias_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(rows * C + 2 * C));
  for (long n = 0; n < rows; ++n) {
    const T* d = dout + n * C;
    for (long i = 0; i < C; ++i) dbias[i] = dbias[i] + d[i];
  }
}

template void residualForward<float>(float*, const float*, const float*, long);
template void residualForward<double>(double*, const double*, const double*, long);
template void residualBackward<float>(float*, float*, const float*, long);
template void residualBackward<double>(double*, double*, const double*, long);
template void biasForward<float>(float*, const float*, long, long);
template void biasForward<double>(double*, const double*, long, long);
template void biasBackward<float>(float*, const float*, long, long);
template void biasBackward<double>(double*, const double*, long, long);

}  // namespace parascope::kernels
