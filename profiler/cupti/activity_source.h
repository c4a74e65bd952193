// The thin device API under the CUPTI collector, as in Kineto's CuptiActivityApi: a source
// starts activity collection and hands back device-neutral records. The real one wraps CUPTI's
// Activity API (cupti_activity_source.cpp, built where CUPTI is found); tests feed synthetic
// records through their own implementation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace parascope::profiler {

struct ActivityRecord {
  enum class Kind : std::uint8_t {
    Kernel,
    Memcpy,
    Memset,
    Runtime,
    Driver,
    Synchronization,
    ExternalCorrelation,  // maps correlationId -> externalId
    Overhead,
  };
  Kind kind = Kind::Kernel;
  std::int64_t startNs = 0;  // steady-clock ns (the source converts from CUPTI's clock)
  std::int64_t endNs = 0;
  std::uint32_t deviceId = 0;
  std::uint32_t streamId = 0;
  std::uint32_t threadId = 0;       // Runtime / Driver
  std::uint32_t correlationId = 0;  // CUPTI's, shared by a launch and its GPU work
  std::uint64_t externalId = 0;     // ExternalCorrelation: the host's id
  std::uint64_t bytes = 0;          // Memcpy / Memset
  bool timed = true;  // false: CUPTI had not recorded its times yet (a forced flush's record)
  std::string name;   // kernel or API name, copy direction, overhead kind
};

class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  // Begins collecting; on failure returns false with the reason and collects nothing.
  virtual bool start(std::string* whyNot) = 0;
  // Hands every completed record to `sink`, in no particular order.
  virtual void flush(const std::function<void(const ActivityRecord&)>& sink) = 0;
  virtual void stop() = 0;
  // Records lost so far because no buffer was free (the pool's bound); 0 for a lossless source.
  virtual std::uint64_t droppedRecords() const { return 0; }
  // Links device work launched from this thread meanwhile to the host's id.
  virtual void pushExternalId(std::uint64_t id) = 0;
  virtual void popExternalId() = 0;
};

// CUPTI's Activity API where the build found CUPTI; otherwise a source whose start() explains
// that this build has no CUPTI.
std::unique_ptr<ActivitySource> makeCuptiActivitySource();

}  // namespace parascope::profiler
