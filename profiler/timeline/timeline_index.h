// The timeline's data, prepared for drawing: per (rank, lane) the spans split into nesting
// levels (within a level spans never overlap, so start and end are both sorted and a binary
// search finds the visible range), instants per lane, counter series per (rank, name) and flow
// pairs. Compact: a span is 24 bytes; the fields most spans leave at their defaults live in a
// shared, de-duplicated detail table. Every event can be rebuilt exactly (export, statistics).
// Plain C++, no Qt: testable without a window, built on any thread, not thread-safe (a whole
// build runs its ranks on threads of its own and merges them before it returns).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct SpanRec {
  std::int64_t startNs = 0;
  std::int64_t endNs = 0;
  std::uint32_t nameCat = 0;  // name id << 4 | category
  std::uint32_t detail = 0;   // index into TimelineIndex::details(); 0 is all defaults
  bool operator==(const SpanRec&) const = default;
};

// The rarely-set event fields, shared by every event that has the same values.
struct SpanDetail {
  std::int64_t bytes = 0;  // counters: the value
  std::uint64_t correlation = 0;
  std::int32_t peer = -1, group = -1, step = -1, microBatch = -1, stage = -1, instruction = -1;
  std::uint8_t flags = 0;
  std::uint32_t args = 0;  // an imported event's other args: index into TimelineIndex's; 0 none
  bool operator==(const SpanDetail&) const = default;
};

// A summary of kBlockSpans consecutive spans of one level. Zoomed out, a pixel column holds
// hundreds of spans: level of detail steps over whole blocks of sub-pixel spans, and searches
// the compact ends before the spans, instead of missing the cache on span after span.
inline constexpr std::size_t kBlockSpans = 16;
struct SpanBlock {
  std::int64_t lastEnd = 0;      // end of the block's last span
  std::int64_t maxDuration = 0;  // longest span in the block
  std::int64_t maxGap = 0;       // longest gap before one of its spans (from the previous span)
  bool operator==(const SpanBlock&) const = default;
};

struct Lane {
  std::int32_t rank = 0;
  std::int32_t laneId = 0;
  std::string name;
  std::vector<std::vector<SpanRec>> levels;  // [depth][i], sorted by start
  // [depth][b]: spans b * kBlockSpans .. b * kBlockSpans + kBlockSpans - 1 of that level,
  // full blocks only.
  std::vector<std::vector<SpanBlock>> blocks;
  std::vector<SpanRec> instants;         // sorted by time
  std::vector<std::int64_t> openEnds;    // each level's latest span's end (building)
  std::int64_t endNs = 0;                // latest end seen
  std::int64_t lastStartNs = INT64_MIN;  // the latest span placed in time order: its start
  std::int64_t lastEndNs = INT64_MIN;    // and its end
  bool flowEnds = false;  // holds a span with a correlation id: a moved span's flows follow it
};

struct CounterPoint {
  std::int64_t timeNs = 0;
  std::int64_t value = 0;
  bool operator==(const CounterPoint&) const = default;
};

struct CounterTrack {
  std::int32_t rank = 0;
  std::int32_t laneId = 0;
  std::uint32_t name = 0;
  Category category = Category::Memory;
  std::vector<CounterPoint> points;  // sorted by time
  std::int64_t minValue = 0, maxValue = 0;
};

// The value in force at `timeNs`: the last point at or before it (a counter holds its value
// until its next point, to the end of the trace); none before the first point.
std::optional<std::int64_t> counterValueAt(const std::vector<CounterPoint>& points,
                                           std::int64_t timeNs);

// Where a span lives in the index.
struct SpanRef {
  std::uint32_t lane = UINT32_MAX;
  std::uint32_t depth = 0;
  std::uint32_t index = 0;
  bool valid() const { return lane != UINT32_MAX; }
  bool operator==(const SpanRef&) const = default;
};

struct Flow {
  SpanRef from, to;
  bool operator==(const Flow&) const = default;
};

class FlowMatcher;

class TimelineIndex {
 public:
  TimelineIndex();
  ~TimelineIndex();
  TimelineIndex(TimelineIndex&&) noexcept;
  TimelineIndex& operator=(TimelineIndex&&) noexcept;
  // Builds from a whole trace; events must be sorted by (rank, start, longer first), as
  // TraceData::sortByTime leaves them. Groups of ranks are built on up to `threads` threads (0:
  // one per hardware thread) and merged into exactly the index one pass gives. `progress` (0..1)
  // is called on the calling thread and may return false to cancel; the index is then empty.
  bool build(const TraceData& trace, const std::function<bool(double)>& progress,
             unsigned threads = 0);
  void build(const TraceData& trace);
  // Live: events in per-lane start order give the same index as building from the whole
  // trace at once. An event older than its lane's newest is still placed (insertLate), in the
  // first level where it overlaps nothing, at a cost linear in the lane's size.
  void append(const Event* events, std::size_t count);
  void setNames(const TraceData& trace);  // rank and lane labels
  // After a whole build: frees spare capacity and the look-up tables that only serve appends
  // (later appends still work; they no longer share details with, or link flows to, older
  // spans).
  void compact();

  const std::vector<Lane>& lanes() const { return lanes_; }
  const std::vector<CounterTrack>& counters() const { return counters_; }
  const std::vector<Flow>& flows() const { return flows_; }
  const std::vector<SpanDetail>& details() const { return details_; }
  const std::string& name(std::uint32_t nameCat) const { return names_[nameCat >> 4]; }
  std::size_t nameCount() const { return names_.size(); }
  const std::map<std::int32_t, std::string>& rankNames() const { return rankNames_; }
  std::int64_t beginNs() const { return beginNs_; }
  std::int64_t endNs() const { return endNs_; }
  std::size_t eventCount() const { return eventCount_; }
  std::size_t bytesHeld() const;

