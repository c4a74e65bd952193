#include "core/tensor/dtype.h"

#include <string>

#include "core/common/error.h"

namespace parascope {

std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
  }
  return "?";
}

DType parseDType(std::string_view name) {
  if (name == "f32" || name == "fp32" || name == "float32") return DType::F32;
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  if (name == "f16" || name == "fp16" || name == "float16") return DType::F16;
  if (name == "i32" || name == "int32") return DType::I32;
  if (name == "i64" || name == "int64") return DType::I64;
  throw UserError("unknown data type '" + std::string(name) +
                  "'; allowed: f32 (fp32, float32), bf16 (bfloat16), f16 (fp16, float16), "
                  "i32 (int32), i64 (int64)");
}

std::uint16_t floatToF16(float f) {
  std::uint32_t x = floatBits(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // infinity or NaN (NaN stays quiet NaN)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u));
  }
  if (x >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 -> inf
  if (x < 0x38800000u) {                // below 2^-14: f16 subnormal (units of 2^-24) or zero
    if (x <= 0x33000000u) return sign;  // <= 2^-25 rounds (to even) to zero
    const std::uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(x >> 23);
    const std::uint32_t half = 1u << (shift - 1);
    std::uint32_t r = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = (x - 0x38000000u) >> 13;  // rebias exponent 127 -> 15
  const std::uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // a carry rolls into the exponent
  return static_cast<std::uint16_t>(sign | r);
}

float f16ToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 0x1p-24f;  // exact: subnormal or zero
    return sign ? -v : v;
  }
  if (exp == 31) return bitsFloat(sign | 0x7f800000u | (mant << 13));
  return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

void convertFromFloat(std::span<const float> in, std::uint16_t* out, DType to) {
  if (to == DType::BF16) {
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = floatToBf16(in[i]);
  } else {
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = floatToF16(in[i]);
  }
}

void convertToFloat(const std::uint16_t* in, std::span<float> out, DType from) {
  if (from == DType::BF16) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = bf16ToFloat(in[i]);
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = f16ToFloat(in[i]);
  }
}

void roundTrip(std::span<float> values, DType through) {
  if (through == DType::BF16) {
    for (float& v : values) v = bf16ToFloat(floatToBf16(v));
  } else if (through == DType::F16) {
    for (float& v : values) v = f16ToFloat(floatToF16(v));
  }
}

}  // namespace parascope
