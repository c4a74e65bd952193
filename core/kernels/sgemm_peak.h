// This machine's peak in the unit MFU is measured in on this CPU engine: one thread's sgemm rate
// with the library the products use (sgemm_library.h), FLOP/s (ranks are threads with one BLAS
// thread each, so R ranks peak at R times it). One probe, robust against a machine busy with other
// work, and a per-machine cache so the probe runs once per machine, not at every start. Not a model
// kernel.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/kernels/sgemm_library.h"

namespace parascope::kernels {

// The probe times C = A B^T with A, B, C of n x n floats, n = kSgemmPeakSize (2 n^3 FLOPs): large
// enough to reach the peak (n = 256 to 768 are within 1% of each other on an AVX-512 EPYC), and
// short enough (about 3 ms there) for many samples within the budget.
inline constexpr int kSgemmPeakSize = 512;
inline constexpr double kSgemmPeakFlops = 2.0 * kSgemmPeakSize * kSgemmPeakSize * kSgemmPeakSize;
// Seconds from the first sample's start after which no sample starts.
inline constexpr double kSgemmPeakBudgetSeconds = 0.5;

// Monotonic time in seconds.
using SecondsClock = std::function<double()>;
double steadySeconds();

// One thread's sgemm peak, FLOP/s: after one untimed call, the best rate of samples taken 1 ms
// apart until kSgemmPeakBudgetSeconds have passed (at least one). Other work on the machine slows
// some samples, rarely all of them, and a thread that has just slept is scheduled promptly, so
// the best sample is the peak. Sets BLAS to one thread, as training does. `clock` is read just
// before and just after each sample.
double measureSgemmPeak(const SecondsClock& clock = steadySeconds);
// The same on a given library's kernels (OpenBLAS's: the BLAS Debian's PyTorch calls).
double measureSgemmPeak(SgemmLibrary library, const SecondsClock& clock = steadySeconds);

// The cached peak, a JSON object in one file:
//   {"format": "parascope-sgemm-peak", "version": 2, "cpu": "<model name>",
//    "sgemm_kernels": "<sgemmKernels()>", "sgemm_build": "<sgemmBuild()>",
//    "sgemm_size": 512, "flops_per_second": 2.4e11}
// It holds one machine's peak: the CPU (/proc/cpuinfo's model name) and the products' library,
// kernels and build (which choose the sgemm code at run time, whatever flags ParaScope was built
// with).
// A file that is missing, unreadable, malformed, of another format, version or probe size, or of
// another machine reads as no peak and is replaced when a peak is stored.
struct SgemmPeakCache {
  std::string path;  // empty: nothing is cached
  std::string cpu, kernels, build;

  // sgemmPeakCachePath() and this machine's CPU and sgemm library.
  static SgemmPeakCache thisMachine();
  std::optional<double> read() const;
  // Stores the larger of the cached peak and `flops` (a peak is a maximum: a measurement above
  // it shows the cached one stale) and returns it. Written to a temporary file beside the cache
  // and renamed over it; a cache that cannot be written is left as it is.
  double raise(double flops) const;
};

// $XDG_CACHE_HOME/parascope/sgemm_peak.json, else ~/.cache/parascope/sgemm_peak.json; empty when
// neither directory is known.
std::string sgemmPeakCachePath();

// This machine's peak: the cached one, else measured now (measureSgemmPeak) and cached.
double sgemmPeak();

}  // namespace parascope::kernels
