// Residual connection: out = a + b. Its backward is the identity into both branches, so the
// model passes the same gradient on; residualBackward accumulates it into each input's grad.
// Shapes: all (N).
#pragma once

namespace parascope::kernels {

template <typename T>
void residualForward(T* out, const T* a, const T* b, long N);

// da += dout; db += dout.
template <typename T>
void residualBackward(T* da, T* db, const T* dout, long N);

}  // namespace parascope::kernels
