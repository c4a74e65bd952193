// The real ActivitySource over CUPTI's Activity API: CUPTI asks for buffers (4 MiB each),
// fills them on its own threads and hands them back completed; we decode the records into a
// queue that flush() drains. Every CUPTI call is checked at the call site.
#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/trace/clock.h"
#include "profiler/cupti/activity_source.h"
#include "profiler/cupti/buffer_pool.h"
#include "profiler/cupti/cupti_decode.h"

namespace parascope::profiler {

namespace {

// CUPTI's buffers: 16 of 4 MiB at most (about 400k kernel records), returned by each flush.
constexpr std::size_t kBufferBytes = std::size_t{4} << 20;
constexpr std::size_t kMaxBuffers = 16;

std::string cuptiError(CUptiResult r, const char* call, const char* file, int line) {
  const char* text = "unknown";
  cuptiGetResultString(r, &text);
  return std::string(call) + " failed: " + text + " (" + file + ":" + std::to_string(line) + ")";
}
#define PARASCOPE_CUPTI(call, why)                        \
  do {                                                    \
    CUptiResult r_ = (call);                              \
    if (r_ != CUPTI_SUCCESS) {                            \
      *(why) = cuptiError(r_, #call, __FILE__, __LINE__); \
      return false;                                       \
    }                                                     \
  } while (0)

std::string callbackName(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name) return name;
  return "cuda api " + std::to_string(cbid);
}

const char* copyKindName(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "Memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "Memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "Memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "Memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "Memcpy PtoP";
    default: return "Memcpy";
  }
}

}  // namespace

bool decodeCuptiRecord(const CUpti_Activity* record, std::int64_t offsetNs, ActivityRecord* out) {
  using K = ActivityRecord::Kind;
  ActivityRecord& r = *out;
  auto times = [&](std::uint64_t start, std::uint64_t end) {
    r.startNs = static_cast<std::int64_t>(start) + offsetNs;
    r.endNs = static_cast<std::int64_t>(end) + offsetNs;
    r.timed = start != CUPTI_TIMESTAMP_UNKNOWN && end != CUPTI_TIMESTAMP_UNKNOWN;
  };
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      r.kind = K::Kernel;
      times(k->start, k->end);
      r.deviceId = k->deviceId;
      r.streamId = k->streamId;
      r.correlationId = k->correlationId;
      r.name = k->name ? k->name : "kernel";
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      r.kind = K::Memcpy;
      times(m->start, m->end);
      r.deviceId = m->deviceId;
      r.streamId = m->streamId;
      r.correlationId = m->correlationId;
      r.bytes = m->bytes;
      r.name = copyKindName(m->copyKind);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      r.kind = K::Memset;
      times(m->start, m->end);
      r.deviceId = m->deviceId;
      r.streamId = m->streamId;
      r.correlationId = m->correlationId;
      r.bytes = m->bytes;
      r.name = "Memset";
      return true;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      r.kind = runtime ? K::Runtime : K::Driver;
      times(a->start, a->end);
      r.threadId = a->threadId;
      r.correlationId = a->correlationId;
      r.name =
          callbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      r.kind = K::Synchronization;
      times(s->start, s->end);
      r.streamId = s->streamId;
      r.correlationId = s->correlationId;
      r.name = "synchronize";
      return true;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* x = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      r.kind = K::ExternalCorrelation;
      r.correlationId = x->correlationId;
      r.externalId = x->externalId;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
      r.kind = K::Overhead;
      times(o->start, o->end);
      r.name = "CUPTI overhead";
      return true;
    }
    default: return false;
  }
}

namespace {

// GPU work whose times CUPTI had not filled in when its buffer came back.
bool incomplete(const ActivityRecord& r) {
  using K = ActivityRecord::Kind;
  return !r.timed && (r.kind == K::Kernel || r.kind == K::Memcpy || r.kind == K::Memset);
}

// CUPTI calls back on its own threads, possibly after a source has stopped (a buffer it still
// held), so what the callbacks touch lives for the process: the pool the buffers come from and
// return to, and the source (if any) their records go to.
ActivityBufferPool& bufferPool() {
  static ActivityBufferPool pool(kBufferBytes, kMaxBuffers);
  return pool;
}

class CuptiActivitySource final : public ActivitySource {
 public:
  ~CuptiActivitySource() override { stop(); }

