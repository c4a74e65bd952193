// libFuzzer entry point over the checkpoint reader: any bytes, unpacked into a checkpoint
// directory, must open and load exactly or fail with a UserError; nothing else may escape, crash
// or allocate beyond the files' size. The input is a sequence of files, each a little-endian u32
// name length, the name, a u32 data length and the data (a name that is not a plain file name, or
// a length past the end, ends the sequence), so mutations reach the manifest, the shards'
// headers and data, and `latest`. An opened checkpoint is read whole, every tensor and field, in
// f32 and bf16 runs that cross the stored slices, then its checksums are checked (finishChecks,
// verifyChecksums). Built with clang by scripts/fuzz.sh; the test suite replays the seeds and
// deterministic mutations of them through this same function.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/error.h"
#include "core/state/checkpoint.h"

namespace {

namespace fs = std::filesystem;

std::uint32_t takeLength(const std::uint8_t*& at, const std::uint8_t* end, bool& ok) {
  if (end - at < 4) {
    ok = false;
    return 0;
  }
  std::uint32_t n = 0;
  for (int i = 3; i >= 0; --i) n = (n << 8) | at[i];
  at += 4;
  return n;
}

// Writes the input's files into `dir`; returns the bytes written.
std::size_t unpack(const std::uint8_t* data, std::size_t size, const fs::path& dir) {
  const std::uint8_t* at = data;
  const std::uint8_t* const end = data + size;
  std::size_t written = 0;
  for (int files = 0; files < 16; ++files) {
    bool ok = true;
    const std::uint32_t nameLength = takeLength(at, end, ok);
    if (!ok || nameLength == 0 || nameLength > 64 || end - at < nameLength) break;
    const std::string name(reinterpret_cast<const char*>(at), nameLength);
    at += nameLength;
    const std::uint32_t length = takeLength(at, end, ok);
    if (!ok || end - at < length) break;
    if (name == "." || name == ".." ||
        name.find_first_of(std::string("/\0", 2)) != std::string::npos) {
      break;
    }
    const int fd =
        ::open((dir / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) break;
    for (std::uint32_t done = 0; done < length;) {
      const ssize_t n = ::write(fd, at + done, length - done);
      if (n <= 0) std::abort();
      done += static_cast<std::uint32_t>(n);
    }
    ::close(fd);
    at += length;
    written += length;
  }
  return written;
}

void loadWhole(const parascope::CheckpointReader& reader) {
  using namespace parascope;
  constexpr std::int64_t kRun = 977;  // crosses slice boundaries at odd places
  std::vector<float> f32(kRun);
  std::vector<std::uint16_t> bf16(kRun);
  for (const LogicalTensor& t : reader.manifest().tensors) {
    const std::int64_t n = shapeNumel(t.shape);
    for (int field = 0; field < kStateFieldCount; ++field) {
      for (std::int64_t begin = 0; begin < n; begin += kRun) {
        const std::int64_t count = std::min(kRun, n - begin);
        const bool narrow = (begin / kRun) % 2 == 1;
        reader.read({t.name, static_cast<StateField>(field), begin, count,
                     narrow ? static_cast<void*>(bf16.data()) : static_cast<void*>(f32.data()),
                     narrow ? DType::BF16 : DType::F32});
      }
    }
  }
  reader.finishChecks();
  reader.verifyChecksums();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  char pattern[] = "/tmp/parascope-checkpoint-fuzz-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) std::abort();
  const fs::path dir = pattern;
  unpack(data, size, dir);
  try {
    const parascope::CheckpointReader reader(dir.string());
    // Opening proved every element stored once within the files: a whole read is bounded by them.
    loadWhole(reader);
  } catch (const parascope::UserError& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
