// The library that runs the engine's single-precision matrix products, chosen once at run time.
// oneDNN's sgemm picks its kernels by the instructions the CPU has (AVX-512 on a CPU that has
// it), whatever OpenBLAS is set to: OpenBLAS's kernel family can be forced to an older one
// (OPENBLAS_CORETYPE, set where its own choice for a new CPU computes wrongly), which halves the
// products' speed on an AVX-512 CPU. OpenBLAS stays the engine's BLAS for double precision (the
// tests' finite differences) and the single-precision products' other library, for comparison.
#pragma once

#include <string>

namespace parascope::kernels {

enum class SgemmLibrary { OneDnn, OpenBlas };

// "onednn", "openblas".
const char* sgemmLibraryName(SgemmLibrary library);
// Whether this build has oneDNN (found when it was configured).
bool haveOneDnn();
// The library `asked` names (PARASCOPE_SGEMM's value), or oneDNN where the build has it when
// `asked` is null or empty. A name that is no library, or oneDNN in a build without it, gives the
// default and sets `complaint` to a line saying so.
SgemmLibrary sgemmLibraryFor(const char* asked, std::string* complaint);
// The library the products use: sgemmLibraryFor(PARASCOPE_SGEMM), chosen at the first call; a
// complaint goes to stderr.
SgemmLibrary sgemmLibrary();
// The kernels that run, e.g. "oneDNN avx512_core_bf16" (the instruction set oneDNN may use,
// DNNL_MAX_CPU_ISA or the CPU's) or "OpenBLAS Haswell" (its kernel family, OPENBLAS_CORETYPE or
// its own choice).
std::string sgemmKernels();
std::string sgemmKernels(SgemmLibrary library);
// The library's version and build, e.g. "oneDNN 2.6.3 (OpenMP)" or openblas_get_config().
std::string sgemmBuild();

// Threads each product may use, on either library, in calls from any thread of this process.
// Training uses 1: ranks are threads.
void setBlasThreads(int n);

}  // namespace parascope::kernels
