#include "core/offload/disk_probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/tensor/allocator.h"

namespace parascope {

namespace {

using Clock = std::chrono::steady_clock;

double elapsedSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

DiskBandwidth measureDiskBandwidth(const std::string& dir, std::int64_t bytes, const AioSpec& aio,
                                   const std::string& what) {
  constexpr std::int64_t kChunk = std::int64_t{64} << 20;
  bytes = std::max(kChunk, bytes / kChunk * kChunk);
  Allocator allocator;
  AioFile file(dir, what, bytes, aio);
  AlignedBuffer buffer(2 * kChunk, false, allocator, MemoryCategory::Workspace);
  std::fill(buffer.data(), buffer.data() + buffer.size(), static_cast<char>(0x5a));
  auto pass = [&](bool write) {
    const auto start = Clock::now();
    std::vector<AioFile::Ticket> tickets(2, 0);
    for (std::int64_t at = 0, i = 0; at < bytes; at += kChunk, ++i) {
      AioFile::Ticket& t = tickets[static_cast<std::size_t>(i % 2)];
      if (t != 0) file.wait(t);
      char* b = buffer.data() + kChunk * (i % 2);
      t = write ? file.write(b, kChunk, at) : file.read(b, kChunk, at);
    }
    file.waitAll();
    return static_cast<double>(bytes) / elapsedSince(start);
  };
  DiskBandwidth d;
  d.writeBytesPerSecond = pass(true);
  d.readBytesPerSecond = pass(false);
  const auto start = Clock::now();
  AioFile::Ticket written = 0;
  for (std::int64_t at = 0, i = 0; at < bytes; at += kChunk, ++i) {
    char* b = buffer.data() + kChunk * (i % 2);
    const AioFile::Ticket read = file.read(b, kChunk, at);
    if (written != 0) file.wait(written);
    file.wait(read);
    written = file.write(b, kChunk, at);
  }
  file.waitAll();
  d.swapBytesPerSecond = 2 * static_cast<double>(bytes) / elapsedSince(start);
  return d;
}

}  // namespace parascope
