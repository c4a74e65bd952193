// Tracer: per-thread single-producer chunk lists. The recording thread fills a chunk and
// publishes the new count with a release store; a collector reads up to the acquired count, so
// neither side waits for the other. Chunks live until the Tracer dies, so buffers outlive the
// threads that wrote them.
#include "profiler/tracer.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <thread>

namespace parascope::profiler {

namespace {
constexpr std::uint32_t kChunkEvents = 16384;  // ~1.3 MB
std::atomic<std::uint64_t> gNextGeneration{1};

struct LocalSlot {
  std::uint64_t generation = 0;
  void* buffer = nullptr;
};
thread_local LocalSlot tlSlot;
}  // namespace

// Chunks come from mmap with MAP_POPULATE: the kernel maps all pages in one call, instead of
// one page fault every 50 events on the recording thread (which tripled the cost of a span).
// The event slots stay uninitialised until written.
struct Tracer::Chunk {
  std::atomic<std::uint32_t> count{0};
  std::atomic<Chunk*> next{nullptr};
  alignas(Event) unsigned char storage[kChunkEvents * sizeof(Event)];

  Event* events() { return std::launder(reinterpret_cast<Event*>(storage)); }
  static Chunk* create() noexcept {
    void* p = ::mmap(nullptr, sizeof(Chunk), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? nullptr : new (p) Chunk;
  }
  static void destroy(Chunk* c) noexcept {
    c->~Chunk();
    ::munmap(c, sizeof(Chunk));
  }
};

struct Tracer::ThreadBuffer {
  Chunk* head;                 // reader only (under mutex_): oldest chunk not yet drained
  std::uint32_t readFrom = 0;  // reader only: events of head already drained
  Chunk* tail;                 // writer only
  std::uint32_t fill = 0;      // writer only: events in tail
  std::size_t total = 0;       // writer only

  explicit ThreadBuffer(Chunk* first) : head(first), tail(first) {}
  ~ThreadBuffer() {
    Chunk* c = head;
    while (c) {
      Chunk* n = c->next.load(std::memory_order_relaxed);
      Chunk::destroy(c);
      c = n;
    }
  }
};

Tracer::Tracer(Options options)
    : options_(options),
      generation_(gNextGeneration.fetch_add(1, std::memory_order_relaxed)),
      start_(trace::anchorNow()) {}

Tracer::~Tracer() {
  uninstall();
  for (Chunk* c : pool_) Chunk::destroy(c);
}

Tracer::Chunk* Tracer::acquireChunk() noexcept {
  {
    std::lock_guard lock(poolMutex_);
    if (!pool_.empty()) {
      Chunk* c = pool_.back();
      pool_.pop_back();
      return c;
    }
  }
  return Chunk::create();
}

void Tracer::install() {
  std::lock_guard lock(mutex_);
  installed_ = true;
  trace::setRecorder(this);
}

void Tracer::uninstall() {
  std::lock_guard lock(mutex_);
  if (installed_ && trace::recorder() == this) trace::setRecorder(nullptr);
  installed_ = false;
}

Tracer::ThreadBuffer* Tracer::registerThread() noexcept {
  Chunk* first = acquireChunk();
  if (!first) return nullptr;
  try {
    auto buffer = std::make_unique<ThreadBuffer>(first);
    std::lock_guard lock(mutex_);
    buffers_.push_back(std::move(buffer));
    return buffers_.back().get();
  } catch (...) {
    Chunk::destroy(first);
    return nullptr;
  }
}

Tracer::ThreadBuffer* Tracer::localBuffer() noexcept {
  if (tlSlot.generation != generation_) [[unlikely]] {
    ThreadBuffer* b = registerThread();
    if (!b) return nullptr;
    tlSlot = {generation_, b};
  }
  return static_cast<ThreadBuffer*>(tlSlot.buffer);
}

// The fast path touches only this thread's buffer and calls nothing, so it needs no stack
// frame; registering the thread, starting a new chunk and dropping go through recordSlow().
void Tracer::record(const Event& e) noexcept {
  if (tlSlot.generation == generation_) [[likely]] {
    auto* b = static_cast<ThreadBuffer*>(tlSlot.buffer);
    if (b->fill != kChunkEvents && b->total < options_.maxEventsPerThread) [[likely]] {
      new (b->tail->events() + b->fill) Event(e);
      ++b->fill;
      ++b->total;
      b->tail->count.store(b->fill, std::memory_order_release);
      return;
    }
  }
  recordSlow(e);
}

void Tracer::recordSlow(const Event& e) noexcept {
  ThreadBuffer* b = localBuffer();
  if (!b || b->total >= options_.maxEventsPerThread) [[unlikely]] {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (b->fill == kChunkEvents) [[unlikely]] {
    Chunk* c = acquireChunk();
    if (!c) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Publish the empty chunk before writing into it; the reader follows `next` only after it
    // has read the full count of the previous chunk.
    b->tail->next.store(c, std::memory_order_release);
    b->tail = c;
    b->fill = 0;
  }
  new (b->tail->events() + b->fill) Event(e);
  ++b->fill;
  ++b->total;
  b->tail->count.store(b->fill, std::memory_order_release);
}

void Tracer::addEvents(std::span<const Event> events) {
  std::lock_guard lock(mutex_);
  for (Event e : events) {
    e.name = external_.strings.intern(e.name);
    external_.events.push_back(e);
  }
}

void Tracer::setLaneName(std::int32_t rank, std::int32_t laneId, std::string name) {
  std::lock_guard lock(mutex_);
  external_.laneNames[{rank, laneId}] = std::move(name);
}

void Tracer::setGpuDevice(std::int32_t rank, std::int32_t device) {
  std::lock_guard lock(mutex_);
  external_.gpuDevices[rank] = device;
}

void Tracer::setWorldSize(int worldSize) {
  std::lock_guard lock(mutex_);
  external_.worldSize = std::max(1, worldSize);
}

void Tracer::setClockOffset(std::int64_t offsetNs, std::int64_t residualNs) {
  std::lock_guard lock(mutex_);
  offsetNs_ = offsetNs;
  external_.clockResidualNs = residualNs;
}

TraceData Tracer::collect() {
  return read(false);
}

TraceData Tracer::drain() {
  return read(true);
}

TraceData Tracer::read(bool consume) {
  // The tick rate comes from the tracer's start to now; wait until the two anchors are at
  // least 10 ms apart so a collection right after start still converts to within ~1e-5.
  auto end = trace::anchorNow();
  constexpr std::int64_t kMinBaselineNs = 10'000'000;
  if (end.ns - start_.ns < kMinBaselineNs) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(kMinBaselineNs - (end.ns - start_.ns)));
    end = trace::anchorNow();
  }
  const trace::TickConverter convert(start_, end);

