#include "core/kernels/cpu_level.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace parascope::kernels {

const char* cpuLevelName(CpuLevel level) {
  switch (level) {
    case CpuLevel::Baseline: return "baseline";
    case CpuLevel::Avx2: return "avx2";
    case CpuLevel::Avx512: return "avx512";
  }
  return "?";
}

std::vector<CpuLevel> supportedCpuLevels() {
  std::vector<CpuLevel> levels = {CpuLevel::Baseline};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    levels.push_back(CpuLevel::Avx2);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      levels.push_back(CpuLevel::Avx512);
    }
  }
#endif
  return levels;
}

namespace {

CpuLevel chooseCpuLevel() {
  const std::vector<CpuLevel> levels = supportedCpuLevels();
  const char* asked = std::getenv("PARASCOPE_CPU_LEVEL");
  if (asked == nullptr || *asked == '\0') return levels.back();
  for (const CpuLevel level : {CpuLevel::Baseline, CpuLevel::Avx2, CpuLevel::Avx512}) {
    if (std::strcmp(asked, cpuLevelName(level)) != 0) continue;
    // Asked for more than the CPU runs: the highest it does.
    return static_cast<int>(level) < static_cast<int>(levels.size()) ? level : levels.back();
  }
  std::fprintf(stderr,
               "parascope: PARASCOPE_CPU_LEVEL=%s is not a level (allowed: baseline, avx2, "
               "avx512); using %s\n",
               asked, cpuLevelName(levels.back()));
  return levels.back();
}

}  // namespace

CpuLevel cpuLevel() {
  static const CpuLevel level = chooseCpuLevel();
  return level;
}

}  // namespace parascope::kernels
