// CRC-32 as zlib, gzip and safetensors tools compute it (the checksums in checkpoint manifests).
// ISA-L's carry-less-multiply kernels where the build found the library (about 21 GB/s on an
// AVX-512 core against zlib's 4), zlib's otherwise: the same values either way.
#pragma once

#include <cstddef>
#include <cstdint>

namespace parascope {

// The CRC of the bytes that gave `crc` followed by `data` (crc32Update(0, ...) starts one).
std::uint32_t crc32Update(std::uint32_t crc, const void* data, std::size_t bytes);

// The CRC of A followed by B, from A's and B's CRCs and B's length (zlib's crc32_combine).
std::uint32_t crc32Combine(std::uint32_t first, std::uint32_t second, std::int64_t secondBytes);

}  // namespace parascope
