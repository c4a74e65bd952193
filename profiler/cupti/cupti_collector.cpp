// CUPTI activity -> ParaScope events, and the collector's start/flush/fallback logic.
#include "profiler/cupti/cupti_collector.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>

#include "profiler/analysis/gpu_kernels.h"
#include "profiler/io/foreign_events.h"

namespace parascope::profiler {

template <typename K, typename V>
const V* ActivityConverter::Aged<K, V>::find(K k) const {
  for (const auto& m : maps_) {
    if (auto it = m.find(k); it != m.end()) return &it->second;
  }
  return nullptr;
}

template <typename K, typename V>
void ActivityConverter::Aged<K, V>::age() {
  std::rotate(maps_.rbegin(), maps_.rbegin() + 1, maps_.rend());
  maps_.front().clear();
}

void ActivityConverter::noteLaunch(std::uint64_t externalId, std::int32_t rank) {
  std::lock_guard lock(launchMutex_);
  launches_.put(externalId, rank);
}

const std::uint64_t* ActivityConverter::externalOf(const ActivityRecord& r) const {
  return r.correlationId != 0 ? external_.find(r.correlationId) : nullptr;
}

std::int32_t ActivityConverter::rankOf(const ActivityRecord& r) const {
  if (const std::uint64_t* ext = externalOf(r)) {
    std::lock_guard lock(launchMutex_);
    if (const std::int32_t* rank = launches_.find(*ext)) return *rank;
  }
  if (auto it = streamRanks_.find(r.streamId); it != streamRanks_.end()) return it->second;
  if (auto it = deviceRanks_.find(r.deviceId); it != deviceRanks_.end()) return it->second;
  return defaultRank_;
}

const char* ActivityConverter::kernelName(const std::string& name) {
  auto it = kernelNames_.find(name);
  if (it == kernelNames_.end()) it = kernelNames_.emplace(name, demangledKernelName(name)).first;
  return it->second.c_str();
}

trace::Event ActivityConverter::toEvent(const ActivityRecord& r) {
  using K = ActivityRecord::Kind;
  trace::Event e;
  e.startNs = r.startNs;
  e.endNs = r.endNs;
  e.name = r.name.c_str();  // re-interned by Tracer::addEvents
  e.rank = rankOf(r);
  e.lane = trace::lane::gpuStream(r.streamId);
  const std::uint64_t* ext = externalOf(r);
  const bool hostKnown = ext != nullptr;
  if (r.correlationId != 0)
    e.correlation = hostKnown ? *ext : (kCuptiCorrelationBit | r.correlationId);
  switch (r.kind) {
    case K::Kernel:
      e.name = kernelName(r.name);  // lives in kernelNames_ until re-interned
      e.category = containsNoCase(r.name, "nccl") ? trace::Category::Communication
                                                  : trace::Category::Compute;
      break;
    case K::Memcpy:
      e.category = trace::Category::Memcpy;
      e.bytes = static_cast<std::int64_t>(r.bytes);
      break;
    case K::Memset:
      e.category = trace::Category::Memset;
      e.bytes = static_cast<std::int64_t>(r.bytes);
      break;
    case K::Runtime:
    case K::Driver:
      if (!hostKnown) e.rank = defaultRank_;  // a call outside every rank's launch spans
      e.lane = trace::lane::kRuntime;
      e.category =
          containsNoCase(r.name, "synchronize") ? trace::Category::Sync : trace::Category::Runtime;
      // Without a host id the launch call itself starts the flow to its GPU work.
      if (!hostKnown && e.category == trace::Category::Runtime) e.flags |= trace::flag::kFlowSource;
      break;
    case K::Synchronization:
      e.rank = defaultRank_;
      e.lane = trace::lane::kRuntime;
      e.category = trace::Category::Sync;
      break;
    case K::Overhead:
      e.rank = defaultRank_;
      e.lane = trace::lane::kRuntime;
      e.category = trace::Category::Overhead;
      e.correlation = 0;
      break;
    case K::ExternalCorrelation: break;
  }
  return e;
}

std::vector<trace::Event> ActivityConverter::convert(const std::vector<ActivityRecord>& batch) {
  for (const ActivityRecord& r : batch) {
    if (r.kind == ActivityRecord::Kind::ExternalCorrelation)
      external_.put(r.correlationId, r.externalId);
  }
  std::vector<trace::Event> events;
  for (const ActivityRecord& r : batch) {
    if (r.kind != ActivityRecord::Kind::ExternalCorrelation) events.push_back(toEvent(r));
  }
  external_.age();
  std::lock_guard lock(launchMutex_);
  launches_.age();
  return events;
}

// Forwards the engine's correlation scopes to the activity source, noting which rank (the
// recording thread's) opened each.
class CuptiCollector::Link final : public Tracer::CorrelationSink {
 public:
  Link(ActivitySource& source, ActivityConverter& converter)
      : source_(source), converter_(converter) {}
  void push(std::uint64_t id) noexcept override {
    try {
      converter_.noteLaunch(id, trace::tlContext.rank);
    } catch (const std::bad_alloc&) {  // its GPU work goes to the collector's rank (said at stop)
      unnoted_.fetch_add(1, std::memory_order_relaxed);
    }
    source_.pushExternalId(id);
  }
  void pop() noexcept override { source_.popExternalId(); }
  std::uint64_t unnoted() const { return unnoted_.load(std::memory_order_relaxed); }

