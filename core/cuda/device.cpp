#include "core/cuda/device.h"

#include "core/common/error.h"

#include <cuda_runtime.h>

namespace parascope::cuda {

namespace {

std::string versionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

}  // namespace

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

std::vector<DeviceInfo> visibleDevices() {
  std::vector<DeviceInfo> devices;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  for (int i = 0; i < deviceCount(); ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.multiprocessors = p.multiProcessorCount;
    d.memoryBytes = p.totalGlobalMem;
    d.driverVersion = versionText(driver);
    d.runtimeVersion = versionText(runtime);
    devices.push_back(std::move(d));
  }
  return devices;
}

std::string whyNoDevice() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  return n == 0 ? "no CUDA device visible" : "";
}

void requireDevice(int index, const std::string& what) {
  const int count = deviceCount();
  if (index < 0 || index >= count)
    throw UserError(what + ": CUDA device " + std::to_string(index) + " does not exist (" +
                    std::to_string(count) + " visible)");
}

}  // namespace parascope::cuda
