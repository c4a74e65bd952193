// The CPU's own single-precision peak, beside the sgemm peak (sgemm_peak.h): what one thread's
// widest fused multiply-adds reach, whatever BLAS does. MFU against the sgemm peak says how well
// the step uses the kernels it runs; against this peak, what the BLAS kernels in use cost (an
// OpenBLAS kernel family forced to AVX2 on an AVX-512 CPU reaches about half of it).
// Not a model kernel.
#pragma once

#include <cstdint>
#include <string>

#include "core/kernels/sgemm_peak.h"

namespace parascope::kernels {

// Each sample: kFmaPeakChains independent chains of kFmaPeakIterations multiply-adds per lane.
inline constexpr int kFmaPeakChains = 12;
inline constexpr std::int64_t kFmaPeakIterations = std::int64_t{1} << 18;
inline constexpr double kFmaPeakBudgetSeconds = 0.2;

struct FmaPeak {
  std::string isa;  // the vector instructions measured: "avx512f", "avx2+fma" or "sse2"
  int lanes = 0;    // floats per vector: 16, 8 or 4
  double flopsPerSecond = 0;
};

// One thread's multiply-add rate with the widest vector instructions this CPU runs (chosen at
// run time, whatever flags ParaScope was built with): independent chains of multiply-adds in
// registers, no memory traffic, 2 FLOPs per lane each. The best of samples taken 1 ms apart over
// kFmaPeakBudgetSeconds, as measureSgemmPeak. `clock` is read once at the start, then just before
// and just after each sample.
FmaPeak measureFmaPeak(const SecondsClock& clock = steadySeconds);

}  // namespace parascope::kernels
