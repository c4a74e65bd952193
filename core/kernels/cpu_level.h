// The instruction-set level the element-wise kernels run at, chosen once at run time by what the
// CPU has, as PyTorch's CPU capability: every build (the portable one the tests and a
// distribution's package use included) runs each kernel as fast as a build for this CPU would.
// Each level's code is compiled for its own target in the same build, with floating-point
// contraction off, so every level computes the same bits: the level changes speed, never a result.
#pragma once

#include <string>
#include <vector>

namespace parascope::kernels {

enum class CpuLevel { Baseline, Avx2, Avx512 };

// A function compiled for a level's instructions, whatever the build's own flags (x86-64 only).
#define PARASCOPE_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define PARASCOPE_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))

// "baseline" (x86-64's SSE2), "avx2" (AVX2 + FMA), "avx512" (AVX-512 F, BW, DQ, VL).
const char* cpuLevelName(CpuLevel level);
// The levels this CPU runs, lowest first.
std::vector<CpuLevel> supportedCpuLevels();
// The level the kernels use: the highest this CPU runs, or the one PARASCOPE_CPU_LEVEL names
// (lowered to what the CPU runs; a name that is no level is ignored with a line on stderr).
CpuLevel cpuLevel();

}  // namespace parascope::kernels
