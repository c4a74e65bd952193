#include "core/kernels/sgemm_library.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <cblas.h>
#include <pthread.h>
#include <signal.h>

#if PARASCOPE_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl_debug.h>
#include <oneapi/dnnl/dnnl.hpp>
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

#if PARASCOPE_HAVE_ONEDNN
// OpenMP's thread count belongs to each calling thread (each rank's): set it on a thread's first
// product and whenever setBlasThreads changed it since.
void applyOneDnnThreads() {
  thread_local int applied = 0;
  if (const int want = blasThreads.load(std::memory_order_relaxed); want > 0 && want != applied) {
    omp_set_num_threads(want);
    applied = want;
  }
}

// oneDNN's CPU engine, made once for the process (its primitives are made and run on any thread).
const dnnl::engine& oneDnnEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN's matmul with the bias in its epilogue and its operands' layouts, one per shape a
// thread has asked for (shapes are few: a model's layers and micro-batches).
struct BiasMatmul {
  dnnl::memory::desc src, weights, bias, dst;
  dnnl::matmul matmul;
};

const BiasMatmul& biasMatmul(int M, int N, int K) {
  struct Key {
    int M, N, K;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    std::size_t operator()(const Key& k) const {
      return (static_cast<std::size_t>(k.M) * 1000003u + static_cast<std::size_t>(k.N)) * 1000003u +
             static_cast<std::size_t>(k.K);
    }
  };
  thread_local std::unordered_map<Key, BiasMatmul, Hash> made;
  const Key key{M, N, K};
  if (auto found = made.find(key); found != made.end()) return found->second;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  // Row-major A (M x K) and C (M x N); W is N x K row-major, which is W^T (K x N) read by columns.
  const dnnl::memory::desc src({M, K}, dt::f32, tag::ab), weights({K, N}, dt::f32, tag::ba),
      bias({1, N}, dt::f32, tag::ab), dst({M, N}, dt::f32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, bias, dst),
                                        oneDnnEngine());
  return made.emplace(key, BiasMatmul{src, weights, bias, dst, dnnl::matmul(pd)}).first->second;
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
  // Empty products as BLAS defines them: oneDNN rejects them, and both libraries reject the
  // leading dimension of an operand with no columns.
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int m = 0; m < M; ++m) {
      float* row = C + static_cast<long>(m) * ldc;
      for (int n = 0; n < N; ++n) row[n] = beta == 0.0f ? 0.0f : beta * row[n];
    }
    return;
  }
#if PARASCOPE_HAVE_ONEDNN
  if (library == SgemmLibrary::OneDnn) {
    applyOneDnnThreads();
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

void sgemmBias(int M, int N, int K, const float* A, const float* W, const float* bias, float* C) {
  // oneDNN's matmul divides by zero making a primitive for an empty product (sgemmOn takes them).
#if PARASCOPE_HAVE_ONEDNN
  if (sgemmLibrary() == SgemmLibrary::OneDnn && M > 0 && N > 0 && K > 0) {
    applyOneDnnThreads();
    const ProductSignals held(SgemmLibrary::OneDnn);
    try {
      const BiasMatmul& made = biasMatmul(M, N, K);
      const dnnl::engine& engine = oneDnnEngine();
      // oneDNN's memory objects take non-const handles; it only reads the inputs.
      const dnnl::memory src(made.src, engine, const_cast<float*>(A));
      const dnnl::memory weights(made.weights, engine, const_cast<float*>(W));
      const dnnl::memory b(made.bias, engine, const_cast<float*>(bias));
      const dnnl::memory dst(made.dst, engine, C);
      thread_local dnnl::stream stream(engine);
      made.matmul.execute(stream, {{DNNL_ARG_SRC, src},
                                   {DNNL_ARG_WEIGHTS, weights},
                                   {DNNL_ARG_BIAS, b},
                                   {DNNL_ARG_DST, dst}});
      stream.wait();
    } catch (const dnnl::error& e) {
      if (e.status == dnnl_out_of_memory) throw std::bad_alloc();
      throw std::runtime_error(std::string("oneDNN's matmul failed: ") + e.what());
    }
    return;
  }
#endif
  for (int m = 0; m < M; ++m) std::memcpy(C + static_cast<long>(m) * N, bias, sizeof(float) * N);
  sgemmOn(SgemmLibrary::OpenBlas, false, true, M, N, K, 1.0f, A, K, W, K, 1.0f, C, N);
}

}  // namespace parascope::kernels
