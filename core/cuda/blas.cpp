#include "core/cuda/blas.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/check.h"
#include "core/cuda/kernels.h"

namespace parascope::cuda {

namespace {

// cuBLASLt's room for split-K and other algorithms' partial results; 32 MiB as PyTorch gives
// it on Hopper.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// The largest power of two up to 256 that divides p's address, which PyTorch also tells
// cuBLASLt: an algorithm chosen for 256-byte aligned operands may use vector loads that a view
// into a flat ZeRO or bucket buffer, aligned less, cannot take.
std::uint32_t alignmentOf(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 1;
  while (a < 256 && address % (2 * a) == 0) a *= 2;
  return a;
}

cublasOperation_t op(bool trans) {
  return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

}  // namespace

GemmTypes gemmTypes(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::F32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 4};
    case GemmPrecision::TF32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4};
    case GemmPrecision::BF16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2};
    case GemmPrecision::F16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F, 2};
    case GemmPrecision::F32ViaBF16: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, 4};
    case GemmPrecision::F32ViaF16: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F, 4};
  }
  return {CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 4};
}

struct Blas::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

Blas::Blas(cudaStream_t stream, GemmPrecision precision)
    : stream_(stream), precision_(precision), types_(gemmTypes(precision)) {
  try {
    check(cublasLtCreate(&lt_), "cublasLtCreate");
    check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc (cuBLASLt workspace)");
  } catch (...) {
    release();
    throw;
  }
}

Blas::~Blas() {
  release();
}

void Blas::release() noexcept {
  plans_.clear();
  if (lt_) cublasLtDestroy(lt_);
  cudaFree(workspace_);
  lt_ = nullptr;
  workspace_ = nullptr;
}

// A product's descriptors and the heuristic's first algorithm, once per shape and alignment: a
// training step repeats a few of each, and the heuristic costs more than launching.
const Blas::Plan& Blas::plan(int m, int n, int k, bool transA, bool transB, bool bias,
                             bool accumulate, const Alignments& alignments) {
  const Key key{m, n, k, transA, transB, bias, accumulate, alignments};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  check(cublasLtMatmulDescCreate(&p->op, types_.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = op(transA), tb = op(transB);
  check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                         sizeof(epilogue)),
          "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    const cudaDataType_t biasType = types_.storage;
    check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                                         sizeof(biasType)),
          "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  }
  // Column-major shapes as stored: op(A) is m x k, op(B) k x n.
  check(cublasLtMatrixLayoutCreate(&p->a, types_.storage, transA ? k : m, transA ? m : k,
                                   transA ? k : m),
        "cublasLtMatrixLayoutCreate(A)");
  check(cublasLtMatrixLayoutCreate(&p->b, types_.storage, transB ? n : k, transB ? k : n,
                                   transB ? n : k),
        "cublasLtMatrixLayoutCreate(B)");
  check(cublasLtMatrixLayoutCreate(&p->c, types_.storage, m, n, m),
        "cublasLtMatrixLayoutCreate(C)");
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::size_t workspace = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof(workspace));
  // C is also the product's D: every product here is in place.
  const cublasLtMatmulPreferenceAttributes_t alignmentAttributes[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t a = alignments[static_cast<std::size_t>(std::min(i, 2))];
    cublasLtMatmulPreferenceSetAttribute(pref, alignmentAttributes[i], &a, sizeof(a));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(lt_, p->op, p->a, p->b, p->c, p->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check(s, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0)
    throw CudaError("cuBLASLt has no algorithm for a " + std::to_string(m) + " x " +
                    std::to_string(n) + " x " + std::to_string(k) + " " +
                    std::string(precisionName(precision_)) + " product");
  p->algo = result.algo;
  return *plans_.emplace(key, std::move(p)).first->second;
}

// Row-major X (r x c) is column-major X^T (c x r), so each row-major product below is its
// transpose in column-major terms: out^T = W inp^T and so on.
void Blas::matmulForward(void* out, const void* inp, const void* weight, const void* bias, int N,
                         int C, int OC) {
  // out^T (OC x N) = (W^T)^T inp^T: W row-major (OC, C) is column-major C x OC, transposed.
  const Plan& p = plan(OC, N, C, true, false, bias != nullptr, false,
                       {alignmentOf(weight), alignmentOf(inp), alignmentOf(out)});
  if (bias != nullptr)
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                         static_cast<const void*>(&bias), sizeof(bias)),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  const float one = 1.0f, zero = 0.0f;
  check(cublasLtMatmul(lt_, p.op, &one, weight, p.a, inp, p.b, &zero, out, p.c, out, p.c, &p.algo,
                       workspace_, kWorkspaceBytes, stream_),
        "cublasLtMatmul (matmul_forward)");
}

void Blas::matmulBackward(void* dinp, void* dweight, const void* dout, const void* inp,
                          const void* weight, int N, int C, int OC, bool overwrite) {
  const float one = 1.0f, zero = 0.0f;
  if (dinp != nullptr) {
    // dinp^T (C x N) = W^T (C x OC, W as stored) dout^T (OC x N, dout as stored).
    const Plan& p = plan(C, N, OC, false, false, false, false,
                         {alignmentOf(weight), alignmentOf(dout), alignmentOf(dinp)});
    check(cublasLtMatmul(lt_, p.op, &one, weight, p.a, dout, p.b, &zero, dinp, p.c, dinp, p.c,
                         &p.algo, workspace_, kWorkspaceBytes, stream_),
          "cublasLtMatmul (matmul_backward, input)");
  }
  if (dweight != nullptr) {
    // dW^T (C x OC) += (or = where `overwrite`) inp^T (C x N, inp as stored) dout (N x OC: dout
    // as stored, transposed).
    const Plan& p = plan(C, OC, N, false, true, false, !overwrite,
                         {alignmentOf(inp), alignmentOf(dout), alignmentOf(dweight)});
    check(cublasLtMatmul(lt_, p.op, &one, inp, p.a, dout, p.b, overwrite ? &zero : &one, dweight,
                         p.c, dweight, p.c, &p.algo, workspace_, kWorkspaceBytes, stream_),
          "cublasLtMatmul (matmul_backward, weight)");
  }
}

}  // namespace parascope::cuda