  std::lock_guard lock(mutex_);
  TraceData out;
  for (const auto& b : buffers_) readBuffer(*b, convert, consume, out.events);
  for (Event e : external_.events) {
    e.name = out.strings.intern(e.name);
    e.startNs += offsetNs_;
    e.endNs += offsetNs_;
    out.events.push_back(e);
  }
  if (consume) external_.events.clear();
  out.worldSize = external_.worldSize;
  out.laneNames = external_.laneNames;
  out.rankNames = external_.rankNames;
  out.gpuDevices = external_.gpuDevices;
  out.clockResidualNs = external_.clockResidualNs;
  out.sortByTime();
  return out;
}

// Copies the buffer's published events; when consuming, full chunks the writer has left go
// back to the pool and the read position moves past what was copied.
void Tracer::readBuffer(ThreadBuffer& b, const trace::TickConverter& convert, bool consume,
                        std::vector<Event>& out) {
  std::uint32_t from = b.readFrom;
  Chunk* next = nullptr;
  for (Chunk* c = b.head; c; c = next) {
    const std::uint32_t n = c->count.load(std::memory_order_acquire);
    // Read after the count: a chunk is linked only once it is full.
    next = n == kChunkEvents ? c->next.load(std::memory_order_acquire) : nullptr;
    for (std::uint32_t i = from; i < n; ++i) {
      Event e = c->events()[i];
      e.startNs = convert.toNs(e.startNs) + offsetNs_;
      e.endNs = convert.toNs(e.endNs) + offsetNs_;
      out.push_back(e);
    }
    from = 0;
    if (!consume) continue;
    if (next) {
      b.head = next;
      b.readFrom = 0;
      c->count.store(0, std::memory_order_relaxed);
      c->next.store(nullptr, std::memory_order_relaxed);
      std::lock_guard lock(poolMutex_);
      pool_.push_back(c);
    } else {
      b.readFrom = n;
    }
  }
}

}  // namespace parascope::profiler
