// LayerNorm over the last dimension (eps 1e-5, as PyTorch's default).
// Shapes: inp/out (N, C), weight/bias (C), mean/rstd (N) saved for the backward pass.
#pragma once

namespace parascope::kernels {

template <typename T>
void layernormForward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int N,
                      int C);

// dinp is overwritten; dweight and dbias are accumulated (+=). A null dinp computes the weight
// and bias gradients alone, the same to the bit.
template <typename T>
void layernormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                       const T* mean, const T* rstd, int N, int C);

}  // namespace parascope::kernels
