// Fused softmax + cross-entropy over the last dimension.
// Shapes: logits (N, V), targets (N) int32 in [0, V), losses (N) = -log softmax(logits)[target],
// probs (N, V) softmax, saved for the backward pass (may alias logits: the forward reads each
// row before it writes it).
#pragma once

#include <cstdint>

#include "core/kernels/cpu_level.h"

namespace parascope::kernels {

// float runs at the CPU's level (cpu_level.h); double, for the gradient checks, at the baseline.
template <typename T>
void crossEntropyForward(T* losses, T* probs, const T* logits, const std::int32_t* targets, int N,
                         int V);
// The same at a given level (one this CPU runs), untraced: the tests hold each level to the
// baseline's bits.
void crossEntropyForward(float* losses, float* probs, const float* logits,
                         const std::int32_t* targets, int N, int V, CpuLevel level);

// dlogits[n, v] = (probs[n, v] - [v == target]) * dlosses[n]; overwritten, may alias probs.
template <typename T>
void crossEntropyBackward(T* dlogits, const T* probs, const std::int32_t* targets, const T* dlosses,
                          int N, int V);

// The vocabulary-split cross-entropy of tensor parallelism: a rank holds the logits of the
// vocabulary rows [first, first + V) of each token, (N, V); the group combines the per-row
// quantities between the passes (maxima with Max, sums with Sum). Each pass is a span of its own
// (cross_entropy_max, cross_entropy_exp, cross_entropy_normalize).
// 1. maxima (N): each row's largest logit here.
void crossEntropyPartMax(float* maxima, const float* logits, int N, int V);
// 2. With the group's maxima: probs = exp(logits - max) in place (probs may alias logits);
//    sums (2, N): each row's sum of them, then its target's logit (0 where the target is
//    another rank's).
void crossEntropyPartExp(float* sums, float* probs, const float* logits, const float* maxima,
                         const std::int32_t* targets, int N, int V, int first);
// 3. With the group's sums: probs normalised in place, losses (N) = log(sum) - (target - max).
void crossEntropyPartFinish(float* losses, float* probs, const float* sums, const float* maxima,
                            int N, int V);
// Backward in place: dlogits = (probs - [v == target]) * weight, weight the loss weight of every
// target.
void crossEntropyPartBackward(float* dlogits, const std::int32_t* targets, int N, int V, int first,
                              float weight);

}  // namespace parascope::kernels
