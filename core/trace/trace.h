// The tracing interface the engine calls. core/ defines it and never links the profiler: a
// Recorder (profiler/tracer.h implements one) is installed process-wide, and with none
// installed a Span or counter costs one load and one predictable branch. The calling thread's
// Context (rank, step, micro-batch, stage, instruction) is stamped on every event it records.
// Recorded events carry raw clock ticks (clock.h); the recorder converts them to ns.
#pragma once

#include <atomic>
#include <cstdint>
#include <new>

#include "core/trace/clock.h"
#include "core/trace/event.h"

namespace parascope::trace {

class Recorder {
 public:
  virtual ~Recorder() = default;
  // Called on the recording thread, concurrently from many threads; must not block.
  virtual void record(const Event& e) noexcept = 0;
  // Brackets host work that launches GPU work: device activity recorded meanwhile is linked
  // to `id` (CUPTI external correlation). Nothing to do without a GPU collector.
  virtual void pushCorrelation(std::uint64_t id) noexcept { (void)id; }
  virtual void popCorrelation() noexcept {}
};

namespace detail {
extern std::atomic<Recorder*> gRecorder;
}

// The installed recorder, or null when tracing is off.
inline Recorder* recorder() noexcept {
  return detail::gRecorder.load(std::memory_order_acquire);
}
// Install (or with null, remove) the process-wide recorder. Remove it, and let threads that
// might be inside record() finish, before destroying it.
void setRecorder(Recorder* r) noexcept;

// Tags stamped on events recorded by this thread; the engine sets them as it runs a program.
struct Context {
  std::int32_t rank = 0;
  std::int32_t step = -1;
  std::int32_t microBatch = -1;
  std::int32_t stage = -1;
  std::int32_t instruction = -1;
};
inline thread_local Context tlContext;
inline Context& context() noexcept {
  return tlContext;
}

// Sets some of this thread's context for a scope and restores the previous one on exit.
class ScopedContext {
 public:
  explicit ScopedContext(const Context& c) noexcept : saved_(tlContext) { tlContext = c; }
  ~ScopedContext() { tlContext = saved_; }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  Context saved_;
};

// Tags this thread's events with one pipeline instruction for a scope (stage, micro-batch,
// instruction id; rank and step stay as they are) and restores the previous tags on exit. The
// executor opens one around each instruction it runs, next to the instruction's own Span.
class ScopedInstruction {
 public:
  ScopedInstruction(std::int32_t stage, std::int32_t microBatch, std::int32_t instruction) noexcept
      : saved_(tlContext) {
    tlContext.stage = stage;
    tlContext.microBatch = microBatch;
    tlContext.instruction = instruction;
  }
  ~ScopedInstruction() { tlContext = saved_; }
  ScopedInstruction(const ScopedInstruction&) = delete;
  ScopedInstruction& operator=(const ScopedInstruction&) = delete;

 private:
  Context saved_;
};

inline void stampContext(Event& e) noexcept {
  const Context& c = tlContext;
  e.rank = c.rank;
  e.step = c.step;
  e.microBatch = c.microBatch;
  e.stage = c.stage;
  e.instruction = c.instruction;
}

// Records [construction, destruction) as one span; it cannot be left open. `name` must outlive
// the recorder (a string literal). Setters are no-ops while tracing is off.
class Span {
 public:
  Span(const char* name, Category category, std::int32_t laneId = lane::kCompute) noexcept
      : rec_(recorder()) {
    if (rec_) [[unlikely]]
      begin(name, category, laneId);
  }
  ~Span() {
    if (rec_) [[unlikely]] {
      event().endNs = ticks();
      rec_->record(event());
    }
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  Span& bytes(std::int64_t b) noexcept {
    return set([&](Event& e) { e.bytes = b; });
  }
  Span& peer(std::int32_t p) noexcept {
    return set([&](Event& e) { e.peer = p; });
  }
  Span& group(std::int32_t g) noexcept {
    return set([&](Event& e) { e.group = g; });
  }
  Span& correlation(std::uint64_t id) noexcept {
    return set([&](Event& e) { e.correlation = id; });
  }
  Span& flags(std::uint8_t f) noexcept {
    return set([&](Event& e) { e.flags |= f; });
  }
  bool active() const noexcept { return rec_ != nullptr; }

 private:
  void begin(const char* name, Category category, std::int32_t laneId) noexcept {
    Event* e = new (storage_) Event;
    stampContext(*e);
    e->name = name;
    e->category = category;
    e->lane = laneId;
    e->startNs = ticks();
  }
  Event& event() noexcept { return *std::launder(reinterpret_cast<Event*>(storage_)); }
  template <class F>
  Span& set(F f) noexcept {
    if (rec_) f(event());
    return *this;
  }

  Recorder* rec_;
  // Raw storage so that a disabled span initialises nothing.
  alignas(Event) unsigned char storage_[sizeof(Event)];
};

// A process-unique correlation id (never 0), for linking a launch to its GPU work or a send
// to its receive. Ranks in different processes must derive shared ids themselves.
std::uint64_t newCorrelationId() noexcept;

// Links GPU work launched in this scope to `id`; pair it with a Span carrying the same id.
class ScopedCorrelation {
 public:
  explicit ScopedCorrelation(std::uint64_t id) noexcept : rec_(recorder()) {
    if (rec_) [[unlikely]]
      rec_->pushCorrelation(id);
  }
  ~ScopedCorrelation() {
    if (rec_) [[unlikely]]
      rec_->popCorrelation();
  }
  ScopedCorrelation(const ScopedCorrelation&) = delete;
  ScopedCorrelation& operator=(const ScopedCorrelation&) = delete;

