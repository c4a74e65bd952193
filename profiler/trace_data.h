// A recorded or imported trace: events from one or more ranks plus what names them (ranks,
// lanes, world size) and the strings the events point at. Value type; analyses, exporters and
// the GUI read it. Not thread-safe; the Tracer builds one per collection.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/trace/event.h"

namespace parascope::profiler {

using trace::Category;
using trace::Event;
using trace::EventKind;

// Owns strings with stable addresses; equal strings share one copy.
class StringPool {
 public:
  StringPool() = default;
  StringPool(const StringPool& other) = delete;
  StringPool& operator=(const StringPool&) = delete;
  StringPool(StringPool&&) noexcept = default;
  StringPool& operator=(StringPool&&) noexcept = default;

  const char* intern(std::string_view s);
  std::size_t size() const { return index_.size(); }

 private:
  std::deque<std::string> storage_;
  std::unordered_set<std::string_view> index_;
};

struct TraceData {
  std::vector<Event> events;
  int worldSize = 1;
  std::map<std::int32_t, std::string> rankNames;                           // rank -> label
  std::map<std::pair<std::int32_t, std::int32_t>, std::string> laneNames;  // (rank, lane)
  std::int64_t clockResidualNs = -1;  // cross-rank alignment residual, -1 unknown
  // rank -> the CUDA device its GPU lanes ran on (CUPTI's device id), for the ranks that have
  // GPU activity; exported as each GPU event's "device", as Kineto writes it.
  std::map<std::int32_t, std::int32_t> gpuDevices;
  // The recorded run's starting config as JSON text (the session's validated document); empty
  // for traces of other tools. What a prediction of the run is computed from.
  std::string runConfig;
  StringPool strings;
  // Event::args indexes this: each entry the members of a JSON object, as they were written
  // (`"External id":7,"Input Dims":[[2,3]]`), pooled in `strings`. Empty, or entry 0 is "".
  std::vector<const char*> args;

  TraceData() = default;
  TraceData(TraceData&&) noexcept = default;
  TraceData& operator=(TraceData&&) noexcept = default;

  // The args an event of this trace carries ("" for none).
  std::string_view argsOf(const Event& e) const {
    return e.args != 0 && e.args < args.size() ? args[e.args] : std::string_view();
  }
  // Pools `members` (a JSON object's, without the braces) and returns their Event::args index.
  std::uint32_t addArgs(std::string_view members);
  // Re-points event names at this trace's pool (after events came from elsewhere).
  void adoptNames();
  // Appends `other`, re-interning its names here.
  void merge(const TraceData& other);
  // Stable sort by (rank, start, longer first) so parents precede children.
  void sortByTime();
  std::vector<std::int32_t> ranks() const;
  // What first differs between this trace and `other` (an event field by field, names by their
  // text; the names of ranks and lanes, the world size, the clock residual, the run's config),
  // or "" when they hold the same.
  std::string firstDifference(const TraceData& other) const;
  std::string laneName(std::int32_t rank, std::int32_t laneId) const;
};

}  // namespace parascope::profiler
