#include "core/cuda/gemm_peak.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>

#include "core/common/error.h"
#include "core/cuda/blas.h"
#include "core/cuda/check.h"
#include "core/cuda/device.h"

namespace parascope::cuda {

namespace {

#define PARASCOPE_CUDA_CHECK(call) check((call), #call)

// n * n random values in [-1, 1) in the storage format of `p`, as bytes. The 16-bit formats are
// built from their fields (sign, exponent -8..-1, random mantissa) so no conversion library is
// needed and every value is exactly representable.
std::vector<std::uint8_t> randomMatrix(GemmPrecision p, std::size_t elements, unsigned seed) {
  std::mt19937 rng(seed);
  const std::size_t bytes = gemmTypes(p).bytes;
  std::vector<std::uint8_t> out(elements * bytes);
  std::uniform_int_distribution<int> exponent(-8, -1);
  for (std::size_t i = 0; i < elements; ++i) {
    const std::uint32_t sign = rng() & 1U;
    if (bytes == 4) {
      const float v = std::ldexp(1.0F + static_cast<float>(rng() % 1024) / 1024.0F, exponent(rng));
      const float s = sign ? -v : v;
      std::memcpy(&out[i * 4], &s, 4);
      continue;
    }
    const auto e = static_cast<std::uint32_t>(exponent(rng));
    const std::uint16_t bits =
        p == GemmPrecision::BF16
            ? static_cast<std::uint16_t>(sign << 15 | (e + 127) << 7 | (rng() & 0x7FU))
            : static_cast<std::uint16_t>(sign << 15 | (e + 15) << 10 | (rng() & 0x3FFU));
    std::memcpy(&out[i * 2], &bits, 2);
  }
  return out;
}

// Owns what one measurement allocates, so a failure halfway frees all of it.
struct Resources {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  cublasHandle_t handle = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Resources() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    if (handle) cublasDestroy(handle);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

}  // namespace

std::string_view precisionName(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::F32: return "fp32";
    case GemmPrecision::TF32: return "tf32";
    case GemmPrecision::BF16: return "bf16";
    case GemmPrecision::F16: return "fp16";
    case GemmPrecision::F32ViaBF16: return "fp32 via bf16";
    case GemmPrecision::F32ViaF16: return "fp32 via fp16";
  }
  return "fp32";
}

std::vector<GemmPrecision> allPrecisions() {
  return {GemmPrecision::F32, GemmPrecision::TF32, GemmPrecision::BF16, GemmPrecision::F16};
}

GemmRate measureGemm(int device, GemmPrecision precision, int n, int reps) {
  if (n < 1 || reps < 1)
    throw UserError("GEMM peak: size and repetitions must be at least 1 (got size " +
                    std::to_string(n) + ", " + std::to_string(reps) + " repetitions)");
  requireDevice(device, "GEMM peak");
  PARASCOPE_CUDA_CHECK(cudaSetDevice(device));
  const GemmTypes p = gemmTypes(precision);
  const std::size_t elements = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  Resources r;
  PARASCOPE_CUDA_CHECK(cudaMalloc(&r.a, elements * p.bytes));
  PARASCOPE_CUDA_CHECK(cudaMalloc(&r.b, elements * p.bytes));
  PARASCOPE_CUDA_CHECK(cudaMalloc(&r.c, elements * p.bytes));
  const auto hostA = randomMatrix(precision, elements, 1);
  const auto hostB = randomMatrix(precision, elements, 2);
  PARASCOPE_CUDA_CHECK(cudaMemcpy(r.a, hostA.data(), hostA.size(), cudaMemcpyHostToDevice));
  PARASCOPE_CUDA_CHECK(cudaMemcpy(r.b, hostB.data(), hostB.size(), cudaMemcpyHostToDevice));
  PARASCOPE_CUDA_CHECK(cublasCreate(&r.handle));
  PARASCOPE_CUDA_CHECK(cudaEventCreate(&r.start));
  PARASCOPE_CUDA_CHECK(cudaEventCreate(&r.stop));
  const float alpha = 1.0F, beta = 0.0F;
  auto gemm = [&] {
    PARASCOPE_CUDA_CHECK(cublasGemmEx(r.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, r.a,
                                      p.storage, n, r.b, p.storage, n, &beta, r.c, p.storage, n,
                                      p.compute, CUBLAS_GEMM_DEFAULT));
  };
  gemm();
  gemm();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < reps; ++i) {
    PARASCOPE_CUDA_CHECK(cudaEventRecord(r.start));
    gemm();
    PARASCOPE_CUDA_CHECK(cudaEventRecord(r.stop));
    PARASCOPE_CUDA_CHECK(cudaEventSynchronize(r.stop));
    float ms = 0;
    PARASCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, r.start, r.stop));
    best = std::min(best, static_cast<double>(ms) / 1e3);
  }
  GemmRate rate;
  rate.precision = precision;
  rate.n = n;
  rate.reps = reps;
  rate.secondsPerCall = best;
  const double nd = n;
  rate.flopsPerSecond = 2.0 * nd * nd * nd / best;
  return rate;
}

GemmPrecision productsFor(DType compute) {
  return compute == DType::BF16  ? GemmPrecision::F32ViaBF16
         : compute == DType::F16 ? GemmPrecision::F32ViaF16
                                 : GemmPrecision::F32;
}

GemmPrecision peakPrecision(GemmPrecision products) {
  return products == GemmPrecision::F32ViaBF16  ? GemmPrecision::BF16
         : products == GemmPrecision::F32ViaF16 ? GemmPrecision::F16
                                                : products;
}

double productPeak(int device, GemmPrecision products) {
  static std::mutex mutex;
  static std::map<std::pair<int, GemmPrecision>, double> peaks;
  const GemmPrecision precision = peakPrecision(products);
  // Held while measuring: a second session on the device waits for this measurement rather than
  // running its own beside it, which would halve both.
  const std::scoped_lock lock(mutex);
  const auto [it, added] = peaks.try_emplace({device, precision}, 0.0);
  if (added) {
    try {
      it->second = measureGemm(device, precision, 8192, 5).flopsPerSecond;
    } catch (...) {
      peaks.erase(it);
      throw;
    }
  }
  return it->second;
}

}  // namespace parascope::cuda
