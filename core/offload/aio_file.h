// One rank's swap file, read and written with Linux asynchronous direct I/O (libaio, as
// DeepSpeed's aio handle): requests are cut into blocks of AioSpec::blockSize, spread over
// AioSpec::threadCount kernel contexts of queueDepth blocks in flight each (DeepSpeed's
// intra-request parallelism; the rank's own thread submits to all of them, which never blocks
// with direct I/O), and complete while the rank computes; a ticket waits for one request. O_DIRECT
// keeps the state out of the page cache, so a step pays the disk's own bandwidth and the memory the
// run is allowed stays its own. Buffers, offsets and lengths are multiples of kAlignment.
//
// While tracing, each request is a span on the rank's I/O lane (trace::lane::kIo) from the moment
// it was asked for to the moment the rank found it complete, with its bytes; a child span covers
// the time it waited in the queue for the kernel to take its first block. A rank that blocks on
// an unfinished request records the wait on its compute lane.
//
// The file is created in the directory and unlinked at once: it exists while the run holds it
// open, and a run that dies, however it dies, leaves nothing on the disk that a restart could
// take for state. Its whole size is reserved up front (fallocate), so a disk too small is found
// before the first step rather than in the middle of one.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/parallel/strategy.h"
#include "core/tensor/allocator.h"

struct io_context;

namespace parascope {

// The names of a file's requests in the trace, which say which file it was (static strings).
struct AioTraceNames {
  const char* read = "swap read";
  const char* write = "swap write";
};

class AioFile {
 public:
  static constexpr std::int64_t kAlignment = 4096;
  using Ticket = std::uint64_t;
  static constexpr std::int64_t aligned(std::int64_t bytes) {  // rounded up to kAlignment
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

  // what: the config key naming the directory, for messages. Throws UserError naming it and
  // what to change when the directory is missing or not writable, its filesystem has no direct
  // I/O, or `bytes` do not fit on it.
  AioFile(const std::string& directory, const std::string& what, std::int64_t bytes,
          const AioSpec& aio, AioTraceNames names = {});
  ~AioFile();  // waits for every request still in flight (cancelling what it can)
  AioFile(const AioFile&) = delete;
  AioFile& operator=(const AioFile&) = delete;

  Ticket read(void* buffer, std::int64_t bytes, std::int64_t offset);
  Ticket write(const void* buffer, std::int64_t bytes, std::int64_t offset);
  // Blocks until the request is complete; throws std::runtime_error naming the directory and
  // the system's reason if any of its blocks failed. A ticket already waited for returns at once.
  void wait(Ticket ticket);
  void waitAll();

  // Submits what the queue has room for and takes completions without blocking: called between
  // pieces of computation, it keeps the disk busy.
  void progress();

  std::int64_t size() const { return bytes_; }
  std::int64_t bytesRead() const { return bytesRead_; }
  std::int64_t bytesWritten() const { return bytesWritten_; }

 private:
  struct Block {
    Ticket ticket;
    bool isWrite;
    char* buffer;
    std::int64_t bytes, offset;
  };
  struct Slot;  // a submitted block's control block (libaio's iocb), reused
  struct Request {
    int blocksLeft = 0;
    std::int64_t bytes = 0;
    bool isWrite = false;
    std::string error;
    std::int64_t askedAt = 0, submittedAt = 0;  // trace ticks; 0: not yet
  };
  Ticket enqueue(bool isWrite, char* buffer, std::int64_t bytes, std::int64_t offset);
  void submit();
  void reap(int atLeast);
  int reapContext(std::size_t c, int atLeast);  // returns the completions taken
  void destroyContexts() noexcept;

  std::string directory_;  // as messages quote it (printableText)
  std::string what_;
  AioSpec aio_;
  AioTraceNames names_;
  int fd_ = -1;
  std::vector<io_context*> contexts_;  // aio.thread_count of them
  std::vector<int> inFlight_;          // per context
  std::int64_t bytes_ = 0;
  std::deque<Block> queued_;                      // not yet submitted
  std::vector<Slot> slots_;                       // queueDepth per context
  std::vector<int> free_;                         // slots not in flight
  std::unordered_map<Ticket, Request> requests_;  // not yet waited for
  Ticket next_ = 1;
  std::int64_t bytesRead_ = 0, bytesWritten_ = 0;
};

// Before any rank starts: the directory exists, this user can create files there, its
// filesystem has direct I/O, and `bytes` (every swap file of the run on this machine) fit in
// its free space. Throws UserError naming `what` (the config key) and what to change.
void checkSwapDirectory(const std::string& directory, const std::string& what, double bytes,
                        const AioSpec& aio);

// Page-aligned memory for direct I/O, from the rank's allocator (so its peaks count it),
// optionally locked (pin_memory). Throws UserError if locking is refused.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(std::int64_t bytes, bool pin, Allocator& allocator, MemoryCategory category);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  char* data() const { return aligned_; }
  std::int64_t size() const { return bytes_; }

 private:
  Allocator* allocator_ = nullptr;
  MemoryCategory category_ = MemoryCategory::OptimizerState;
  void* raw_ = nullptr;
  char* aligned_ = nullptr;
  std::int64_t bytes_ = 0;
  bool pinned_ = false;
};

// Sub-groups or records read in front of the one in use when `buffers` pass a swap's data through
// memory: with three or more one is left for the write of the one before, which then has a whole
// update to finish.
inline constexpr int swapReadAhead(int buffers) {
  return buffers >= 3 ? buffers - 2 : buffers - 1;
}

// A rank's swap file (optimizer_swap.h, parameter_swap.h) and the one block of aligned memory its
// requests go through; the file's bytes count as the allocator's disk bytes while it exists.
class SwapFile {
 public:
  // what: the config key naming spec.nvmePath, for messages; bufferBytes 0: no buffers.
  SwapFile(const OffloadSpec& spec, const std::string& what, std::int64_t fileBytes,
           std::int64_t bufferBytes, const AioSpec& aio, AioTraceNames names, Allocator& allocator,
           MemoryCategory category);
  ~SwapFile();
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;

  AioFile& file() { return file_; }
  const AioFile& file() const { return file_; }
  char* buffers() const { return buffers_ ? buffers_->data() : nullptr; }
  Allocator& allocator() const { return allocator_; }

 private:
  Allocator& allocator_;
  // Declared before the file, so destroyed after it: the file waits for every request in flight
  // before the buffers those requests read and write go back.
  std::unique_ptr<AlignedBuffer> buffers_;
  AioFile file_;
};

}  // namespace parascope
