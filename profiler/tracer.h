// The Tracer records the engine's spans and counters: each recording thread appends to its own
// chunked buffer with no lock (one release store publishes each event), and collect() copies
// everything recorded so far into a TraceData while recording goes on. It is what core's
// trace::Recorder interface is implemented by; CUPTI and other sources add ready events.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "profiler/trace_data.h"

namespace parascope::profiler {

class Tracer final : public trace::Recorder {
 public:
  struct Options {
    // Per recording thread; events past it are counted in dropped(), never block the thread.
    std::size_t maxEventsPerThread = std::size_t{1} << 24;
  };
  Tracer() : Tracer(Options{}) {}
  explicit Tracer(Options options);
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Makes this the process-wide recorder (trace::setRecorder) / removes it again.
  void install();
  void uninstall();

  void record(const Event& e) noexcept override;

  // Receives the engine's correlation scopes (trace::ScopedCorrelation), e.g. to hand them
  // to CUPTI as external correlation ids.
  class CorrelationSink {
   public:
    virtual ~CorrelationSink() = default;
    virtual void push(std::uint64_t id) noexcept = 0;
    virtual void pop() noexcept = 0;
  };
  // Null removes it. The sink must outlive its registration.
  void setCorrelationSink(CorrelationSink* sink) noexcept {
    sink_.store(sink, std::memory_order_release);
  }
  void pushCorrelation(std::uint64_t id) noexcept override {
    if (CorrelationSink* s = sink_.load(std::memory_order_acquire)) s->push(id);
  }
  void popCorrelation() noexcept override {
    if (CorrelationSink* s = sink_.load(std::memory_order_acquire)) s->pop();
  }
  // Events whose times already are steady-clock ns (CUPTI records); names are copied.
  void addEvents(std::span<const Event> events);
  void setLaneName(std::int32_t rank, std::int32_t laneId, std::string name);
  void setWorldSize(int worldSize);
  // The CUDA device whose activity `rank`'s GPU lanes hold (TraceData::gpuDevices).
  void setGpuDevice(std::int32_t rank, std::int32_t device);
  // Added to every timestamp on collection: this process's offset to the aligned clock.
  void setClockOffset(std::int64_t offsetNs, std::int64_t residualNs);

  // Everything recorded and not drained so far, in ns on the aligned clock, sorted by rank
  // and start. Safe while other threads record.
  TraceData collect();
  // Like collect(), and the events are gone from the tracer: buffers the recording threads
  // have filled are reused, so a run that drains every step records into warm memory.
  TraceData drain();
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Chunk;
  struct ThreadBuffer;
  ThreadBuffer* localBuffer() noexcept;
  [[gnu::noinline, gnu::cold]] void recordSlow(const Event& e) noexcept;
  ThreadBuffer* registerThread() noexcept;
  Chunk* acquireChunk() noexcept;
  TraceData read(bool consume);
  void readBuffer(ThreadBuffer& b, const trace::TickConverter& convert, bool consume,
                  std::vector<Event>& out);

  Options options_;
  const std::uint64_t generation_;
  const trace::ClockAnchor start_;
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<CorrelationSink*> sink_{nullptr};
  std::mutex mutex_;  // guards the members below, never taken by record() after registration
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
  TraceData external_;
  std::mutex poolMutex_;  // taken by a recording thread once per chunk it fills
  std::vector<Chunk*> pool_;
  std::int64_t offsetNs_ = 0;
  bool installed_ = false;
};

}  // namespace parascope::profiler
