// Streaming Chrome trace writer. Events are formatted straight into the writer's buffer with
// std::to_chars; only fields that differ from an Event's defaults are written, so files stay
// small and the importer restores the defaults.
#include "profiler/io/chrome_export.h"

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

#include "core/common/error.h"
#include "profiler/io/foreign_events.h"
#include "profiler/io/trace_file.h"

namespace parascope::profiler {

namespace {

class EventWriter {
 public:
  EventWriter(TraceFileWriter& out, const TraceData& trace)
      : out_(out), b_(out.buffer()), trace_(trace) {}

  void integer(std::int64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    b_.append(tmp, r.ptr);
  }
  void unsignedInt(std::uint64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    b_.append(tmp, r.ptr);
  }
  // Microseconds with exactly three decimals, so the nanoseconds survive a round trip.
  void micros(std::int64_t ns) {
    std::uint64_t mag =
        ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    if (ns < 0) b_.push_back('-');
    unsignedInt(mag / 1000);
    const auto frac = static_cast<unsigned>(mag % 1000);
    const char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                            static_cast<char>('0' + frac / 10 % 10),
                            static_cast<char>('0' + frac % 10)};
    b_.append(digits, 4);
  }
  void string(std::string_view s) { appendJsonString(b_, s); }
  void raw(std::string_view s) { b_.append(s); }
  void field(std::string_view key, std::int64_t v, bool& first) {
    if (!first) b_.push_back(',');
    first = false;
    b_.push_back('"');
    b_.append(key);
    b_.append("\":");
    integer(v);
  }
  void header(char ph, const Event& e, bool& firstEvent) {
    raw(firstEvent ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
    firstEvent = false;
    b_.push_back(ph);
    raw("\",\"cat\":");
    string(exportCategory(e));
    raw(",\"name\":");
    string(e.name);
    raw(",\"pid\":");
    integer(e.rank);
    raw(",\"tid\":");
    integer(e.lane);
    raw(",\"ts\":");
    micros(e.startNs);
  }
  // Every non-default tag, as one JSON object body.
  void tags(const Event& e, bool& first) {
    if (e.bytes != 0 && e.kind != EventKind::Counter) field("bytes", e.bytes, first);
    if (e.peer != -1) field("peer", e.peer, first);
    if (e.group != -1) field("group", e.group, first);
    if (e.step != -1) field("step", e.step, first);
    if (e.microBatch != -1) field("micro_batch", e.microBatch, first);
    if (e.stage != -1) field("stage", e.stage, first);
    if (e.instruction != -1) field("instruction", e.instruction, first);
    if (e.correlation != 0) {
      if (!first) b_.push_back(',');
      first = false;
      raw("\"correlation\":");
      unsignedInt(e.correlation);
    }
    if (e.flags & trace::flag::kFlowSource) field("flow_source", 1, first);
    if (e.flags & trace::flag::kReceive) field("receive", 1, first);
    // Kineto's fields of GPU work: the device and stream it ran on.
    if (trace::lane::isGpu(e.lane) && e.kind != EventKind::Counter) {
      if (auto d = trace_.gpuDevices.find(e.rank); d != trace_.gpuDevices.end())
        field("device", d->second, first);
      field("stream", e.lane - trace::lane::kFirstGpuStream, first);
    }
  }
  void otherArgs(std::string_view others, bool& first) {
    if (others.empty()) return;
    if (!first) b_.push_back(',');
    first = false;
    raw(others);
  }
  // `others`: the event's args beyond its fields (TraceData::argsOf), written after them.
  void event(const Event& e, std::string_view others, bool& firstEvent) {
    bool first = true;
    switch (e.kind) {
      case EventKind::Span:
        header('X', e, firstEvent);
        raw(",\"dur\":");
        micros(e.endNs - e.startNs);
        raw(",\"args\":{");
        tags(e, first);
        otherArgs(others, first);
        raw("}}");
        break;
      case EventKind::Instant:
        header('i', e, firstEvent);
        raw(",\"s\":\"t\",\"args\":{");
        tags(e, first);
        otherArgs(others, first);
        raw("}}");
        break;
      case EventKind::Counter:
        // Counter args are plotted as series, so the tags go beside them.
        header('C', e, firstEvent);
        raw(",\"args\":{\"bytes\":");
        integer(e.bytes);
        raw("},\"tags\":{");
        tags(e, first);
        raw("}}");
        break;
    }
    out_.maybeFlush();
  }

 private:
  TraceFileWriter& out_;
  std::string& b_;
  const TraceData& trace_;
};

void writeMetadata(EventWriter& w, const TraceData& trace, const std::vector<const Event*>& events,
                   bool& firstEvent) {
  std::set<std::int32_t> ranks;
  std::set<std::pair<std::int32_t, std::int32_t>> lanes;
  for (const Event* e : events) {
    ranks.insert(e->rank);
    lanes.insert({e->rank, e->lane});
  }
  auto meta = [&](const char* name, std::int32_t pid, std::int32_t tid, const char* key,
                  const std::function<void()>& value) {
    w.raw(firstEvent ? "\n{\"ph\":\"M\",\"name\":\"" : ",\n{\"ph\":\"M\",\"name\":\"");
    firstEvent = false;
    w.raw(name);
    w.raw("\",\"pid\":");
    w.integer(pid);
    w.raw(",\"tid\":");
    w.integer(tid);
    w.raw(",\"args\":{\"");
    w.raw(key);
    w.raw("\":");
    value();
    w.raw("}}");
  };
  for (std::int32_t r : ranks) {
    auto it = trace.rankNames.find(r);
    const std::string label =
        it != trace.rankNames.end() ? it->second : "rank " + std::to_string(r);
    meta("process_name", r, 0, "name", [&] { w.string(label.c_str()); });
    meta("process_labels", r, 0, "labels",
         [&] { w.string(("rank " + std::to_string(r)).c_str()); });
    meta("process_sort_index", r, 0, "sort_index", [&] { w.integer(r); });
  }
  for (const auto& rl : lanes) {
    const std::int32_t r = rl.first, l = rl.second;  // lambdas cannot capture bindings (C++20)
    const std::string name = trace.laneName(r, l);
    meta("thread_name", r, l, "name", [&] { w.string(name.c_str()); });
    meta("thread_sort_index", r, l, "sort_index", [&] { w.integer(l); });
  }
}

// Kineto draws a flow from a launch to its GPU work ("ac2g"); sends to receives are "p2p".
void writeFlows(EventWriter& w, const std::vector<const Event*>& events, bool& firstEvent) {
  std::unordered_map<std::uint64_t, const Event*> sources;
  for (const Event* e : events) {
    if (e->correlation != 0 && (e->flags & trace::flag::kFlowSource))
      sources.emplace(e->correlation, e);
  }
  std::uint64_t id = 0;
  for (const Event* e : events) {
    if (e->correlation == 0 || (e->flags & trace::flag::kFlowSource)) continue;
    auto it = sources.find(e->correlation);
    if (it == sources.end()) continue;
    const Event& s = *it->second;
    const char* cat = s.category == Category::Communication ? "p2p" : "ac2g";
    ++id;
    for (int end = 0; end < 2; ++end) {
      const Event& x = end ? *e : s;
      w.raw(firstEvent ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
      firstEvent = false;
      w.raw(end ? "f\",\"bp\":\"e" : "s");
      w.raw("\",\"cat\":\"");
      w.raw(cat);
      w.raw("\",\"name\":\"");
      w.raw(cat);
      w.raw("\",\"id\":");
      w.unsignedInt(id);
      w.raw(",\"pid\":");
      w.integer(x.rank);
      w.raw(",\"tid\":");
      w.integer(x.lane);
      w.raw(",\"ts\":");
      w.micros(x.startNs);
      w.raw("}");
    }
  }
}

std::size_t writeFile(const TraceData& trace, const std::vector<const Event*>& events,
                      std::int32_t rank, const std::string& path) {
  TraceFileWriter out(path);
  EventWriter w(out, trace);
  w.raw("{\"schemaVersion\":1,\"parascopeVersion\":1,\"displayTimeUnit\":\"ns\",");
  w.raw("\"distributedInfo\":{\"backend\":\"parascope\",\"rank\":");
  w.integer(rank);
  w.raw(",\"world_size\":");
  w.integer(trace.worldSize);
  w.raw("},\"clockResidualNs\":");
  w.integer(trace.clockResidualNs);
  if (!trace.runConfig.empty()) {
    w.raw(",\"parascopeConfig\":");
    w.raw(trace.runConfig);
  }
  w.raw(",\"traceEvents\":[");
  bool firstEvent = true;
  writeMetadata(w, trace, events, firstEvent);
  for (const Event* e : events) w.event(*e, trace.argsOf(*e), firstEvent);
  writeFlows(w, events, firstEvent);
  w.raw("\n]}\n");
  out.commit();
  return out.bytesWritten();
}

}  // namespace

std::size_t exportChromeTrace(const TraceData& trace, const std::string& path) {
  std::vector<const Event*> events;
  events.reserve(trace.events.size());
  for (const Event& e : trace.events) events.push_back(&e);
  const auto ranks = trace.ranks();
  return writeFile(trace, events, ranks.empty() ? 0 : ranks.front(), path);
}

std::string perRankPath(const std::string& pattern, std::int32_t rank) {
  const std::string r = std::to_string(rank);
  if (auto at = pattern.find("{rank}"); at != std::string::npos) {
    return pattern.substr(0, at) + r + pattern.substr(at + 6);
  }
  for (const char* ext : {".json.gz", ".json"}) {
    const std::size_t n = std::strlen(ext);
    if (pattern.size() > n && pattern.compare(pattern.size() - n, n, ext) == 0) {
      return pattern.substr(0, pattern.size() - n) + ".rank" + r + ext;
    }
  }
  return pattern + ".rank" + r + ".json";
}

std::vector<std::string> exportChromeTracePerRank(const TraceData& trace,
                                                  const std::string& pattern,
                                                  const std::vector<InputPath>& inputs) {
  const std::vector<std::int32_t> ranks = trace.ranks();
  if (ranks.size() > kMaxPerRankFiles) {
    throw UserError("per-rank output: the trace has " + std::to_string(ranks.size()) +
                    " ranks, more files than the " + std::to_string(kMaxPerRankFiles) +
                    " one command writes; write it as one file (without --per-rank)");
  }
  // Every name is judged before the first file is written.
  for (std::int32_t rank : ranks) {
    checkOutputPath(perRankPath(pattern, rank), "per-rank output", inputs);
  }
  std::unordered_map<std::int32_t, std::vector<const Event*>> byRank;
  for (const Event& e : trace.events) byRank[e.rank].push_back(&e);
  std::vector<std::string> paths;
  try {
    for (std::int32_t rank : ranks) {
      const std::string path = perRankPath(pattern, rank);
      writeFile(trace, byRank[rank], rank, path);
      paths.push_back(path);
    }
  } catch (...) {
    // A stop or a failure part-way leaves no partial set: the files this call wrote go too.
    for (const std::string& path : paths) ::unlink(path.c_str());
    throw;
  }
  return paths;
}

}  // namespace parascope::profiler
