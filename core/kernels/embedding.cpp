#include "core/kernels/embedding.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
void embeddingForward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, int B, int Tn,
                      int C) {
  const trace::Span span("embedding_forward", trace::Category::Compute);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < Tn; ++t) {
      T* o = out + (static_cast<long>(b) * Tn + t) * C;
      const T* e = wte + static_cast<long>(tokens[b * Tn + t]) * C;
      const T* p = wpe + static_cast<long>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = e[i] + p[i];
    }
  }
}

template <typename T>
void embeddingBackward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, int B, int Tn,
                       int C) {
  const trace::Span span("embedding_backward", trace::Category::Compute);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < Tn; ++t) {
      const T* d = dout + (static_cast<long>(b) * Tn + t) * C;
      T* de = dwte + static_cast<long>(tokens[b * Tn + t]) * C;
      T* dp = dwpe + static_cast<long>(t) * C;
      for (int i = 0; i < C; ++i) {
        de[i] += d[i];
        dp[i] += d[i];
      }
    }
  }
}

template void embeddingForward<float>(float*, const std::int32_t*, const float*, const float*, int,
                                      int, int);
template void embeddingForward<double>(double*, const std::int32_t*, const double*, const double*,
                                       int, int, int);
template void embeddingBackward<float>(float*, float*, const float*, const std::int32_t*, int, int,
                                       int);
template void embeddingBackward<double>(double*, double*, const double*, const std::int32_t*, int,
                                        int, int);

}  // namespace parascope::kernels
