// The sgemm peak probe and its cache. The cache is read with the engine's bounded JSON reader and
// written through OutputFile (a temporary beside the target, renamed over it), so a reader never
// sees half a file and a damaged one is only ever ignored.
#include "core/kernels/sgemm_peak.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/bounded_json.h"
#include "core/common/output_file.h"
#include "core/kernels/blas.h"
#include "core/kernels/sgemm_library.h"

namespace parascope::kernels {

namespace {

constexpr const char* kFormat = "parascope-sgemm-peak";
// 2: the products' library and kernels (sgemm_library.h) instead of OpenBLAS's alone.
constexpr int kVersion = 2;
constexpr JsonLimits kCacheLimits{std::size_t{64} << 10, 4};
// Bounds the probe's time even with a clock that does not advance: each sample sleeps 1 ms.
constexpr int kMaxSamples = 1000;

std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const std::size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return "unknown";
}

}  // namespace

double steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double measureSgemmPeak(const SecondsClock& clock) {
  return measureSgemmPeak(sgemmLibrary(), clock);
}

double measureSgemmPeak(SgemmLibrary library, const SecondsClock& clock) {
  constexpr int n = kSgemmPeakSize;
  std::vector<float> a(static_cast<std::size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  setBlasThreads(1);
  const auto product = [&] {
    sgemmOn(library, false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  // Page faults and BLAS's buffers belong to no sample.
  product();
  double best = 0;
  const double start = clock();
  double now = start;
  for (int i = 0; i < kMaxSamples && now - start < kSgemmPeakBudgetSeconds; ++i) {
    const double t0 = clock();
    product();
    now = clock();
    if (now > t0) best = std::max(best, kSgemmPeakFlops / (now - t0));
    // The pause lets other work run now rather than in the middle of the next sample.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return best;
}

std::string sgemmPeakCachePath() {
  namespace fs = std::filesystem;
  fs::path dir;
  // The XDG base directory specification ignores relative paths.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    dir = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    dir = fs::path(home) / ".cache";
  } else {
    return {};
  }
  return (dir / "parascope" / "sgemm_peak.json").string();
}

SgemmPeakCache SgemmPeakCache::thisMachine() {
  return {sgemmPeakCachePath(), cpuModelName(), sgemmKernels(), sgemmBuild()};
}

std::optional<double> SgemmPeakCache::read() const {
  if (path.empty()) return std::nullopt;
  try {
    const nlohmann::json j = parseBoundedJson(
        readBoundedFile(path, kCacheLimits.maxBytes, "sgemm peak cache"), path, kCacheLimits);
    const bool ours =
        j.is_object() && j.value("format", "") == kFormat && j.value("version", 0) == kVersion &&
        j.value("cpu", "") == cpu && j.value("sgemm_kernels", "") == kernels &&
        j.value("sgemm_build", "") == build && j.value("sgemm_size", 0) == kSgemmPeakSize;
    if (!ours) return std::nullopt;
    const double flops = j.value("flops_per_second", 0.0);
    if (std::isfinite(flops) && flops > 0) return flops;
  } catch (const std::exception&) {
    return std::nullopt;  // missing, unreadable or not JSON: as if there were no cache
  }
  return std::nullopt;
}

double SgemmPeakCache::raise(double flops) const {
  // OutputFile's temporary is named by process: one writer at a time within it.
  static std::mutex writing;
  const std::lock_guard lock(writing);
  const double cached = read().value_or(0.0);
  if (!std::isfinite(flops) || flops <= cached) return cached;
  if (path.empty()) return flops;
  const nlohmann::json j = {
      {"format", kFormat},        {"version", kVersion},  {"cpu", cpu},
      {"sgemm_kernels", kernels}, {"sgemm_build", build}, {"sgemm_size", kSgemmPeakSize},
      {"flops_per_second", flops}};
  const std::string text = j.dump(2) + "\n";
  try {
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
    OutputFile out(path, "sgemm peak cache");
    out.write(text.data(), text.size());
    out.commit();
  } catch (const std::exception&) {
    return flops;  // not cached: the next start measures again
  }
  return flops;
}

double sgemmPeak() {
  const SgemmPeakCache cache = SgemmPeakCache::thisMachine();
  if (const std::optional<double> cached = cache.read()) return *cached;
  return cache.raise(measureSgemmPeak());
}

}  // namespace parascope::kernels
