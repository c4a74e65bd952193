// A GPU's dense GEMM peak in each precision the engine computes in, measured with cuBLAS: the
// denominator of MFU on the GPU, as sgemm_peak.h's is on the CPU. Not a model kernel.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/tensor/dtype.h"

namespace parascope::cuda {

enum class GemmPrecision {
  F32,   // fp32 inputs and FMA (CUBLAS_COMPUTE_32F_PEDANTIC: no TF32, whatever the math mode)
  TF32,  // fp32 inputs on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
  BF16,  // bf16 inputs and output, fp32 accumulation
  F16,   // fp16 inputs and output, fp32 accumulation
  // fp32 storage, the inputs rounded to bf16 (fp16) on the tensor cores, fp32 accumulation
  // (CUBLAS_COMPUTE_32F_FAST_16BF, _16F): mixed precision's products on the model's f32 working
  // tensors, as PyTorch's autocast casts a product's operands. Not a peak of its own:
  // allPrecisions() leaves these out.
  F32ViaBF16,
  F32ViaF16,
};

std::string_view precisionName(GemmPrecision p);  // "fp32", "tf32", "bf16", "fp16"
std::vector<GemmPrecision> allPrecisions();

struct GemmRate {
  GemmPrecision precision = GemmPrecision::F32;
  int n = 0;                  // C = A B with A, B, C of n x n
  int reps = 0;               // timed calls
  double secondsPerCall = 0;  // best of the timed calls (cudaEvent time)
  double flopsPerSecond = 0;  // 2 n^3 / secondsPerCall
};

// Times `reps` calls of an n x n x n GEMM on `device` after two untimed ones, each between CUDA
// events, and keeps the fastest. The inputs are random values in [-1, 1] (tensor cores draw
// less power on zeros, so a zero GEMM would overstate the rate). Throws CudaError when the
// device, memory or cuBLAS fails, UserError for n < 1 or reps < 1.
GemmRate measureGemm(int device, GemmPrecision precision, int n, int reps);

// How a model computing in `compute` (F32, BF16 or F16 under mixed precision) multiplies on a
// GPU: its f32 working tensors as they are (F32), or taken as 16-bit inputs (F32ViaBF16,
// F32ViaF16).
GemmPrecision productsFor(DType compute);

// The dense peak of the multipliers `products` run on: BF16's for F32ViaBF16, F16's for
// F32ViaF16, the precision's own otherwise. A GPU run's MFU denominator.
GemmPrecision peakPrecision(GemmPrecision products);

// measureGemm(device, peakPrecision(products), 8192, 5)'s rate in FLOP/s, measured the first
// time a process asks for that device and precision, then kept: the sessions a process starts on
// one GPU (a test suite's dozens, the workbench's runs) share one measurement rather than each
// spending a second on it. Thread-safe; throws as measureGemm does, and keeps nothing then.
double productPeak(int device, GemmPrecision products);

}  // namespace parascope::cuda
