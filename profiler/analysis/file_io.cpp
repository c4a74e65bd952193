#include "profiler/analysis/file_io.h"

#include <map>
#include <string_view>
#include <utility>

#include "profiler/analysis/intervals.h"

namespace parascope::profiler {

std::vector<FileIo> computeFileIo(const TraceData& trace) {
  using Key = std::pair<std::int32_t, std::string>;
  std::map<Key, FileIo> files;
  std::map<Key, std::vector<Interval>> busy;
  // A request and its queue time start together: (rank, start) names the request's file.
  std::map<std::pair<std::int32_t, std::int64_t>, Key> startedAt;
  std::vector<const Event*> queued;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::Span || e.category != Category::Io) continue;
    const std::string_view name = e.name;
    if (name == "queued") {
      queued.push_back(&e);
      continue;
    }
    const bool write = name.ends_with(" write");
    if (!write && !name.ends_with(" read")) continue;
    const Key key{e.rank, std::string(name.substr(0, name.rfind(' ')))};
    FileIo& f = files[key];
    (write ? f.writes : f.reads) += 1;
    (write ? f.writeBytes : f.readBytes) += e.bytes;
    busy[key].push_back({e.startNs, e.endNs});
    startedAt.emplace(std::pair{e.rank, e.startNs}, key);
  }
  for (const Event* q : queued) {
    const auto it = startedAt.find({q->rank, q->startNs});
    if (it != startedAt.end()) files[it->second].queuedNs += q->durationNs();
  }
  std::vector<FileIo> out;
  for (auto& [key, f] : files) {
    f.rank = key.first;
    f.file = key.second;
    f.outstandingNs = totalLength(unite(std::move(busy[key])));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace parascope::profiler
