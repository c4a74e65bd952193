// Token + position embedding of the GPT: out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:].
// Shapes: tokens (B, T) int32 in [0, V), wte (V, C), wpe (maxT >= T, C), out (B, T, C).
#pragma once

#include <cstdint>

namespace parascope::kernels {

template <typename T>
void embeddingForward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, int B, int Tn,
                      int C);

// dwte and dwpe are accumulated (+=).
template <typename T>
void embeddingBackward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, int B, int Tn,
                       int C);

// The vocabulary-split embedding of tensor parallelism, each part one kernel (one traced span):
// a rank holds the token table's rows [first, first + part) and the position table whole.
// Token rows of its part (zeros for tokens outside it): out (N, C) for N = B * T tokens.
template <typename T>
void embeddingPartForward(T* out, const std::int32_t* tokens, const T* wtePart, int N, int first,
                          int part, int C);
// dwtePart[token - first, :] += dout[n, :] for the tokens in its part, in order.
template <typename T>
void embeddingPartBackward(T* dwtePart, const T* dout, const std::int32_t* tokens, int N, int first,
                           int part, int C);
// Rows row0 .. row0 + rows - 1 of the flattened (B, T) positions (a sequence-parallel rank's
// share, or all): out[i, :] += wpe[(row0 + i) % T, :]; and dwpe[(row0 + i) % T, :] += dout[i, :].
template <typename T>
void positionForward(T* out, const T* wpe, int rows, int row0, int Tn, int C);
template <typename T>
void positionBackward(T* dwpe, const T* dout, int rows, int row0, int Tn, int C);

}  // namespace parascope::kernels