  const SpanRec& span(SpanRef r) const { return lanes_[r.lane].levels[r.depth][r.index]; }
  // The span as the profiler event it came from; its `args` indexes this index's (argsText).
  Event event(SpanRef r) const;
  // An imported span's args beyond its fields, as JSON object members (TraceData::args); "" for
  // none.
  std::string_view argsText(SpanRef r) const { return args_[details_[span(r).detail].args]; }
  Event eventOf(const Lane& lane, const SpanRec& s, EventKind kind) const;
  // Every event held (spans, instants, counters), sorted like TraceData::sortByTime.
  TraceData toTrace(std::int64_t fromNs, std::int64_t toNs) const;

 private:
  struct FlowEnd {
    std::uint64_t correlation = 0;
    SpanRef ref;
    bool source = false;
  };
  struct IdMaps;
  void reserveFlows(const TraceData& trace);
  bool buildRange(const Event* events, std::size_t count,
                  const std::function<bool(std::size_t)>& chunkDone);
  bool buildThreaded(const TraceData& trace, const std::vector<std::size_t>& bounds,
                     const std::function<bool(double)>& progress);
  IdMaps mergeIds(const TimelineIndex& part);
  static void remapIds(TimelineIndex& part, const IdMaps& maps);
  void replayFlows(const std::vector<TimelineIndex>& parts, const std::vector<IdMaps>& maps);
  void adopt(TimelineIndex&& part, const IdMaps& maps);
  void planLevels(std::int32_t builtRank, std::size_t builtEvents, std::int32_t nextRank,
                  std::size_t nextEvents);
  void addLevels(Lane& lane, std::size_t count);
  void add(const Event& e);
  std::uint32_t laneFor(std::int32_t rank, std::int32_t laneId);
  std::uint32_t nameId(const char* name);
  std::uint32_t detailId(const Event& e);
  std::uint32_t argsId(const Event& e);
  void addCounter(const Event& e);
  static void insertByStart(std::vector<SpanRec>& v, const SpanRec& rec);
  SpanRef insertLate(std::uint32_t lane, const SpanRec& rec);
  static void updateBlocks(Lane& lane, std::uint32_t depth, std::size_t from);

  std::vector<Lane> lanes_;
  std::map<std::pair<std::int32_t, std::int32_t>, std::uint32_t> laneIndex_;
  std::pair<std::int32_t, std::int32_t> lastLaneKey_{INT32_MIN, 0};
  std::uint32_t lastLane_ = 0;
  std::deque<std::string> names_;  // deque: c_str() of events handed out stays valid
  std::unordered_map<const char*, std::uint32_t> namesByPointer_;  // pooled names repeat
  std::unordered_map<std::string, std::uint32_t> namesByText_;
  std::vector<SpanDetail> details_;
  std::vector<std::string> args_;  // [0] is ""
  // The args table of the trace a whole build reads (appended events carry no args).
  const std::vector<const char*>* sourceArgs_ = nullptr;
  struct DetailHash {
    std::size_t operator()(const SpanDetail& d) const noexcept;
  };
  // Shared details by value: open addressing over ids into details_ with a hash tag, so that
  // a probe (nearly every instruction's detail is new) reads 8-byte slots, not map nodes.
  struct DetailSlot {
    std::uint32_t id = 0;  // 0: empty (the all-defaults detail is never looked up)
    std::uint32_t tag = 0;
  };
  std::uint32_t findOrAddDetail(const SpanDetail& d, std::size_t hash);
  std::vector<DetailSlot> detailSlots_;  // size a power of two, at most half full
  std::size_t detailsShared_ = 0;        // ids in detailSlots_
  static constexpr std::size_t kCacheSlots = 1024;
  std::array<std::uint32_t, kCacheSlots> detailCache_{};  // detail ids by hash slot
  std::uint32_t lastDetail_ = 0;  // the last shared detail found: a kernel's neighbours repeat it
  std::array<std::pair<const char*, std::uint32_t>, kCacheSlots> nameCache_{};
  std::vector<CounterTrack> counters_;
  std::map<std::tuple<std::int32_t, std::int32_t, std::uint32_t>, std::uint32_t> counterIndex_;
  // Capacities (spans) by lane id and depth for planRank_'s levels, taken from the rank built
  // before it: the ranks of a run are alike, and a level that starts at its size is written
  // once, instead of doubling through fresh memory and being copied again by compact().
  std::int32_t planRank_ = INT32_MIN;
  std::map<std::int32_t, std::vector<std::size_t>> levelPlan_;
  std::unique_ptr<FlowMatcher> flowMatcher_;
  std::vector<Flow> flows_;
  // A part of a threaded build only records its flow ends (in order); the merge matches them,
  // so that flows across parts pair up and come out in one pass's order.
  bool deferFlows_ = false;
  std::vector<FlowEnd> flowEnds_;
  // Whether events came grouped by rank and in start order per lane, as a threaded build
  // needs: otherwise its parts' spans and recorded flow ends do not line up with one pass.
  bool ordered_ = true;
  std::int32_t lastRank_ = INT32_MIN;
  std::map<std::int32_t, std::string> rankNames_;
  std::int64_t beginNs_ = INT64_MAX, endNs_ = INT64_MIN;
  std::size_t eventCount_ = 0;
};

}  // namespace parascope::profiler
