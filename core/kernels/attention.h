// Causal multi-head self-attention core (after the QKV projection, before the output one),
// memory-efficient: the T x T probabilities are never stored. Shapes: qkv (B, T, 3C) laid out
// [q | k | v], head h using columns h*hs .. (h+1)*hs of each, hs = C / NH; out (B, T, C);
// stats (B, NH, T, 2): each query row's largest score and the reciprocal of its exponentials'
// sum, all backward needs to recompute the row's probabilities with the forward's bits. Scores
// are scaled by 1/sqrt(hs).
//
// Both passes go by blocks of kAttentionRowBlock query rows, each against only the keys at or
// before its last row: the block's scores (and in backward their gradients) live in `scratch`,
// attentionScratch elements, and its products go through BLAS.
#pragma once

#include "core/kernels/cpu_level.h"

namespace parascope::kernels {

inline constexpr int kAttentionRowBlock = 32;

// The scratch attentionForward (backward false) or attentionBackward takes, in elements: one row
// block's scores against every key, and in backward their gradients beside them.
long attentionScratch(int Tn, bool backward);

template <typename T>
void attentionForward(T* out, T* stats, T* scratch, const T* qkv, int B, int Tn, int C, int NH);

// dqkv is overwritten.
template <typename T>
void attentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* stats, int B,
                       int Tn, int C, int NH);

// A softmax row's exponentials relative to its maximum `maxv`, in place over row[0, n), and
// their sum, at `level` (cpu_level.h; attention runs the CPU's). The sum is sixteen partial sums
// added in a fixed order, so every level computes the same bits.
float softmaxExpSum(float* row, int n, float maxv, CpuLevel level);

}  // namespace parascope::kernels
