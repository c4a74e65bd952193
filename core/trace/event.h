// The one event type of ParaScope's profiler: spans, counters and instants from every rank,
// lane and source (the engine's own spans, CUPTI records, imported PyTorch traces) share it.
// Plain data only; recording lives in core/trace/trace.h, storage and analyses in profiler/.
#pragma once

#include <cstdint>
#include <string_view>

namespace parascope::trace {

// What the time was spent on. Analyses read this, never the name.
enum class Category : std::uint8_t {
  Compute,        // kernels, forward/backward work
  Communication,  // collectives and point-to-point transfers
  Memcpy,         // host<->device or device<->device copies
  Memset,
  Runtime,  // host-side launch calls (cudaLaunchKernel, ...)
  Sync,     // waits on streams, events, handles
  DataLoad,
  Optimizer,
  Instruction,  // one pipeline-program instruction wrapping the work it did
  Step,         // one training step
  Memory,       // counters: live bytes of one memory category
  Host,         // anything else on the host
  Overhead,     // the profiler's own cost (CUPTI buffer flushes)
  Io,           // reads and writes of a file (the optimizer state's swap on a disk)
};
inline constexpr int kCategoryCount = 14;
std::string_view categoryName(Category c) noexcept;
// Inverse of categoryName; false when the name is not one of ours.
bool categoryFromName(std::string_view name, Category* out) noexcept;

enum class EventKind : std::uint8_t { Span, Counter, Instant };

// Lanes are rows of a rank's timeline. Fixed ids for the engine's own lanes; GPU streams and
// imported threads get ids from their own ranges so they never collide.
namespace lane {
inline constexpr std::int32_t kCompute = 0;
inline constexpr std::int32_t kCommunication = 1;
inline constexpr std::int32_t kHost = 2;
inline constexpr std::int32_t kData = 3;
inline constexpr std::int32_t kRuntime = 4;  // CUDA runtime/driver calls seen by CUPTI
inline constexpr std::int32_t kIo = 5;       // asynchronous file I/O, as it completes
// A parameter server's and its workers' lanes (core/ps): rows pulled, gradients pushed, the
// servers' updates, and what a rank waited on.
inline constexpr std::int32_t kPull = 6;
inline constexpr std::int32_t kPush = 7;
inline constexpr std::int32_t kApply = 8;
inline constexpr std::int32_t kWait = 9;
inline constexpr std::int32_t kFirstThread = 16;          // imported host threads
inline constexpr std::int32_t kFirstGpuStream = 1 << 20;  // + CUDA stream id
inline constexpr std::int32_t gpuStream(std::uint32_t stream) {
  return kFirstGpuStream + static_cast<std::int32_t>(stream & 0x7fffff);
}
inline constexpr bool isGpu(std::int32_t l) {
  return l >= kFirstGpuStream;
}
}  // namespace lane

namespace flag {
// This event starts the flow to every other event with the same correlation id
// (a send to its receive, a kernel launch to the GPU work).
inline constexpr std::uint8_t kFlowSource = 1;
// The bytes came from `peer` to this rank (a receive); without it they went to `peer`.
inline constexpr std::uint8_t kReceive = 2;
}  // namespace flag

// Times are nanoseconds on the aligned clock once collected (raw ticks while buffered, see
// trace.h). For counters `bytes` holds the counter's value and endNs == startNs.
struct Event {
  std::int64_t startNs = 0;
  std::int64_t endNs = 0;
  const char* name = "";  // static storage or owned by the trace that holds the event
  std::int64_t bytes = 0;
  std::uint64_t correlation = 0;  // 0: none
  std::int32_t rank = 0;
  std::int32_t lane = lane::kCompute;
  std::int32_t peer = -1;
  std::int32_t group = -1;
  std::int32_t step = -1;
  std::int32_t microBatch = -1;
  std::int32_t stage = -1;
  std::int32_t instruction = -1;
  Category category = Category::Host;
  EventKind kind = EventKind::Span;
  std::uint8_t flags = 0;
  // Args of an imported event that none of the fields above holds (Kineto's "External id",
  // "Input Dims", "grid", ...): an index into its trace's table of them, 0 for none. In the
  // padding after the bytes above, so it costs no memory.
  std::uint32_t args = 0;

  std::int64_t durationNs() const { return endNs - startNs; }
};
static_assert(sizeof(Event) == 80, "an event's size is the trace's memory per event");

}  // namespace parascope::trace
