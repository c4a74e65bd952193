// The CUDA devices this process sees, and the one error type for CUDA runtime and library
// failures. Built only where the CUDA toolkit is found (PARASCOPE_HAVE_CUDA); callers without
// a device get an empty list, never an exception.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace parascope::cuda {

class CudaError : public std::runtime_error {
 public:
  explicit CudaError(const std::string& message) : std::runtime_error(message) {}
};

struct DeviceInfo {
  int index = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  std::size_t memoryBytes = 0;  // total global memory
  std::string driverVersion;    // "13.0"
  std::string runtimeVersion;
};

// CUDA devices visible to this process; 0 without a GPU or driver (never throws).
int deviceCount();

// Every visible device; empty without a GPU or driver.
std::vector<DeviceInfo> visibleDevices();

// Throws UserError "<what>: CUDA device <index> does not exist (<n> visible)" unless this
// process sees device `index`.
void requireDevice(int index, const std::string& what);

// Why no device is visible ("no CUDA-capable device is detected", "CUDA driver version is
// insufficient ..."): the runtime's own words, for the one line a GPU-less run prints.
std::string whyNoDevice();

}  // namespace parascope::cuda
