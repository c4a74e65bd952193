// Fused softmax + cross-entropy over the last dimension.
// Shapes: logits (N, V), targets (N) int32 in [0, V), losses (N) = -log softmax(logits)[target],
// probs (N, V) softmax, saved for the backward pass (may alias logits: the forward reads each
// row before it writes it).
#pragma once

#include <cstdint>

namespace parascope::kernels {

template <typename T>
void crossEntropyForward(T* losses, T* probs, const T* logits, const std::int32_t* targets, int N,
                         int V);

// dlogits[n, v] = (probs[n, v] - [v == target]) * dlosses[n]; overwritten, may alias probs.
template <typename T>
void crossEntropyBackward(T* dlogits, const T* probs, const std::int32_t* targets, const T* dlosses,
                          int N, int V);

}  // namespace parascope::kernels
