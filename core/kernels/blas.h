// Typed wrappers over gemm so kernels can be templates over float (training) and double
// (finite-difference checks in the tests). Row-major throughout. Internal to core/kernels.
#pragma once

#include <cblas.h>

namespace parascope::kernels {

// C[M,N] = alpha * op(A) op(B) + beta * C, op(X) = X or X^T, by the library sgemmLibrary() chose
// (sgemm_library.h).
void sgemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);

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
