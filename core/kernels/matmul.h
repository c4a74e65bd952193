// Linear layer as in PyTorch's nn.Linear: out = inp @ weight^T + bias, through BLAS.
// Shapes: inp (N, C), weight (OC, C), bias (OC) or null, out (N, OC). No allocation here.
#pragma once

namespace parascope::kernels {

template <typename T>
void matmulForward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC);

// What matmulBackward does with what dweight holds: adds to it, so that gradients sum over
// micro-batches, or overwrites it (a step's first gradient, into memory nobody zeroed: the
// product then reads none of it, where adding to zeros would read it all from memory).
enum class WeightGradient : bool { Add, Overwrite };

// dinp (N, C) is overwritten (unless null); dweight (OC, C) is accumulated (+=) or overwritten as
// `write` says, dbias (OC) accumulated. dbias may be null; dweight may be null too (the input
// half alone, for zero-bubble schedules that run the weight half later).
template <typename T>
void matmulBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                    int N, int C, int OC, WeightGradient write = WeightGradient::Add);

}  // namespace parascope::kernels
