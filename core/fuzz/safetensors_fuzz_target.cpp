// libFuzzer entry point over the safetensors reader: any bytes, given as a file, must read or
// fail with a UserError; nothing else may escape, crash, recurse on the header's nesting or
// allocate beyond the file's size. The bytes go to an in-memory file (memfd), read through its
// /proc/self/fd path as a user's file would be. Built with clang by scripts/fuzz.sh; the test
// suite replays the fixtures and deterministic mutations of them through this same function.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/common/error.h"
#include "core/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  for (std::size_t at = 0; at < size;) {
    const ssize_t n = ::write(fd, data + at, size - at);
    if (n <= 0) std::abort();
    at += static_cast<std::size_t>(n);
  }
  try {
    const auto file = parascope::readSafetensors("/proc/self/fd/" + std::to_string(fd));
    std::size_t bytes = 0;
    for (const auto& [name, t] : file.tensors) bytes += t.nbytes();
    if (bytes > size) std::abort();  // tensors are disjoint slices of the file
  } catch (const parascope::UserError& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  ::close(fd);
  return 0;
}
