// Element types of tensors and communication buffers, and exact conversions between them.
// bf16 and f16 are stored as raw 16-bit patterns; conversion from f32 rounds to nearest, ties
// to even (as PyTorch and the hardware do), keeps NaN a NaN and overflows f16 to infinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace parascope {

enum class DType : std::uint8_t { F32, BF16, F16, I32, I64 };

// Bytes per element.
constexpr std::size_t dtypeSize(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::BF16: return 2;
    case DType::F16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
  }
  return 0;
}

constexpr bool isFloating(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16;
}

// Lower-case names as used in configs and safetensors ("f32"/"F32" style is mapped by callers).
std::string_view dtypeName(DType t);
// Accepts f32/float32/fp32, bf16/bfloat16, f16/float16/fp16, i32/int32, i64/int64. Throws
// UserError naming the accepted spellings otherwise.
DType parseDType(std::string_view name);

inline std::uint32_t floatBits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsFloat(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t floatToBf16(float f) {
  std::uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
inline float bf16ToFloat(std::uint16_t h) {
  return bitsFloat(static_cast<std::uint32_t>(h) << 16);
}

std::uint16_t floatToF16(float f);
float f16ToFloat(std::uint16_t h);

// Bulk conversions between a float array and a 16-bit array of the given type (BF16 or F16).
void convertFromFloat(std::span<const float> in, std::uint16_t* out, DType to);
void convertToFloat(const std::uint16_t* in, std::span<float> out, DType from);
// Rounds every element through the given floating type and back (identity for F32): the value a
// low-precision tensor would hold.
void roundTrip(std::span<float> values, DType through);

}  // namespace parascope
