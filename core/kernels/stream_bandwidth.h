// One thread's memory bandwidth, what the element-wise kernels are measured against in
// `bench step` (each kernel's bytes, traffic.h, over its time): STREAM's triad a = b + s c over
// arrays far larger than the caches, counting what it reads and writes (2 reads and 1 write per
// element; the write's cache-line fill not counted, as STREAM counts it). Kernels whose arrays
// fit in a cache can pass it. Not a model kernel.
#pragma once

#include <cstddef>

namespace parascope::kernels {

// Bytes per second: the best of `repeats` triads over three arrays of `elements` floats each.
double measureStreamBandwidth(std::size_t elements = std::size_t{16} << 20, int repeats = 5);

}  // namespace parascope::kernels
