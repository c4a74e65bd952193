// Causal multi-head self-attention core (after the QKV projection, before the output one).
// Shapes: qkv (B, T, 3C) laid out [q | k | v], head h using columns h*hs .. (h+1)*hs of each,
// hs = C / NH; out (B, T, C); att (B, NH, T, T) softmax probabilities, zero above the diagonal,
// saved for the backward pass. Scores are scaled by 1/sqrt(hs). Products go through BLAS.
#pragma once

namespace parascope::kernels {

template <typename T>
void attentionForward(T* out, T* att, const T* qkv, int B, int Tn, int C, int NH);

// dqkv is overwritten. scratch holds T*T elements.
template <typename T>
void attentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int B,
                       int Tn, int C, int NH);

}  // namespace parascope::kernels
