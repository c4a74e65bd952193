// TraceData helpers: string interning, merging, ordering and default lane names.
#include "profiler/trace_data.h"

#include <algorithm>
#include <set>

namespace parascope::profiler {

const char* StringPool::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->data();
  const std::string& stored = storage_.emplace_back(s);
  index_.insert(std::string_view(stored));
  return stored.c_str();
}

std::uint32_t TraceData::addArgs(std::string_view members) {
  if (members.empty()) return 0;
  if (args.empty()) args.push_back("");
  args.push_back(strings.intern(members));
  return static_cast<std::uint32_t>(args.size() - 1);
}

void TraceData::adoptNames() {
  for (Event& e : events) e.name = strings.intern(e.name);
}

void TraceData::merge(const TraceData& other) {
  events.reserve(events.size() + other.events.size());
  for (Event e : other.events) {
    e.name = strings.intern(e.name);
    e.args = addArgs(other.argsOf(e));
    events.push_back(e);
  }
  worldSize = std::max(worldSize, other.worldSize);
  for (const auto& [k, v] : other.rankNames) rankNames.emplace(k, v);
  for (const auto& [k, v] : other.laneNames) laneNames.emplace(k, v);
  for (const auto& [k, v] : other.gpuDevices) gpuDevices.emplace(k, v);
  clockResidualNs = std::max(clockResidualNs, other.clockResidualNs);
  if (runConfig.empty()) runConfig = other.runConfig;
}

void TraceData::sortByTime() {
  auto before = [](const Event& a, const Event& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.startNs != b.startNs) return a.startNs < b.startNs;
    return a.endNs > b.endNs;
  };
  // Our own files and most recorders are already in order: one pass instead of a sort.
  if (!std::is_sorted(events.begin(), events.end(), before)) {
    std::stable_sort(events.begin(), events.end(), before);
  }
}

std::string TraceData::firstDifference(const TraceData& other) const {
  if (events.size() != other.events.size()) {
    return std::to_string(events.size()) + " events against " + std::to_string(other.events.size());
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& x = events[i];
    const Event& y = other.events[i];
    if (std::string_view(x.name) != std::string_view(y.name) || x.startNs != y.startNs ||
        x.endNs != y.endNs || x.bytes != y.bytes || x.correlation != y.correlation ||
        x.rank != y.rank || x.lane != y.lane || x.peer != y.peer || x.group != y.group ||
        x.step != y.step || x.microBatch != y.microBatch || x.stage != y.stage ||
        x.instruction != y.instruction || x.category != y.category || x.kind != y.kind ||
        x.flags != y.flags || argsOf(x) != other.argsOf(y)) {
      return "event " + std::to_string(i) + " (" + x.name + " against " + y.name + ")";
    }
  }
  if (rankNames != other.rankNames) return "rank names";
  if (laneNames != other.laneNames) return "lane names";
  if (gpuDevices != other.gpuDevices) return "GPU devices";
  if (worldSize != other.worldSize) return "world size";
  if (clockResidualNs != other.clockResidualNs) return "clock residual";
  if (runConfig != other.runConfig) return "run config";
  return "";
}

std::vector<std::int32_t> TraceData::ranks() const {
  std::set<std::int32_t> s;
  for (const Event& e : events) s.insert(e.rank);
  return {s.begin(), s.end()};
}

std::string TraceData::laneName(std::int32_t rank, std::int32_t laneId) const {
  auto it = laneNames.find({rank, laneId});
  if (it != laneNames.end()) return it->second;
  switch (laneId) {
    case trace::lane::kCompute: return "compute";
    case trace::lane::kCommunication: return "communication";
    case trace::lane::kHost: return "host";
    case trace::lane::kData: return "data";
    case trace::lane::kRuntime: return "CUDA runtime";
    case trace::lane::kIo: return "I/O";
    case trace::lane::kPull: return "pull";
    case trace::lane::kPush: return "push";
    case trace::lane::kApply: return "apply";
    case trace::lane::kWait: return "wait";
    default: break;
  }
  if (trace::lane::isGpu(laneId)) {
    const std::string stream = "stream " + std::to_string(laneId - trace::lane::kFirstGpuStream);
    auto device = gpuDevices.find(rank);
    return device != gpuDevices.end() ? "GPU " + std::to_string(device->second) + " " + stream
                                      : stream;
  }
  return "lane " + std::to_string(laneId);
}

}  // namespace parascope::profiler
