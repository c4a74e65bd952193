// Element-wise reductions over several source buffers, the arithmetic of every reducing
// collective. Sources are combined in the order given (rank order), bf16/f16 in f32 and rounded
// once at the end, integers with wrap-around. dst may alias any one source exactly.
#pragma once

#include <cstddef>

#include "core/comm/comm_types.h"

namespace parascope {

// dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrc-1][i]; Avg then divides by `divisor`
// (the group size; integers truncate toward zero). nsrc >= 1.
void reduceBuffers(void* dst, const void* const* srcs, int nsrc, std::size_t count, DType t,
                   ReduceOp op, int divisor);
// The same result written to every one of ndst destinations (each may alias one source).
void reduceBuffers(void* const* dsts, int ndst, const void* const* srcs, int nsrc,
                   std::size_t count, DType t, ReduceOp op, int divisor);

// Avg applied after a Sum computed elsewhere (MPI and the like): buf[i] /= divisor.
void divideBuffer(void* buf, std::size_t count, DType t, int divisor);

}  // namespace parascope