  bool start(std::string* whyNot) override {
    // One queue of buffers for the process, not one per thread: in-process ranks, their
    // communication workers and the host all call CUDA, and a buffer each would outgrow the pool.
    std::uint8_t perThread = 0;
    std::size_t size = sizeof perThread;
    PARASCOPE_CUPTI(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size,
                                              &perThread),
                    whyNot);
    PARASCOPE_CUPTI(cuptiActivityRegisterCallbacks(&bufferRequested, &bufferCompleted), whyNot);
    std::uint64_t now = 0;
    PARASCOPE_CUPTI(cuptiGetTimestamp(&now), whyNot);
    offsetNs_ = trace::steadyNs() - static_cast<std::int64_t>(now);
    instance_.store(this, std::memory_order_release);
    for (CUpti_ActivityKind kind : kKinds) {
      CUptiResult r = cuptiActivityEnable(kind);
      if (r != CUPTI_SUCCESS) {
        *whyNot = cuptiError(r, "cuptiActivityEnable", __FILE__, __LINE__);
        disableAll();
        instance_.store(nullptr, std::memory_order_release);
        return false;
      }
    }
    started_.store(true, std::memory_order_release);
    return true;
  }

  // The buffers CUPTI has completed; a forced flush, which also returns buffers whose records
  // are not finished, is for stop() only.
  void flush(const std::function<void(const ActivityRecord&)>& sink) override {
    if (started_.load(std::memory_order_acquire)) cuptiActivityFlushAll(0);
    std::vector<ActivityRecord> records;
    {
      std::lock_guard lock(mutex_);
      records.swap(records_);
    }
    for (const ActivityRecord& r : records) sink(r);
  }

  // Nothing new is recorded once the kinds are disabled; the forced flush then hands back every
  // buffer, and only after it does the source stop taking their records.
  void stop() override {
    if (!started_.exchange(false)) return;
    disableAll();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    CuptiActivitySource* self = this;
    instance_.compare_exchange_strong(self, nullptr);
    std::lock_guard lock(mutex_);  // a callback still decoding into this source finishes first
  }

  std::uint64_t droppedRecords() const override {
    std::lock_guard lock(mutex_);
    return dropped_;
  }

  void pushExternalId(std::uint64_t id) override {
    if (started_.load(std::memory_order_acquire))
      cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  }
  void popExternalId() override {
    std::uint64_t id = 0;
    if (started_.load(std::memory_order_acquire))
      cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
  }

 private:
  static constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                                  CUPTI_ACTIVITY_KIND_MEMCPY,
                                                  CUPTI_ACTIVITY_KIND_MEMSET,
                                                  CUPTI_ACTIVITY_KIND_RUNTIME,
                                                  CUPTI_ACTIVITY_KIND_DRIVER,
                                                  CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                                  CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                                  CUPTI_ACTIVITY_KIND_OVERHEAD};

  static void disableAll() {
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  }

  // No free buffer: CUPTI drops what it would have written and counts it (bufferCompleted).
  static void CUPTIAPI bufferRequested(std::uint8_t** buffer, std::size_t* size,
                                       std::size_t* maxRecords) {
    *buffer = bufferPool().take();
    *size = *buffer != nullptr ? kBufferBytes : 0;
    *maxRecords = 0;
  }

  // Runs on CUPTI's thread; decodes under the source's lock and gives the buffer back. Records
  // still unfinished (a forced flush's) and those CUPTI dropped count as dropped.
  static void CUPTIAPI bufferCompleted(CUcontext context, std::uint32_t streamId,
                                       std::uint8_t* buffer, std::size_t, std::size_t validSize) {
    CuptiActivitySource* self = instance_.load(std::memory_order_acquire);
    if (self != nullptr) {
      std::lock_guard lock(self->mutex_);
      CUpti_Activity* record = nullptr;
      CUptiResult r = CUPTI_SUCCESS;
      while ((r = cuptiActivityGetNextRecord(buffer, validSize, &record)) == CUPTI_SUCCESS) {
        ActivityRecord decoded;
        if (!decodeCuptiRecord(record, self->offsetNs_, &decoded)) continue;
        if (incomplete(decoded)) {
          ++self->dropped_;
          continue;
        }
        self->records_.push_back(std::move(decoded));
      }
      if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) ++self->dropped_;  // the rest of the buffer
      std::size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(context, streamId, &dropped) == CUPTI_SUCCESS)
        self->dropped_ += dropped;
    }
    bufferPool().give(buffer);
  }

  static inline std::atomic<CuptiActivitySource*> instance_{nullptr};
  mutable std::mutex mutex_;  // guards records_ and dropped_
  std::vector<ActivityRecord> records_;
  std::uint64_t dropped_ = 0;
  std::int64_t offsetNs_ = 0;
  std::atomic<bool> started_{false};
};

}  // namespace

std::unique_ptr<ActivitySource> makeCuptiActivitySource() {
  return std::make_unique<CuptiActivitySource>();
}

}  // namespace parascope::profiler
