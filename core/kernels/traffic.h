// The bytes a kernel moves, which its trace span carries (trace::Span::bytes): each element it
// reads or writes counted once per pass over it (one it adds into, twice; a row it looks up per
// token, once per lookup), the traffic its loops stream. `bench step` divides them by the
// kernel's time and compares that with this machine's memory bandwidth.
#pragma once

#include <cstdint>

namespace parascope::kernels {

template <typename T>
constexpr std::int64_t arrayBytes(long elements) {
  return static_cast<std::int64_t>(elements) * static_cast<std::int64_t>(sizeof(T));
}

}  // namespace parascope::kernels
