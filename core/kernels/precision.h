// Element-wise kernels for mixed precision: rounded accumulation into 16-bit (bf16 / fp16)
// buffers, conversion between any two floating types, and sums of squares of 16-bit gradients.
// Arithmetic is f32 on converted inputs; results are rounded to nearest, ties to even (dtype.h).
// No allocation here beyond a fixed stack buffer.
#pragma once

#include <cstdint>

#include "core/tensor/dtype.h"

namespace parascope::kernels {

// acc = round(acc + add), acc in `type` (BF16 or F16). Shapes: acc, add (N).
void accumulateRounded(std::uint16_t* acc, const float* add, long N, DType type);
// The same with both operands in `type`; for F32 a plain acc += add.
void accumulate(void* acc, const void* add, long N, DType type);
// out = in converted from one floating type to another (a copy when they are the same).
void convertElements(const void* in, DType from, void* out, DType to, long N);
// Sum of squares in double of a buffer of any floating type; inf or NaN if any element is.
double sumOfSquaresAny(const void* x, long N, DType type);

}  // namespace parascope::kernels