 private:
  Recorder* rec_;
};

// The host span of code that launches device work (a kernel, a copy): the span starts the flow
// to every activity launched in it, which the GPU's collector links through the same id.
// Costs one id only while tracing.
class LaunchSpan {
 public:
  LaunchSpan(const char* name, Category category) noexcept
      : id_(recorder() != nullptr ? newCorrelationId() : 0), span_(name, category), scope_(id_) {
    if (id_ != 0) span_.correlation(id_).flags(flag::kFlowSource);
  }
  LaunchSpan(const LaunchSpan&) = delete;
  LaunchSpan& operator=(const LaunchSpan&) = delete;

 private:
  std::uint64_t id_;
  Span span_;                // ends after the scope below is popped
  ScopedCorrelation scope_;  // declared last: popped first
};

namespace detail {
// An event of this thread's context from given times (raw ticks), to an installed recorder.
inline void recordTo(Recorder& r, const char* name, Category category, EventKind kind,
                     std::int32_t laneId, std::int64_t startTicks, std::int64_t endTicks,
                     std::int64_t value) noexcept {
  Event e;
  stampContext(e);
  e.name = name;
  e.category = category;
  e.kind = kind;
  e.lane = laneId;
  e.bytes = value;
  e.startNs = startTicks;
  e.endNs = endTicks;
  r.record(e);
}

// A zero-length event of the given kind at the current time (counters and instants).
inline void recordPoint(const char* name, Category category, EventKind kind, std::int64_t value,
                        std::int32_t laneId) noexcept {
  if (Recorder* r = recorder()) [[unlikely]] {
    const std::int64_t now = ticks();
    recordTo(*r, name, category, kind, laneId, now, now, value);
  }
}
}  // namespace detail

// A counter sample (e.g. live bytes of one memory category) at the current time.
inline void counter(const char* name, Category category, std::int64_t value,
                    std::int32_t laneId = lane::kHost) noexcept {
  detail::recordPoint(name, category, EventKind::Counter, value, laneId);
}

// A counter sample of `rank`'s recorded from any thread: a rank's memory is freed by the thread
// that ends its layout, and counted as the rank's there.
inline void rankCounter(const char* name, Category category, std::int64_t value,
                        std::int32_t rank) noexcept {
  if (Recorder* r = recorder()) [[unlikely]] {
    Event e;
    if (tlContext.rank == rank) stampContext(e);  // the rank's own thread: its step and stage
    e.rank = rank;
    e.name = name;
    e.category = category;
    e.kind = EventKind::Counter;
    e.lane = lane::kHost;
    e.bytes = value;
    e.startNs = e.endNs = ticks();
    r->record(e);
  }
}

// A span whose times were taken before (raw ticks, ticks()): work the thread did not do itself
// inside a scope, such as an asynchronous read it submitted and later found complete.
inline void span(const char* name, Category category, std::int32_t laneId, std::int64_t startTicks,
                 std::int64_t endTicks, std::int64_t bytes) noexcept {
  if (Recorder* r = recorder()) [[unlikely]]
    detail::recordTo(*r, name, category, EventKind::Span, laneId, startTicks, endTicks, bytes);
}

// A point in time worth marking (a checkpoint written, a strategy switched).
inline void instant(const char* name, Category category,
                    std::int32_t laneId = lane::kHost) noexcept {
  detail::recordPoint(name, category, EventKind::Instant, 0, laneId);
}

}  // namespace parascope::trace
