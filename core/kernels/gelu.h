// GELU, tanh approximation (PyTorch's approximate='tanh'):
// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Shapes: inp/out (N).
#pragma once

namespace parascope::kernels {

template <typename T>
void geluForward(T* out, const T* inp, long N);

// dinp is overwritten; it may be dout itself (in place), not any other overlap of the two.
template <typename T>
void geluBackward(T* dinp, const T* inp, const T* dout, long N);

}  // namespace parascope::kernels
