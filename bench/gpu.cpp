// parascope-cli bench gpu: each visible CUDA device's name and its dense GEMM peak in fp32, TF32,
// bf16 and fp16 (cuBLAS), the denominators of MFU on the GPU; with --pytorch, PyTorch's matmul
// on the same device in the same run, and our rate as a ratio of it. A benchmark: it prints
// figures and never fails on them.
#include "bench/gpu.h"

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/common/shipped_file.h"
#include "core/common/subprocess.h"
#ifdef PARASCOPE_HAVE_CUDA
#include "core/cuda/device.h"
#include "core/cuda/gemm_peak.h"
#endif

namespace parascope::bench {

#ifdef PARASCOPE_HAVE_CUDA
namespace {

// PyTorch's rate for the same GEMM, FLOP/s, from its JSON line.
double runPyTorch(const BenchGpuOptions& o, int device, std::string_view precision) {
  const std::string script =
      o.pytorchScript.empty() ? shippedFile("tests/tools/torch_gemm_peak.py") : o.pytorchScript;
  const std::vector<std::string> cmd = {o.python,      script,
                                        "--precision", std::string(precision),
                                        "--n",         std::to_string(o.n),
                                        "--reps",      std::to_string(o.reps),
                                        "--device",    std::to_string(device)};
  const ProcessOutput run = runCapturingOutput(cmd);
  const std::size_t last = run.out.rfind('{');
  if (run.exitStatus != 0 || last == std::string::npos)
    throw UserError("--pytorch: '" + commandLine(cmd) + "' failed (needs PyTorch with CUDA)");
  return nlohmann::json::parse(run.out.substr(last)).at("flops_per_s").get<double>();
}

}  // namespace

void runBenchGpu(const BenchGpuOptions& o) {
  const std::vector<cuda::DeviceInfo> devices = cuda::visibleDevices();
  if (devices.empty())
    throw UserError("bench gpu: no CUDA device to measure (" + cuda::whyNoDevice() + ")");
  for (const cuda::DeviceInfo& d : devices) {
    const std::string cc = std::to_string(d.major) + "." + std::to_string(d.minor);
    if (o.json) {
      std::printf("%s\n", nlohmann::json{{"bench", "gpu_device"},
                                         {"device", d.index},
                                         {"name", d.name},
                                         {"compute_capability", cc},
                                         {"multiprocessors", d.multiprocessors},
                                         {"memory_bytes", d.memoryBytes},
                                         {"driver", d.driverVersion},
                                         {"runtime", d.runtimeVersion}}
                              .dump()
                              .c_str());
    } else {
      std::printf("GPU %d: %s (compute capability %s, %d SMs, %.1f GiB; driver %s, runtime %s)\n",
                  d.index, d.name.c_str(), cc.c_str(), d.multiprocessors,
                  static_cast<double>(d.memoryBytes) / (1 << 30), d.driverVersion.c_str(),
                  d.runtimeVersion.c_str());
      std::printf("  %-5s %12s %12s%s\n", "gemm", "TFLOP/s", "ms/call",
                  o.pytorch ? "   PyTorch TFLOP/s   ours/PyTorch" : "");
    }
    for (cuda::GemmPrecision p : cuda::allPrecisions()) {
      const cuda::GemmRate r = cuda::measureGemm(d.index, p, o.n, o.reps);
      const double torch = o.pytorch ? runPyTorch(o, d.index, cuda::precisionName(p)) : 0.0;
      if (o.json) {
        nlohmann::json line = {{"bench", "gpu_gemm"},
                               {"device", d.index},
                               {"precision", cuda::precisionName(p)},
                               {"n", r.n},
                               {"reps", r.reps},
                               {"seconds_per_call", r.secondsPerCall},
                               {"flops_per_s", r.flopsPerSecond}};
        if (o.pytorch) {
          line["pytorch_flops_per_s"] = torch;
          line["ratio_to_pytorch"] = r.flopsPerSecond / torch;
        }
        std::printf("%s\n", line.dump().c_str());
      } else if (o.pytorch) {
        std::printf("  %-5s %12.1f %12.3f   %15.1f   %12.3f\n",
                    std::string(cuda::precisionName(p)).c_str(), r.flopsPerSecond / 1e12,
                    r.secondsPerCall * 1e3, torch / 1e12, r.flopsPerSecond / torch);
      } else {
        std::printf("  %-5s %12.1f %12.3f\n", std::string(cuda::precisionName(p)).c_str(),
                    r.flopsPerSecond / 1e12, r.secondsPerCall * 1e3);
      }
    }
  }
}
#else
void runBenchGpu(const BenchGpuOptions&) {
  throw UserError(
      "bench gpu: this build has no CUDA (the toolkit was not found when it was "
      "configured)");
}
#endif

}  // namespace parascope::bench
