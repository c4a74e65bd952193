// Linear layer as in PyTorch's nn.Linear: out = inp @ weight^T + bias, through BLAS.
// Shapes: inp (N, C), weight (OC, C), bias (OC) or null, out (N, OC). No allocation here.
#pragma once

namespace parascope::kernels {

template <typename T>
void matmulForward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC);

// dinp (N, C) is overwritten (unless null); dweight (OC, C) and dbias (OC) are accumulated (+=),
// so gradients sum over micro-batches. dbias may be null; dweight may be null too (the input
// half alone, for zero-bubble schedules that run the weight half later).
template <typename T>
void matmulBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                    int N, int C, int OC);

}  // namespace parascope::kernels
