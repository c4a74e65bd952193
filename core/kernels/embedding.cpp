#include "core/kernels/embedding.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

template <typename T>
void embeddingForward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, int B, int Tn,
                      int C) {
  // Reads the tokens, and per token its wte and wpe rows; writes out.
  trace::Span span("embedding_forward", trace::Category::Compute);
  const long N = static_cast<long>(B) * Tn;
  span.bytes(arrayBytes<T>(3 * N * C) + 4 * N);
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
  // Reads dout and the tokens; adds into each token's dwte and dwpe rows.
  trace::Span span("embedding_backward", trace::Category::Compute);
  const long N = static_cast<long>(B) * Tn;
  span.bytes(arrayBytes<T>(5 * N * C) + 4 * N);
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

template <typename T>
void embeddingPartForward(T* out, const std::int32_t* tokens, const T* wtePart, int N, int first,
                          int part, int C) {
  // Reads the tokens and the rows of this part; writes out.
  trace::Span span("embedding_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(2L * N * C) + 4L * N);
  for (int n = 0; n < N; ++n) {
    T* row = out + static_cast<long>(n) * C;
    const int local = tokens[n] - first;
    const bool mine = local >= 0 && local < part;
    for (int i = 0; i < C; ++i) row[i] = mine ? wtePart[static_cast<long>(local) * C + i] : T(0);
  }
}

template <typename T>
void embeddingPartBackward(T* dwtePart, const T* dout, const std::int32_t* tokens, int N, int first,
                           int part, int C) {
  // Reads dout and the tokens; adds into this part's rows.
  trace::Span span("embedding_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(3L * N * C) + 4L * N);
  for (int n = 0; n < N; ++n) {
    const int local = tokens[n] - first;
    if (local < 0 || local >= part) continue;
    T* de = dwtePart + static_cast<long>(local) * C;
    const T* d = dout + static_cast<long>(n) * C;
    for (int i = 0; i < C; ++i) de[i] = de[i] + d[i];
  }
}

template <typename T>
void positionForward(T* out, const T* wpe, int rows, int row0, int Tn, int C) {
  trace::Span span("position_embedding_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(3L * rows * C));  // out read and written, wpe read
  for (int i = 0; i < rows; ++i) {
    T* o = out + static_cast<long>(i) * C;
    const T* p = wpe + static_cast<long>((row0 + i) % Tn) * C;
    for (int k = 0; k < C; ++k) o[k] = o[k] + p[k];
  }
}

template <typename T>
void positionBackward(T* dwpe, const T* dout, int rows, int row0, int Tn, int C) {
  trace::Span span("position_embedding_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(3L * rows * C));  // dout read, dwpe read and written
  for (int i = 0; i < rows; ++i) {
    T* dp = dwpe + static_cast<long>((row0 + i) % Tn) * C;
    const T* d = dout + static_cast<long>(i) * C;
    for (int k = 0; k < C; ++k) dp[k] = dp[k] + d[k];
  }
}

template void embeddingPartForward<float>(float*, const std::int32_t*, const float*, int, int, int,
                                          int);
template void embeddingPartBackward<float>(float*, const float*, const std::int32_t*, int, int, int,
                                           int);
template void positionForward<float>(float*, const float*, int, int, int, int);
template void positionBackward<float>(float*, const float*, int, int, int, int);
template void embeddingPartForward<double>(double*, const std::int32_t*, const double*, int, int,
                                           int, int);
template void embeddingPartBackward<double>(double*, const double*, const std::int32_t*, int, int,
                                            int, int);
template void positionForward<double>(double*, const double*, int, int, int, int);
template void positionBackward<double>(double*, const double*, int, int, int, int);

template void embeddingForward<float>(float*, const std::int32_t*, const float*, const float*, int,
                                      int, int);
template void embeddingForward<double>(double*, const std::int32_t*, const double*, const double*,
                                       int, int, int);
template void embeddingBackward<float>(float*, float*, const float*, const std::int32_t*, int, int,
                                       int);
template void embeddingBackward<double>(double*, double*, const double*, const std::int32_t*, int,
                                        int, int);

}  // namespace parascope::kernels
