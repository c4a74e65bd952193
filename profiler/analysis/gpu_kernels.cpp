#include "profiler/analysis/gpu_kernels.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>

#include "profiler/analysis/intervals.h"

namespace parascope::profiler {

std::vector<GpuKernelStats> computeGpuKernels(const TraceData& trace) {
  std::map<std::int32_t, std::vector<Interval>> busy;
  std::map<std::pair<std::int32_t, std::string>, GpuKernelStats> kernels;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::Span || !trace::lane::isGpu(e.lane) || e.endNs <= e.startNs) continue;
    busy[e.rank].push_back({e.startNs, e.endNs});
    if (e.category != Category::Compute && e.category != Category::Communication) continue;
    GpuKernelStats& k = kernels[{e.rank, e.name}];
    k.rank = e.rank;
    k.name = e.name;
    k.launches += 1;
    k.totalNs += e.endNs - e.startNs;
    k.maxNs = std::max(k.maxNs, e.endNs - e.startNs);
  }
  std::map<std::int32_t, std::int64_t> busyNs;
  for (auto& [rank, intervals] : busy) busyNs[rank] = totalLength(unite(std::move(intervals)));
  std::vector<GpuKernelStats> out;
  for (auto& [key, k] : kernels) {
    k.rankBusyNs = busyNs[k.rank];
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(), [](const GpuKernelStats& a, const GpuKernelStats& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.totalNs != b.totalNs) return a.totalNs > b.totalNs;
    return a.name < b.name;
  });
  return out;
}

std::string demangledKernelName(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> plain(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && plain ? std::string(plain.get()) : name;
}

std::string withoutParameters(const std::string& name) {
  if (name.empty() || name.back() != ')') return name;
  int depth = 0;
  for (std::size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) return i > 0 ? name.substr(0, i) : name;
  }
  return name;
}

}  // namespace parascope::profiler
