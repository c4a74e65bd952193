#include "core/kernels/sgemm_library.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string_view>

#include <cblas.h>
#include <pthread.h>
#include <signal.h>

#if PARASCOPE_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
// oneDNN's CPU runtime here is OpenMP (dnnl_config.h), GCC's libgomp: its products use
// omp_get_max_threads() threads. OpenMP's C interface, declared here because the compiler's own
// omp.h belongs to its own runtime and is not always installed.
#if DNNL_CPU_RUNTIME != DNNL_RUNTIME_OMP
#error "oneDNN's CPU runtime is not OpenMP: the products' thread count would not be set"
#endif
extern "C" void omp_set_num_threads(int threads);
#endif

#include "core/kernels/blas.h"

namespace parascope::kernels {

namespace {

// Threads each product may use, from setBlasThreads; 0 until it is called (the library's own
// default).
std::atomic<int> blasThreads{0};

// This thread's ProductSignals that exist, and the signal mask the first one found.
thread_local int signalHolds = 0;
thread_local sigset_t maskBeforeHolds;

#if PARASCOPE_HAVE_ONEDNN
// The instruction set as oneDNN names it, less its "cpu_isa_" prefix: "avx512_core_bf16".
std::string isaName(dnnl_cpu_isa_t isa) {
  const std::string name = dnnl_cpu_isa2str(isa);
  constexpr std::string_view kPrefix = "cpu_isa_";
  return name.starts_with(kPrefix) ? name.substr(kPrefix.size()) : name;
}
#endif

}  // namespace

const char* sgemmLibraryName(SgemmLibrary library) {
  switch (library) {
    case SgemmLibrary::OneDnn: return "onednn";
    case SgemmLibrary::OpenBlas: return "openblas";
  }
  return "?";
}

bool haveOneDnn() {
  return PARASCOPE_HAVE_ONEDNN != 0;
}

SgemmLibrary sgemmLibraryFor(const char* asked, std::string* complaint) {
  const SgemmLibrary preferred = haveOneDnn() ? SgemmLibrary::OneDnn : SgemmLibrary::OpenBlas;
  if (asked == nullptr || *asked == '\0') return preferred;
  if (std::strcmp(asked, sgemmLibraryName(SgemmLibrary::OpenBlas)) == 0) {
    return SgemmLibrary::OpenBlas;
  }
  if (std::strcmp(asked, sgemmLibraryName(SgemmLibrary::OneDnn)) == 0 && haveOneDnn()) {
    return SgemmLibrary::OneDnn;
  }
  *complaint = std::string("parascope: PARASCOPE_SGEMM=") + asked +
               " is not a library of this build (allowed: " +
               (haveOneDnn() ? "onednn, openblas" : "openblas") + "); using " +
               sgemmLibraryName(preferred);
  return preferred;
}

SgemmLibrary sgemmLibrary() {
  static const SgemmLibrary library = [] {
    std::string complaint;
    const SgemmLibrary chosen = sgemmLibraryFor(std::getenv("PARASCOPE_SGEMM"), &complaint);
    if (!complaint.empty()) std::fprintf(stderr, "%s\n", complaint.c_str());
    return chosen;
  }();
  return library;
}

std::string sgemmKernels() {
  return sgemmKernels(sgemmLibrary());
}

std::string sgemmKernels(SgemmLibrary library) {
#if PARASCOPE_HAVE_ONEDNN
  if (library == SgemmLibrary::OneDnn) {
    return "oneDNN " + isaName(dnnl_get_effective_cpu_isa());
  }
#endif
  const char* core = openblas_get_corename();
  return std::string("OpenBLAS ") + (core != nullptr ? core : "?");
}

std::string sgemmBuild() {
#if PARASCOPE_HAVE_ONEDNN
  if (sgemmLibrary() == SgemmLibrary::OneDnn) {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch) + " (OpenMP)";
  }
#endif
  const char* config = openblas_get_config();
  return config != nullptr ? config : "OpenBLAS";
}

ProductSignals::ProductSignals(SgemmLibrary library) : held_(library == SgemmLibrary::OneDnn) {
  if (!held_ || signalHolds++ > 0) return;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &maskBeforeHolds);
}

ProductSignals::~ProductSignals() {
  if (held_ && --signalHolds == 0) pthread_sigmask(SIG_SETMASK, &maskBeforeHolds, nullptr);
}

void setBlasThreads(int n) {
  openblas_set_num_threads(n);
  blasThreads.store(n, std::memory_order_relaxed);
}

void sgemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
  sgemmOn(sgemmLibrary(), transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void sgemmOn(SgemmLibrary library, bool transA, bool transB, int M, int N, int K, float alpha,
             const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
#if PARASCOPE_HAVE_ONEDNN
  if (library == SgemmLibrary::OneDnn) {
    // OpenMP's thread count belongs to each calling thread (each rank's): set it on a thread's
    // first product and whenever setBlasThreads changed it since.
    thread_local int applied = 0;
    if (const int want = blasThreads.load(std::memory_order_relaxed); want > 0 && want != applied) {
      omp_set_num_threads(want);
      applied = want;
    }
    const ProductSignals held(library);
    const dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', M, N, K, alpha,
                                            A, lda, B, ldb, beta, C, ldc);
    // Its buffers are allocated for each product: C is unwritten when that fails.
    if (status == dnnl_out_of_memory) throw std::bad_alloc();
    if (status != dnnl_success) {
      throw std::runtime_error(std::string("oneDNN's sgemm failed: ") + dnnl_status2str(status));
    }
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace parascope::kernels
