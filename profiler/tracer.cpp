// Tracer: per-thread single-producer chunk lists. The recording thread fills a chunk and
// publishes the new count with a release store; a collector reads up to the acquired count, so
// neither side waits for the other. Chunks live until the Tracer dies, so buffers outlive the
// threads that wrote them.
#include "profiler/tracer.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace parascope::profiler {

namespace {
constexpr std::uint32_t kChunkEvents = 4096;
std::atomic<std::uint64_t> gNextGeneration{1};

struct LocalSlot {
  std::uint64_t generation = 0;
  void* buffer = nullptr;
};
thread_local LocalSlot tlSlot;
}  // namespace

struct Tracer::Chunk {
  Event events[kChunkEvents];
  std::atomic<std::uint32_t> count{0};
  std::atomic<Chunk*> next{nullptr};
};

struct Tracer::ThreadBuffer {
  std::unique_ptr<Chunk> head = std::make_unique<Chunk>();
  Chunk* tail = head.get();  // writer only
  std::uint32_t fill = 0;    // writer only: events in tail
  std::size_t total = 0;     // writer only
  ~ThreadBuffer() {
    Chunk* c = head->next.load(std::memory_order_relaxed);
    while (c) {
      Chunk* n = c->next.load(std::memory_order_relaxed);
      delete c;
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
  try {
    auto buffer = std::make_unique<ThreadBuffer>();
    std::lock_guard lock(mutex_);
    buffers_.push_back(std::move(buffer));
    return buffers_.back().get();
  } catch (...) {
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

void Tracer::record(const Event& e) noexcept {
  ThreadBuffer* b = localBuffer();
  if (!b || b->total >= options_.maxEventsPerThread) [[unlikely]] {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (b->fill == kChunkEvents) [[unlikely]] {
    Chunk* c = new (std::nothrow) Chunk;
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
  b->tail->events[b->fill] = e;
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
  for (const auto& b : buffers_) {
    for (Chunk* c = b->head.get(); c; c = c->next.load(std::memory_order_acquire)) {
      const std::uint32_t n = c->count.load(std::memory_order_acquire);
      for (std::uint32_t i = 0; i < n; ++i) {
        Event e = c->events[i];
        e.startNs = convert.toNs(e.startNs) + offsetNs_;
        e.endNs = convert.toNs(e.endNs) + offsetNs_;
        out.events.push_back(e);
      }
      if (n < kChunkEvents) break;
    }
  }
  for (Event e : external_.events) {
    e.name = out.strings.intern(e.name);
    e.startNs += offsetNs_;
    e.endNs += offsetNs_;
    out.events.push_back(e);
  }
  out.worldSize = external_.worldSize;
  out.laneNames = external_.laneNames;
  out.rankNames = external_.rankNames;
  out.clockResidualNs = external_.clockResidualNs;
  out.sortByTime();
  return out;
}

}  // namespace parascope::profiler
