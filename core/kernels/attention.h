// Causal multi-head self-attention core (after the QKV projection, before the output one),
// memory-efficient: the T x T probabilities are never stored. Shapes: qkv (B, T, 3C) laid out
// [q | k | v], head h using columns h*hs .. (h+1)*hs of each, hs = C / NH; out (B, T, C);
// stats (B, NH, T, 2): each query row's largest score and the reciprocal of its exponentials'
// sum, all backward needs to recompute the row's probabilities with the forward's bits. Scores
// are scaled by 1/sqrt(hs).
//
// Both passes go head by head, and within a head by blocks of kAttentionRowBlock query rows, each
// against only the keys at or before its last row; the block's scores (and in backward their
// gradients) live in `scratch`, beside the head's keys and values copied once into the layouts
// its products read. The products are the kernel's own, register-blocked for these small shapes
// (a library's sgemm ran them at 86-164 GFLOP/s on one Zen 5 core, against 240 on large ones),
// and skip the tiles the causal mask empties: at the CPU's level, one multiply-add per term where
// the level has them (AVX2 and AVX-512 then give the same bits), a multiply and an add at the
// baseline.
#pragma once

#include "core/kernels/cpu_level.h"

namespace parascope::kernels {

// 64 rather than 32: half as many passes over each head's dK and dV and half as many tiles cut by
// the causal diagonal; GPT-mini's backward 6.0-6.3 -> 5.5-5.8 ms per step on one Zen 5 core.
inline constexpr int kAttentionRowBlock = 64;

// The scratch attentionForward (backward false) or attentionBackward takes for sequences of Tn
// tokens and heads of hs, in elements.
long attentionScratch(int Tn, int hs, bool backward);

// float runs at the CPU's level (cpu_level.h); double, for the gradient checks, at the baseline.
template <typename T>
void attentionForward(T* out, T* stats, T* scratch, const T* qkv, int B, int Tn, int C, int NH);

// dqkv is overwritten.
template <typename T>
void attentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* stats, int B,
                       int Tn, int C, int NH);

// The same at a given level (one this CPU runs), untraced: the tests compare the levels.
void attentionForward(float* out, float* stats, float* scratch, const float* qkv, int B, int Tn,
                      int C, int NH, CpuLevel level);
void attentionBackward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                       const float* stats, int B, int Tn, int C, int NH, CpuLevel level);

// A row block's probabilities in place over its scores (rows x cols, leading dimension ld; the
// block's row i is row first + i of the sequence and sees its keys 0 .. first + i): each row's
// exponentials relative to its maximum, times the reciprocal of their sum, zeros after its last
// key. Forward records each row's maximum and reciprocal in record (2 per row of the sequence,
// record[2 t] and record[2 t + 1]); backward gives them back in given and gets the forward's bits
// again; one of the two is null. Rows go by blocks of 16 elements, so ld is at least cols rounded
// up to a multiple of 16, and a row is written (zeros after its last key) up to that multiple
// where it is past cols. At `level` (cpu_level.h; attention runs the CPU's): sums are sixteen
// partial sums added in a fixed order, so every level computes the same bits.
void softmaxBlock(float* s, long ld, int first, int rows, int cols, float* record,
                  const float* given, CpuLevel level);

}  // namespace parascope::kernels
