// What each rank's GPU ran, kernel by kernel: how often each kernel (by name) ran, its total,
// mean and longest time, and its share of the rank's GPU busy time (the union of every kernel,
// copy and memset on the rank's GPU lanes), as Nsight Systems' and HTA's kernel summaries give
// it. Kernels are the spans on GPU lanes that are compute or communication (NCCL's kernels).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct GpuKernelStats {
  std::int32_t rank = 0;
  std::string name;
  std::int64_t launches = 0;
  std::int64_t totalNs = 0;
  std::int64_t maxNs = 0;
  std::int64_t rankBusyNs = 0;  // the rank's GPU busy time, which busyShare divides by

  std::int64_t meanNs() const { return launches > 0 ? totalNs / launches : 0; }
  double busyShare() const {
    return rankBusyNs > 0 ? static_cast<double>(totalNs) / static_cast<double>(rankBusyNs) : 0;
  }
};

// Ordered by rank, then by total time (longest first), then by name.
std::vector<GpuKernelStats> computeGpuKernels(const TraceData& trace);

// A kernel's name as CUPTI gives it (a mangled C++ name, `_Z...`) as Kineto and Nsight show it:
// `parascope::cuda::(anonymous namespace)::geluForwardKernel(float*, float const*, long)`. A name
// that is not mangled, or does not demangle, is returned as it is.
std::string demangledKernelName(const std::string& name);

// A demangled kernel name without its parameter list, for a column of names:
// "ns::(anonymous namespace)::gelu<float>(float*, long)" -> "ns::(anonymous
// namespace)::gelu<float>".
std::string withoutParameters(const std::string& name);

}  // namespace parascope::profiler
