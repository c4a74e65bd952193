#include "core/kernels/precision.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "core/kernels/grad_clip.h"

namespace parascope::kernels {

namespace {
constexpr long kChunk = 1024;  // elements converted through the stack at a time
}  // namespace

void accumulateRounded(std::uint16_t* acc, const float* add, long N, DType type) {
  float buf[kChunk];
  for (long at = 0; at < N; at += kChunk) {
    const long n = std::min(kChunk, N - at);
    convertToFloat(acc + at, {buf, static_cast<std::size_t>(n)}, type);
    for (long i = 0; i < n; ++i) buf[i] += add[at + i];
    convertFromFloat({buf, static_cast<std::size_t>(n)}, acc + at, type);
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
    convertToFloat(b + at, {buf, static_cast<std::size_t>(n)}, type);
    accumulateRounded(a + at, buf, n, type);
  }
}

void convertElements(const void* in, DType from, void* out, DType to, long N) {
  if (from == to) {
    std::memcpy(out, in, static_cast<std::size_t>(N) * dtypeSize(from));
  } else if (from == DType::F32) {
    convertFromFloat({static_cast<const float*>(in), static_cast<std::size_t>(N)},
                     static_cast<std::uint16_t*>(out), to);
  } else if (to == DType::F32) {
    convertToFloat(static_cast<const std::uint16_t*>(in),
                   {static_cast<float*>(out), static_cast<std::size_t>(N)}, from);
  } else {  // bf16 <-> fp16 through f32
    float buf[kChunk];
    const auto* a = static_cast<const std::uint16_t*>(in);
    auto* b = static_cast<std::uint16_t*>(out);
    for (long at = 0; at < N; at += kChunk) {
      const long n = std::min(kChunk, N - at);
      convertToFloat(a + at, {buf, static_cast<std::size_t>(n)}, from);
      convertFromFloat({buf, static_cast<std::size_t>(n)}, b + at, to);
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
    convertToFloat(a + at, {buf, static_cast<std::size_t>(n)}, type);
    for (long i = 0; i < n; ++i) s += static_cast<double>(buf[i]) * static_cast<double>(buf[i]);
  }
  return s;
}

}  // namespace parascope::kernels
