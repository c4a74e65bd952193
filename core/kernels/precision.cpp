#include "core/kernels/precision.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/kernels/element_math.h"
#include "core/kernels/grad_clip.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace parascope::kernels {

namespace {
constexpr long kChunk = 1024;  // elements converted through the stack at a time
#if defined(__F16C__)
// Hardware conversion rounds to nearest even, as floatToF16 does (overflow to inf, subnormals).
constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
#endif
}  // namespace

void widen(const std::uint16_t* in, float* out, long N, DType from) {
  if (from == DType::BF16) {
    for (long i = 0; i < N; ++i) out[i] = bf16ToFloat(in[i]);
    return;
  }
  long i = 0;
#if defined(__F16C__)
  for (; i + 8 <= N; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < N; ++i) out[i] = f16ToFloat(in[i]);
}

void narrow(const float* in, std::uint16_t* out, long N, DType to) {
  if (to == DType::BF16) {
#pragma omp simd
    for (long i = 0; i < N; ++i) out[i] = static_cast<std::uint16_t>(bf16Upper(in[i]) >> 16);
    return;
  }
  long i = 0;
#if defined(__F16C__)
  for (; i + 8 <= N; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRne);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
#endif
  for (; i < N; ++i) out[i] = floatToF16(in[i]);
}

void roundTo(float* x, long N, DType type) {
  if (type == DType::F32) return;
  if (type == DType::BF16) {
#pragma omp simd
    for (long i = 0; i < N; ++i) x[i] = std::bit_cast<float>(bf16Upper(x[i]));
    return;
  }
  long i = 0;
#if defined(__F16C__)
  for (; i + 8 <= N; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRne)));
  }
#endif
  for (; i < N; ++i) x[i] = f16ToFloat(floatToF16(x[i]));
}

void accumulateRounded(std::uint16_t* acc, const float* add, long N, DType type) {
  float buf[kChunk];
  for (long at = 0; at < N; at += kChunk) {
    const long n = std::min(kChunk, N - at);
    widen(acc + at, buf, n, type);
    for (long i = 0; i < n; ++i) buf[i] += add[at + i];
    narrow(buf, acc + at, n, type);
  }
}

void accumulate(void* acc, const void* add, long N, DType type) {
  if (type == DType::F32) {
    float* a = static_cast<float*>(acc);
    const float* b = static_cast<const float*>(add);
    for (long i = 0; i < N; ++i) a[i] += b[i];
    return;
  }
  auto* a = static_cast<std::uint16_t*>(acc);
  const auto* b = static_cast<const std::uint16_t*>(add);
  float buf[kChunk];
  for (long at = 0; at < N; at += kChunk) {
    const long n = std::min(kChunk, N - at);
    widen(b + at, buf, n, type);
    accumulateRounded(a + at, buf, n, type);
  }
}

void convertElements(const void* in, DType from, void* out, DType to, long N) {
  if (from == to) {
    std::memcpy(out, in, static_cast<std::size_t>(N) * dtypeSize(from));
  } else if (from == DType::F32) {
    narrow(static_cast<const float*>(in), static_cast<std::uint16_t*>(out), N, to);
  } else if (to == DType::F32) {
    widen(static_cast<const std::uint16_t*>(in), static_cast<float*>(out), N, from);
  } else {  // bf16 <-> fp16 through f32
    float buf[kChunk];
    const auto* a = static_cast<const std::uint16_t*>(in);
    auto* b = static_cast<std::uint16_t*>(out);
    for (long at = 0; at < N; at += kChunk) {
      const long n = std::min(kChunk, N - at);
      widen(a + at, buf, n, from);
      narrow(buf, b + at, n, to);
    }
  }
}

double sumOfSquaresAny(const void* x, long N, DType type) {
  if (type == DType::F32) return sumOfSquares(static_cast<const float*>(x), N);
  const auto* a = static_cast<const std::uint16_t*>(x);
  float buf[kChunk];
  double s = 0;
  for (long at = 0; at < N; at += kChunk) {
    const long n = std::min(kChunk, N - at);
    widen(a + at, buf, n, type);
    for (long i = 0; i < n; ++i) s += static_cast<double>(buf[i]) * static_cast<double>(buf[i]);
  }
  return s;
}

}  // namespace parascope::kernels
