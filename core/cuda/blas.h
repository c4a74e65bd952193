// The engine's matrix products on a GPU: the model's GEMMs through cuBLASLt (with the bias added
// in its epilogue), with the same shapes, layouts and argument order as the CPU kernels
// (core/kernels/matmul.h). Attention's products are inside its fused kernels (kernels.h). One
// Blas per rank, on the rank's compute stream; calls launch and return.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "core/cuda/gemm_peak.h"

namespace parascope::cuda {

// The cuBLAS types of a precision: the matrices' storage type and the compute type.
struct GemmTypes {
  cudaDataType_t storage;
  cublasComputeType_t compute;
  std::size_t bytes;  // per element stored
};
GemmTypes gemmTypes(GemmPrecision p);

class Blas {
 public:
  // Matrices are f32 for F32 and TF32 (TF32 rounds the inputs to 10 mantissa bits on the tensor
  // cores, as torch.backends.cuda.matmul.allow_tf32), 16-bit for BF16 and F16 (fp32
  // accumulation). Throws CudaError when cuBLAS cannot start.
  Blas(cudaStream_t stream, GemmPrecision precision);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  GemmPrecision precision() const { return precision_; }

  // out (N, OC) = inp (N, C) weight (OC, C)^T [+ bias (OC)], row-major, in the precision's
  // storage type.
  void matmulForward(void* out, const void* inp, const void* weight, const void* bias, int N, int C,
                     int OC);
  // dinp (N, C) = dout weight (overwritten); dweight (OC, C) += dout^T inp, or = where
  // `overwrite` (what it held unread). Either may be null. The bias gradient is a column sum
  // (kernels.h: biasBackward).
  void matmulBackward(void* dinp, void* dweight, const void* dout, const void* inp,
                      const void* weight, int N, int C, int OC, bool overwrite);

 private:
  struct Plan;  // a product's descriptors and chosen algorithm, kept per shape
  void release() noexcept;
  // The operands' alignments in bytes (a power of two up to 256): A, B and C (also D).
  using Alignments = std::array<std::uint32_t, 3>;
  // m n k transA transB bias beta, and the alignments the chosen algorithm may assume.
  using Key = std::tuple<int, int, int, bool, bool, bool, bool, Alignments>;
  const Plan& plan(int m, int n, int k, bool transA, bool transB, bool bias, bool accumulate,
                   const Alignments& alignments);
  cudaStream_t stream_;
  GemmPrecision precision_;
  GemmTypes types_;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace parascope::cuda
