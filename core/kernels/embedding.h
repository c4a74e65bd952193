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

}  // namespace parascope::kernels
