// Residual connection: out = a + b. Its backward is the identity into both branches, so the
// model passes the same gradient on; residualBackward accumulates it into each input's grad.
// Shapes: all (N).
#pragma once

#include "core/kernels/cpu_level.h"

namespace parascope::kernels {

template <typename T>
void residualForward(T* out, const T* a, const T* b, long N);

// da += dout; db += dout.
template <typename T>
void residualBackward(T* da, T* db, const T* dout, long N);

// A bias added to every row, one kernel (one traced span) for all rows: out[n, :] += bias.
// Shapes: out (rows, C), bias (C).
template <typename T>
void biasForward(T* out, const T* bias, long rows, long C);

// Its gradient, summed over the rows in chunks (element_math.h: kColumnChunkRows):
// dbias += sum over n of dout[n, :].
template <typename T>
void biasBackward(T* dbias, const T* dout, long rows, long C);

// The same sum, inside another kernel's span (matmulBackward's bias). float runs at the CPU's
// level (cpu_level.h); double, for the gradient checks, at the baseline.
template <typename T>
void addColumnSums(T* sums, const T* rows, long n, long C);

// The same at a given level (one this CPU runs), untraced: the tests hold each level to the
// baseline's bits.
void addColumnSums(float* sums, const float* rows, long n, long C, CpuLevel level);

}  // namespace parascope::kernels
