// Collects GPU activity into the Tracer as ordinary events: kernels, copies, memsets,
// runtime/driver calls, synchronisation and CUPTI overhead, each on its rank (stream -> rank
// map) and GPU-stream lane; NCCL kernels become Communication. GPU work is linked to the host
// span that launched it through external correlation ids. When the source cannot start (no
// GPU, no driver, a build without CUPTI) it says so once and the run continues host-only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/cupti/activity_source.h"
#include "profiler/tracer.h"

namespace parascope::profiler {

// Correlation ids from CUPTI alone (no host id known) are tagged with this bit so they never
// collide with the engine's own ids. Bit 52, not higher: every id stays at most 2^53, which a
// JSON reader that holds numbers as doubles (JavaScript's, Perfetto's legacy importer) reads
// exactly; the engine's ids count up from 1 and CUPTI's are 32-bit.
inline constexpr std::uint64_t kCuptiCorrelationBit = std::uint64_t{1} << 52;
static_assert((kCuptiCorrelationBit | 0xffffffffu) < (std::uint64_t{1} << 53));

// Record -> event conversion state: which CUPTI correlation belongs to which host id, which rank
// launched under each host id (in-process ranks share a GPU and its streams), and which rank owns
// each stream (or, failing that, each device).
class ActivityConverter {
 public:
  explicit ActivityConverter(std::int32_t defaultRank = 0) : defaultRank_(defaultRank) {}
  void mapStream(std::uint32_t stream, std::int32_t rank) { streamRanks_[stream] = rank; }
  void mapDevice(std::uint32_t device, std::int32_t rank) { deviceRanks_[device] = rank; }
  // The rank whose host span opened correlation scope `externalId`; any thread, any time.
  void noteLaunch(std::uint64_t externalId, std::int32_t rank);
  // External-correlation records must be seen before the records they explain; flush order
  // does not guarantee that, so convert() takes a whole batch and maps first. What it learns
  // is kept for kGenerations batches: a launch's GPU work can complete a few flushes after it.
  std::vector<trace::Event> convert(const std::vector<ActivityRecord>& batch);
  // The launching rank where known, else the stream's, the device's, the default.
  std::int32_t rankOf(const ActivityRecord& r) const;

  static constexpr std::size_t kGenerations = 16;

 private:
  // Maps filled over the last kGenerations batches, newest first, so that neither grows with
  // the length of the run.
  template <typename K, typename V>
  class Aged {
   public:
    Aged() : maps_(kGenerations) {}
    void put(K k, V v) { maps_.front()[k] = v; }
    const V* find(K k) const;
    void age();  // the oldest batch's entries go

   private:
    std::vector<std::unordered_map<K, V>> maps_;
  };
  trace::Event toEvent(const ActivityRecord& r);
  const char* kernelName(const std::string& name);
  const std::uint64_t* externalOf(const ActivityRecord& r) const;

  std::int32_t defaultRank_;
  std::map<std::uint32_t, std::int32_t> streamRanks_;
  std::map<std::uint32_t, std::int32_t> deviceRanks_;
  Aged<std::uint32_t, std::uint64_t> external_;
  mutable std::mutex launchMutex_;  // guards launches_, noted from the ranks' threads
  Aged<std::uint64_t, std::int32_t> launches_;
  // Kernel names as C++ reads them, by the name CUPTI gives (mangled): one entry per kernel of
  // the program, each demangled once.
  std::unordered_map<std::string, std::string> kernelNames_;
};

class CuptiCollector {
 public:
  using Log = std::function<void(const std::string&)>;
  // `log` receives the one-line notice when collection cannot start (default: stderr).
  CuptiCollector(Tracer& tracer, std::unique_ptr<ActivitySource> source, std::int32_t rank = 0,
                 Log log = {});
  ~CuptiCollector();
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  // True when GPU activity is being collected; false means host-only (already reported).
  bool start();
  // Moves completed device records into the tracer, and the device each rank's GPU work ran on;
  // cheap to call at each step end.
  void flush();
  // Flushes and stops; says once how many records the source dropped, if any.
  void stop();
  bool active() const { return active_; }
  ActivityConverter& converter() { return converter_; }

 private:
  class Link;
  void moveRecords();  // under mutex_
  Tracer& tracer_;
  std::unique_ptr<ActivitySource> source_;
  std::unique_ptr<Link> link_;
  ActivityConverter converter_;
  Log log_;
  std::mutex mutex_;
  std::map<std::int32_t, std::uint32_t> devices_;  // rank -> device, as told to the tracer
  bool active_ = false;
  bool reported_ = false;
};

}  // namespace parascope::profiler
