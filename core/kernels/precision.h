// Element-wise kernels for mixed precision: bulk conversions between f32 and 16-bit (bf16 / fp16)
// buffers, rounded accumulation into them, conversion between any two floating types, and sums
// of squares of 16-bit gradients. Arithmetic is f32 on converted inputs; results are rounded to
// nearest, ties to even, exactly as dtype.h's scalar conversions (fp16 through the CPU's F16C
// instructions where it has them). No allocation here beyond a fixed stack buffer.
#pragma once

#include <cstdint>

#include "core/tensor/dtype.h"

namespace parascope::kernels {

// out = in widened to f32 / narrowed to `type` (BF16 or F16). Shapes: in, out (N).
void widen(const std::uint16_t* in, float* out, long N, DType from);
void narrow(const float* in, std::uint16_t* out, long N, DType to);
// Every element replaced by the nearest value of `type` (F32: unchanged). Shape: x (N).
void roundTo(float* x, long N, DType type);
// acc = round(acc + add), acc in `type` (BF16 or F16). Shapes: acc, add (N).
void accumulateRounded(std::uint16_t* acc, const float* add, long N, DType type);
// The same with both operands in `type`; for F32 a plain acc += add.
void accumulate(void* acc, const void* add, long N, DType type);
// out = in converted from one floating type to another (a copy when they are the same).
void convertElements(const void* in, DType from, void* out, DType to, long N);
// Sum of squares in double of a buffer of any floating type; inf or NaN if any element is.
double sumOfSquaresAny(const void* x, long N, DType type);

}  // namespace parascope::kernels
