#include "core/common/crc32.h"

#include <zlib.h>

#include <algorithm>

#ifdef PARASCOPE_HAVE_ISAL
#include <isa-l/crc.h>
#endif

namespace parascope {

std::uint32_t crc32Update(std::uint32_t crc, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
#ifdef PARASCOPE_HAVE_ISAL
  // Its length is 64-bit: one call whatever the size.
  return crc32_gzip_refl(crc, p, bytes);
#else
  uLong c = crc;
  while (bytes > 0) {  // zlib's length is a uInt
    const std::size_t n = std::min<std::size_t>(bytes, std::size_t{1} << 30);
    c = crc32_z(c, p, n);
    p += n;
    bytes -= n;
  }
  return static_cast<std::uint32_t>(c);
#endif
}

std::uint32_t crc32Combine(std::uint32_t first, std::uint32_t second, std::int64_t secondBytes) {
  return static_cast<std::uint32_t>(crc32_combine64(first, second, secondBytes));
}

}  // namespace parascope
