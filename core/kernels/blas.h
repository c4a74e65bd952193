// Typed wrappers over gemm so kernels can be templates over float (training) and double
// (finite-difference checks in the tests). Row-major throughout. Internal to core/kernels.
#pragma once

#include <cblas.h>

#include "core/kernels/sgemm_library.h"

namespace parascope::kernels {

// C[M,N] = alpha * op(A) op(B) + beta * C, op(X) = X or X^T, by the library sgemmLibrary() chose
// (sgemm_library.h).
void sgemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);
// The same on a given library: the sgemm peak of the one another framework calls.
void sgemmOn(SgemmLibrary library, bool transA, bool transB, int M, int N, int K, float alpha,
             const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);

// C = A W^T + bias (A M x K, W N x K, C M x N, all row-major and packed; bias N): on oneDNN, its
// matmul adds the bias as it writes each tile of C (filling C with the bias first, for sgemm to
// add the product to, cost 3-12% of each GPT-mini product with C in memory); on OpenBLAS, that
// fill and sgemm. Any of M, N and K may be 0 (K 0: C is the bias in every row).
void sgemmBias(int M, int N, int K, const float* A, const float* W, const float* bias, float* C);

// While one exists on a thread, signals wait there (a process's go to another thread). oneDNN 2's
// JIT sgemm kernels point the stack pointer into the heap while they run (fixed upstream in 3.11,
// not in the 2.x a distribution ships), so a signal handled meanwhile, such as the stop request,
// would have its frame written there and corrupt the heap. Each oneDNN product makes one; a kernel
// that runs many small products makes one for all of them (a change of the signal mask costs
// about 0.3 us). Nests; does nothing when the products run on OpenBLAS.
class ProductSignals {
 public:
  // Products on `library`.
  explicit ProductSignals(SgemmLibrary library = sgemmLibrary());
  ~ProductSignals();
  ProductSignals(const ProductSignals&) = delete;
  ProductSignals& operator=(const ProductSignals&) = delete;

 private:
  bool held_ = false;
};

inline void gemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
                 int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(bool transA, bool transB, int M, int N, int K, double alpha, const double* A,
                 int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace parascope::kernels
