// The model's kernels on a CUDA device (kernels/ops.h): the CUDA kernels and the cuBLAS
// products, launched on the ops' own compute stream (stream.h), one per rank.
#pragma once

#include <memory>

#include "core/cuda/gemm_peak.h"
#include "core/kernels/ops.h"

namespace parascope::cuda {

// Kernels on device `index`, on a new compute stream, the f32 products in `precision` (F32,
// TF32, or F32ViaBF16 / F32ViaF16 under mixed precision). Throws UserError for a device this
// process does not see.
std::shared_ptr<const kernels::KernelOps> cudaOps(int index, GemmPrecision precision);

}  // namespace parascope::cuda