 private:
  ActivitySource& source_;
  ActivityConverter& converter_;
  std::atomic<std::uint64_t> unnoted_{0};  // launches whose rank could not be noted
};

CuptiCollector::CuptiCollector(Tracer& tracer, std::unique_ptr<ActivitySource> source,
                               std::int32_t rank, Log log)
    : tracer_(tracer), source_(std::move(source)), converter_(rank), log_(std::move(log)) {
  if (!log_) log_ = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
}

CuptiCollector::~CuptiCollector() {
  stop();
}

bool CuptiCollector::start() {
  std::lock_guard lock(mutex_);
  if (active_) return true;
  std::string why;
  if (!source_ || !source_->start(&why)) {
    if (!reported_) {
      log_("profiler: GPU activity collection unavailable (" +
           (source_ ? why : std::string("no activity source")) + "); recording host events only");
      reported_ = true;
    }
    return false;
  }
  link_ = std::make_unique<Link>(*source_, converter_);
  tracer_.setCorrelationSink(link_.get());
  active_ = true;
  return true;
}

void CuptiCollector::flush() {
  std::lock_guard lock(mutex_);
  if (active_) moveRecords();
}

void CuptiCollector::moveRecords() {
  std::vector<ActivityRecord> batch;
  source_->flush([&](const ActivityRecord& r) { batch.push_back(r); });
  const auto events = converter_.convert(batch);
  tracer_.addEvents(events);
  using K = ActivityRecord::Kind;
  for (const ActivityRecord& r : batch) {
    if (r.kind != K::Kernel && r.kind != K::Memcpy && r.kind != K::Memset) continue;
    const std::int32_t rank = converter_.rankOf(r);
    auto [it, added] = devices_.try_emplace(rank, r.deviceId);
    if (added || it->second != r.deviceId) {
      it->second = r.deviceId;
      tracer_.setGpuDevice(rank, static_cast<std::int32_t>(r.deviceId));
    }
  }
}

void CuptiCollector::stop() {
  std::lock_guard lock(mutex_);
  if (!active_) return;
  tracer_.setCorrelationSink(nullptr);
  source_->stop();  // its last buffers come back into its queue
  moveRecords();
  active_ = false;
  if (const std::uint64_t unnoted = link_->unnoted()) {
    log_("profiler: the launching rank of " + std::to_string(unnoted) +
         " GPU launches could not be noted (out of memory); their work is shown on its stream's "
         "rank or the collector's");
  }
  if (const std::uint64_t lost = source_->droppedRecords()) {
    log_("profiler: " + std::to_string(lost) +
         " GPU activity records were dropped (every CUPTI buffer was full); the GPU lanes are "
         "incomplete");
  }
}

}  // namespace parascope::profiler
