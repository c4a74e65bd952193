// Building the per-lane index: one pass over events in time order; each level's latest end per
// lane decides each span's level (below every span that encloses it, in the first level free at
// its start, so spans that overlap only in part, such as requests answered out of order, share
// levels instead of stacking one below the other), and appending later events continues exactly
// where a build stops.
// A whole build runs that pass over groups of ranks on threads of their own and merges them.
#include "profiler/timeline/timeline_index.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "core/common/checked_math.h"
#include "profiler/timeline/flow_matcher.h"

namespace parascope::profiler {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

// Below this many events per thread a build is not worth splitting.
constexpr std::size_t kMinPartEvents = std::size_t{1} << 14;

// Where a threaded build splits the events: [0, ..., n], each split at the rank change nearest
// to an equal share, so that every rank is built whole within one part.
std::vector<std::size_t> rankSplits(const std::vector<Event>& events, unsigned parts) {
  const std::size_t n = events.size();
  std::vector<std::size_t> bounds{0};
  for (unsigned k = 1; k < parts; ++k) {
    const std::size_t target = n * k / parts;
    const std::int32_t rank = events[target].rank;
    const auto first = static_cast<std::size_t>(
        std::lower_bound(events.begin(), events.end(), rank,
                         [](const Event& e, std::int32_t r) { return e.rank < r; }) -
        events.begin());
    const auto last = static_cast<std::size_t>(
        std::upper_bound(events.begin(), events.end(), rank,
                         [](std::int32_t r, const Event& e) { return r < e.rank; }) -
        events.begin());
    const std::size_t at = target - first <= last - target ? first : last;
    if (at > bounds.back() && at < n) bounds.push_back(at);
  }
  bounds.push_back(n);
  return bounds;
}

bool hasDetail(const Event& e) {
  return e.bytes != 0 || e.correlation != 0 || e.peer != -1 || e.group != -1 || e.step != -1 ||
         e.microBatch != -1 || e.stage != -1 || e.instruction != -1 || e.flags != 0 || e.args != 0;
}

}  // namespace

std::size_t TimelineIndex::DetailHash::operator()(const SpanDetail& d) const noexcept {
  std::uint64_t h = mix(static_cast<std::uint64_t>(d.bytes), d.correlation);
  h = mix(h, (static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.peer)) << 32) |
                 static_cast<std::uint32_t>(d.group));
  h = mix(h, (static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.step)) << 32) |
                 static_cast<std::uint32_t>(d.microBatch));
  h = mix(h, (static_cast<std::uint64_t>(static_cast<std::uint32_t>(d.stage)) << 32) |
                 static_cast<std::uint32_t>(d.instruction));
  return static_cast<std::size_t>(mix(h, static_cast<std::uint64_t>(d.args) << 8 | d.flags));
}

TimelineIndex::~TimelineIndex() = default;
TimelineIndex::TimelineIndex(TimelineIndex&&) noexcept = default;
TimelineIndex& TimelineIndex::operator=(TimelineIndex&&) noexcept = default;

TimelineIndex::TimelineIndex() : flowMatcher_(std::make_unique<FlowMatcher>()) {
  details_.emplace_back();
  args_.emplace_back();
}

// A build's part: its own ids for names and details, renumbered into the whole index's.
struct TimelineIndex::IdMaps {
  std::vector<std::uint32_t> names;    // the part's name id -> the index's
  std::vector<std::uint32_t> details;  // the part's detail id -> the index's
  std::uint32_t laneBase = 0;          // where the part's lanes and counters go in the index
  std::uint32_t counterBase = 0;
};

void TimelineIndex::build(const TraceData& trace) {
  build(trace, [](double) { return true; });
}

bool TimelineIndex::build(const TraceData& trace, const std::function<bool(double)>& progress,
                          unsigned threads) {
  const std::size_t n = trace.events.size();
  if (threads == 0) {
    threads = static_cast<unsigned>(std::min<std::size_t>(
        std::max(1U, std::thread::hardware_concurrency()), n / kMinPartEvents));
  }
  // Parts start empty: a build on top of appended events makes one pass.
  const std::vector<std::size_t> bounds = threads > 1 && n > 0 && eventCount_ == 0
                                              ? rankSplits(trace.events, threads)
                                              : std::vector<std::size_t>{0, n};
  setNames(trace);
  reserveFlows(trace);
  sourceArgs_ = &trace.args;
  std::size_t done = 0;
  const bool complete = bounds.size() > 2
                            ? buildThreaded(trace, bounds, progress)
                            : buildRange(trace.events.data(), n, [&](std::size_t added) {
                                done += added;
                                return progress(static_cast<double>(done) / static_cast<double>(n));
                              });
  sourceArgs_ = nullptr;
  if (!complete) {
    *this = TimelineIndex();
    return false;
  }
  setNames(trace);
  compact();
  return true;
}

// One pass; chunkDone(events added) after each chunk may return false to stop.
bool TimelineIndex::buildRange(const Event* events, std::size_t count,
                               const std::function<bool(std::size_t)>& chunkDone) {
  constexpr std::size_t kChunk = 1 << 16;
  auto rankEnd = [&](std::size_t from, std::size_t to) {
    return static_cast<std::size_t>(
        std::upper_bound(events + from, events + to, events[from].rank,
                         [](std::int32_t r, const Event& e) { return r < e.rank; }) -
        events);
  };
  std::size_t rankBegin = 0;
  for (std::size_t i = 0; i < count;) {
    if (i > 0 && events[i].rank != events[i - 1].rank) {
      planLevels(events[i - 1].rank, i - rankBegin, events[i].rank, rankEnd(i, count) - i);
      rankBegin = i;
    }
    // A chunk stops where its rank does, so that the next rank starts with a plan.
    const std::size_t end = rankEnd(i, std::min(count, i + kChunk));
    append(events + i, end - i);
    if (!chunkDone(end - i)) return false;
    i = end;
  }
  return true;
}

// This index builds the first part itself, so its flows pair up as it goes; the other parts
// are built on threads of their own into indexes that record their flow ends, then merged in
// rank order. What orders the work: the workers only touch their own part and the atomics
// until this thread joins them; the merge runs after the join.
bool TimelineIndex::buildThreaded(const TraceData& trace, const std::vector<std::size_t>& bounds,
                                  const std::function<bool(double)>& progress) {
  const Event* events = trace.events.data();
  const std::size_t n = trace.events.size();
  std::vector<TimelineIndex> parts(bounds.size() - 2);
  std::vector<std::exception_ptr> errors(parts.size());
  std::atomic<std::size_t> done{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable partDone;
  std::size_t finished = 0;  // guarded by mutex
  auto fraction = [&] { return static_cast<double>(done) / static_cast<double>(n); };
  {
    std::vector<std::jthread> workers;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      parts[p].deferFlows_ = true;
      parts[p].sourceArgs_ = &trace.args;
      workers.emplace_back([&, p] {
        try {
          parts[p].buildRange(events + bounds[p + 1], bounds[p + 2] - bounds[p + 1],
                              [&](std::size_t added) {
                                done += added;
                                return !stop;
                              });
        } catch (...) {
          errors[p] = std::current_exception();
          stop = true;
        }
        const std::lock_guard lock(mutex);
        ++finished;
        partDone.notify_one();
      });
    }
    buildRange(events, bounds[1], [&](std::size_t added) {
      done += added;
      if (!progress(fraction())) stop = true;
      return !stop;
    });
    // Progress goes on while the other parts finish.
    std::unique_lock lock(mutex);
    while (!partDone.wait_for(lock, std::chrono::milliseconds(20),
                              [&] { return finished == parts.size(); })) {
      lock.unlock();
      if (!stop && !progress(fraction())) stop = true;
      lock.lock();
    }
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  if (stop) return false;
  // Parts line up with one pass only over events grouped by rank, in start order per lane.
  bool ordered = ordered_;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    ordered =
        ordered && parts[p].ordered_ && events[bounds[p + 1] - 1].rank < events[bounds[p + 1]].rank;
  }
  if (!ordered) {
    *this = TimelineIndex();
    setNames(trace);
    reserveFlows(trace);
    sourceArgs_ = &trace.args;
    done = 0;
    return buildRange(events, n, [&](std::size_t added) {
      done += added;
      return progress(fraction());
    });
  }
  std::vector<IdMaps> maps;
  // Room for every part's details at once: growing would copy the table, and what dedup
  // leaves spare stays (see compact()).
  std::size_t details = details_.size();
  for (const TimelineIndex& part : parts) details += part.details_.size();
  details_.reserve(details);
  auto laneBase = static_cast<std::uint32_t>(lanes_.size());
  auto counterBase = static_cast<std::uint32_t>(counters_.size());
  for (const TimelineIndex& part : parts) {
    maps.push_back(mergeIds(part));
    maps.back().laneBase = laneBase;
    maps.back().counterBase = counterBase;
    laneBase += static_cast<std::uint32_t>(part.lanes_.size());
    counterBase += static_cast<std::uint32_t>(part.counters_.size());
  }
  {
    // Renumbering touches every span of a part: on a thread per part, while this one pairs the
    // flow ends up (that needs only the lane bases).
    std::vector<std::jthread> workers;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      workers.emplace_back([&, p] { remapIds(parts[p], maps[p]); });
    }
    replayFlows(parts, maps);
  }
  for (std::size_t p = 0; p < parts.size(); ++p) adopt(std::move(parts[p]), maps[p]);
  return true;
}

// The part's names and details in its order, as one pass would have met them after this
// index's: a correlated detail is never shared, the others are found in or added to the table.
TimelineIndex::IdMaps TimelineIndex::mergeIds(const TimelineIndex& part) {
  IdMaps m;
  m.names.reserve(part.names_.size());
  for (const std::string& name : part.names_) {
    auto [it, inserted] = namesByText_.try_emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (inserted) names_.push_back(name);
    m.names.push_back(it->second);
  }
  m.details.resize(part.details_.size());
  for (std::size_t i = 1; i < part.details_.size(); ++i) {
    SpanDetail d = part.details_[i];
    if (d.correlation != 0 || d.args != 0) {
      if (d.args != 0) {
        args_.push_back(part.args_[d.args]);
        d.args = static_cast<std::uint32_t>(args_.size() - 1);
      }
      details_.push_back(d);
      m.details[i] = static_cast<std::uint32_t>(details_.size() - 1);
    } else {
      m.details[i] = findOrAddDetail(d, DetailHash()(d));
    }
  }
  return m;
}

void TimelineIndex::remapIds(TimelineIndex& part, const IdMaps& maps) {
  auto name = [&](std::uint32_t nameCat) { return maps.names[nameCat >> 4] << 4 | (nameCat & 15); };
  auto remap = [&](SpanRec& s) {
    s.nameCat = name(s.nameCat);
    s.detail = maps.details[s.detail];
  };
  for (Lane& l : part.lanes_) {
    for (auto& level : l.levels) std::for_each(level.begin(), level.end(), remap);
    std::for_each(l.instants.begin(), l.instants.end(), remap);
  }
  for (CounterTrack& c : part.counters_) c.name = name(c.name);
}

// The parts' flow ends, in rank order, through this index's matcher as in one pass.
void TimelineIndex::replayFlows(const std::vector<TimelineIndex>& parts,
                                const std::vector<IdMaps>& maps) {
  constexpr std::size_t kAhead = 16;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const std::vector<FlowEnd>& ends = parts[p].flowEnds_;
    for (std::size_t i = 0; i < ends.size(); ++i) {
      if (i + kAhead < ends.size()) flowMatcher_->prefetch(ends[i + kAhead].correlation);
      SpanRef ref = ends[i].ref;
      ref.lane += maps[p].laneBase;
      flowMatcher_->add(ends[i].correlation, ends[i].source, ref, flows_);
    }
  }
}

// Takes a renumbered part's lanes and counters, and the look-ups later appends use.
void TimelineIndex::adopt(TimelineIndex&& part, const IdMaps& maps) {
  for (Lane& l : part.lanes_) lanes_.push_back(std::move(l));
  for (const auto& [key, lane] : part.laneIndex_) laneIndex_.emplace(key, lane + maps.laneBase);
  if (!part.lanes_.empty()) {
    lastLaneKey_ = part.lastLaneKey_;
    lastLane_ = part.lastLane_ + maps.laneBase;
  }
  for (CounterTrack& c : part.counters_) counters_.push_back(std::move(c));
  for (const auto& [key, track] : part.counterIndex_) {
    counterIndex_.emplace(
        std::tuple{std::get<0>(key), std::get<1>(key), maps.names[std::get<2>(key)]},
        track + maps.counterBase);
  }
  beginNs_ = std::min(beginNs_, part.beginNs_);
  endNs_ = std::max(endNs_, part.endNs_);
  eventCount_ += part.eventCount_;
  lastRank_ = part.lastRank_;
}

void TimelineIndex::setNames(const TraceData& trace) {
  rankNames_ = trace.rankNames;
  for (Lane& l : lanes_) l.name = trace.laneName(l.rank, l.laneId);
}

// The flow table would otherwise double (and rehash at random) several times during a build:
// a sample of the events estimates how many carry a correlation id, and a flow has at least two
// ends. The stride is prime so that a trace's periodic structure does not bias the sample, and
// grows with the trace: each sample is a cache miss, and 2^13 of them estimate well enough.
void TimelineIndex::reserveFlows(const TraceData& trace) {
  auto prime = [](std::size_t v) {
    for (std::size_t d = 2; d * d <= v; ++d) {
      if (v % d == 0) return false;
    }
    return true;
  };
  std::size_t stride = std::max<std::size_t>(61, trace.events.size() >> 13);
  while (!prime(stride)) ++stride;
  std::size_t ends = 0;
  for (std::size_t i = 0; i < trace.events.size(); i += stride) {
    ends += trace.events[i].correlation != 0 ? stride : 0;
  }
  flowMatcher_->reserve(ends / 2);
}

void TimelineIndex::append(const Event* events, std::size_t count) {
  // Name pointers are only known to be stable within one call (the caller's pool may go).
  namesByPointer_.clear();
  nameCache_.fill({nullptr, 0});
  // Flow ends probe a large table at random: the slot of an end a few events ahead is loaded
  // while this event is added.
  constexpr std::size_t kAhead = 16;
  for (std::size_t i = 0; i < count; ++i) {
    if (i + kAhead < count && events[i + kAhead].correlation != 0) {
      flowMatcher_->prefetch(events[i + kAhead].correlation);
    }
    add(events[i]);
  }
}

void TimelineIndex::planLevels(std::int32_t builtRank, std::size_t builtEvents,
                               std::int32_t nextRank, std::size_t nextEvents) {
  levelPlan_.clear();
  planRank_ = nextRank;
  for (const Lane& l : lanes_) {
    if (l.rank != builtRank) continue;
    auto& plan = levelPlan_[l.laneId];
    for (const auto& level : l.levels) {
      const std::size_t spans = level.size() * nextEvents / std::max<std::size_t>(1, builtEvents);
      // A little room: a rank slightly larger than its scaled predecessor would double.
      plan.push_back(spans + spans / 32 + kBlockSpans);
    }
  }
}

void TimelineIndex::addLevels(Lane& lane, std::size_t count) {
  const std::size_t from = lane.levels.size();
  lane.levels.resize(count);
  lane.blocks.resize(count);
  if (lane.rank != planRank_) return;
  const auto plan = levelPlan_.find(lane.laneId);
  if (plan == levelPlan_.end()) return;
  for (std::size_t d = from; d < std::min(count, plan->second.size()); ++d) {
    lane.levels[d].reserve(plan->second[d]);
    lane.blocks[d].reserve(plan->second[d] / kBlockSpans);
  }
}

void TimelineIndex::compact() {
  // Spare room under a sixteenth (a level sized by planLevels) stays: freeing it would copy the
  // whole level.
  auto shrink = [](auto& v) {
    if (v.capacity() - v.size() > v.size() / 16) v.shrink_to_fit();
  };
  for (Lane& l : lanes_) {
    for (auto& level : l.levels) shrink(level);
    for (auto& blocks : l.blocks) shrink(blocks);
    l.instants.shrink_to_fit();
  }
  for (CounterTrack& c : counters_) c.points.shrink_to_fit();
  shrink(details_);
  shrink(flows_);
  std::vector<DetailSlot>().swap(detailSlots_);
  detailsShared_ = 0;
  flowMatcher_->clear();
  namesByPointer_.clear();
  nameCache_.fill({nullptr, 0});
  detailCache_.fill(0);
  lastDetail_ = 0;
  levelPlan_.clear();
  planRank_ = INT32_MIN;
}

std::uint32_t TimelineIndex::laneFor(std::int32_t rank, std::int32_t laneId) {
  const std::pair key{rank, laneId};
  if (key == lastLaneKey_) return lastLane_;
  auto [it, inserted] = laneIndex_.try_emplace(key, static_cast<std::uint32_t>(lanes_.size()));
  if (inserted) {
    Lane l;
    l.rank = rank;
    l.laneId = laneId;
    l.name = TraceData().laneName(rank, laneId);
    lanes_.push_back(std::move(l));
  }
  lastLaneKey_ = key;
  lastLane_ = it->second;
  return it->second;
}

std::uint32_t TimelineIndex::nameId(const char* name) {
  // Pooled names repeat: a direct-mapped cache by address skips most hash look-ups.
  auto& slot = nameCache_[(reinterpret_cast<std::uintptr_t>(name) >> 3) % kCacheSlots];
  if (slot.first == name) return slot.second;
  std::uint32_t id = 0;
  if (auto it = namesByPointer_.find(name); it != namesByPointer_.end()) {
    id = it->second;
  } else {
    auto [t, inserted] = namesByText_.try_emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (inserted) names_.emplace_back(name);
    namesByPointer_.emplace(name, t->second);
    id = t->second;
  }
  slot = {name, id};
  return id;
}

std::uint32_t TimelineIndex::detailId(const Event& e) {
  if (!hasDetail(e)) return 0;
  const SpanDetail d{e.bytes,      e.correlation, e.peer,        e.group, e.step,
                     e.microBatch, e.stage,       e.instruction, e.flags, argsId(e)};
  // A correlation id is (nearly) unique to its flow's ends, and args to their event: nothing
  // to share.
  if (d.correlation != 0 || d.args != 0) {
    details_.push_back(d);
    return static_cast<std::uint32_t>(details_.size() - 1);
  }
  // Runs of events (a step's kernels) share one detail: no hashing for those.
  if (details_[lastDetail_] == d) return lastDetail_;
  // Neighbouring events mostly share step, stage and micro-batch: a direct-mapped cache by hash
  // answers most look-ups without the table.
  const std::size_t h = DetailHash()(d);
  std::uint32_t& slot = detailCache_[h % kCacheSlots];
  if (details_[slot] == d) {
    lastDetail_ = slot;
    return slot;
  }
  slot = findOrAddDetail(d, h);
  lastDetail_ = slot;
  return slot;
}

std::uint32_t TimelineIndex::argsId(const Event& e) {
  if (e.args == 0 || sourceArgs_ == nullptr || e.args >= sourceArgs_->size()) return 0;
  args_.emplace_back((*sourceArgs_)[e.args]);
  return static_cast<std::uint32_t>(args_.size() - 1);
}

std::uint32_t TimelineIndex::findOrAddDetail(const SpanDetail& d, std::size_t hash) {
  if (2 * (detailsShared_ + 1) > detailSlots_.size()) {
    std::vector<DetailSlot> old = std::move(detailSlots_);
    detailSlots_.assign(std::max<std::size_t>(1024, old.size() * 2), DetailSlot{});
    const std::size_t mask = detailSlots_.size() - 1;
    for (const DetailSlot& s : old) {
      if (s.id == 0) continue;
      std::size_t i = s.tag & mask;
      while (detailSlots_[i].id != 0) i = (i + 1) & mask;
      detailSlots_[i] = s;
    }
  }
  // The tag holds the hash's well-mixed high bits: the slot comes from it, and it rejects
  // most other details without reading them.
  const auto tag = static_cast<std::uint32_t>((hash * 0x9e3779b97f4a7c15ULL) >> 32);
  const std::size_t mask = detailSlots_.size() - 1;
  for (std::size_t i = tag & mask;; i = (i + 1) & mask) {
    DetailSlot& s = detailSlots_[i];
    if (s.id == 0) {
      s = {static_cast<std::uint32_t>(details_.size()), tag};
      details_.push_back(d);
      ++detailsShared_;
      return s.id;
    }
    if (s.tag == tag && details_[s.id] == d) return s.id;
  }
}

void TimelineIndex::add(const Event& e) {
  ++eventCount_;
  ordered_ = ordered_ && e.rank >= lastRank_;
  lastRank_ = e.rank;
  beginNs_ = std::min(beginNs_, e.startNs);
  endNs_ = std::max(endNs_, e.endNs);
  if (e.kind == EventKind::Counter) {
    addCounter(e);
    return;
  }
  const SpanRec rec{e.startNs, e.endNs,
                    nameId(e.name) << 4 | static_cast<std::uint32_t>(e.category), detailId(e)};
  const std::uint32_t laneNo = laneFor(e.rank, e.lane);
  Lane& lane = lanes_[laneNo];
  lane.endNs = std::max(lane.endNs, e.endNs);
  if (e.kind == EventKind::Instant) {
    insertByStart(lane.instants, rec);
    return;
  }
  SpanRef ref;
  // Late: it starts before the latest span placed, or with it but ends after it (its parent,
  // which a whole build places first).
  if (e.startNs < lane.lastStartNs || (e.startNs == lane.lastStartNs && e.endNs > lane.lastEndNs)) {
    ordered_ = false;
    ref = insertLate(laneNo, rec);
  } else {
    lane.lastStartNs = e.startNs;
    lane.lastEndNs = e.endNs;
    // Under its innermost encloser: the deepest level whose latest span is open and ends no
    // earlier. Then the first level from there whose latest span has ended.
    std::vector<std::int64_t>& ends = lane.openEnds;
    std::size_t depth = ends.size();
    while (depth > 0 && !(ends[depth - 1] > e.startNs && ends[depth - 1] >= e.endNs)) --depth;
    while (depth < ends.size() && ends[depth] > e.startNs) ++depth;
    if (depth == ends.size()) ends.push_back(e.endNs);
    ends[depth] = e.endNs;
    if (lane.levels.size() <= depth) addLevels(lane, depth + 1);
    lane.levels[depth].push_back(rec);
    if (lane.levels[depth].size() % kBlockSpans == 0) {
      updateBlocks(lane, static_cast<std::uint32_t>(depth), lane.levels[depth].size() - 1);
    }
    ref = {laneNo, static_cast<std::uint32_t>(depth),
           static_cast<std::uint32_t>(lane.levels[depth].size() - 1)};
  }
  if (e.correlation != 0) {
    lanes_[laneNo].flowEnds = true;
    const bool source = (e.flags & parascope::trace::flag::kFlowSource) != 0;
    if (deferFlows_) {
      flowEnds_.push_back({e.correlation, ref, source});
    } else {
      flowMatcher_->add(e.correlation, source, ref, flows_);
    }
  }
}

void TimelineIndex::insertByStart(std::vector<SpanRec>& v, const SpanRec& rec) {
  if (v.empty() || v.back().startNs <= rec.startNs) {
    v.push_back(rec);
    return;
  }
  v.insert(std::upper_bound(v.begin(), v.end(), rec.startNs,
                            [](std::int64_t t, const SpanRec& s) { return t < s.startNs; }),
           rec);
}

// A span that starts before what its lane already holds (a recorder that emits parents after
// their children, or a late batch). Where it encloses what it overlaps, it is those spans'
// parent: it takes their level and they move one level down with everything under them, so the
// lane nests as a whole build would have nested it. Otherwise it goes into the first level where
// it overlaps nothing. Levels stay sorted and disjoint, and references to moved spans follow.
SpanRef TimelineIndex::insertLate(std::uint32_t laneNo, const SpanRec& rec) {
  Lane& lane = lanes_[laneNo];
  auto firstAfter = [](const std::vector<SpanRec>& level, std::int64_t t) {
    return static_cast<std::size_t>(
        std::upper_bound(level.begin(), level.end(), t,
                         [](std::int64_t x, const SpanRec& s) { return x < s.startNs; }) -
        level.begin());
  };
  // The spans of a level overlapping rec: [from, to).
  auto overlapping = [&](const std::vector<SpanRec>& level) {
    std::size_t from = firstAfter(level, rec.startNs);
    if (from > 0 && level[from - 1].endNs > rec.startNs) --from;
    std::size_t to = from;
    while (to < level.size() && level[to].startNs < rec.endNs) ++to;
    return std::pair{from, to};
  };
  auto encloses = [&](const SpanRec& s) {
    return rec.startNs <= s.startNs && s.endNs <= rec.endNs;
  };
  // Under every span that encloses it: below the deepest level holding one (as an append in
  // time order places it, a span it overlaps only in part may sit above that encloser).
  std::uint32_t depth = 0;
  for (std::uint32_t d = 0; d < lane.levels.size(); ++d) {
    const auto [from, to] = overlapping(lane.levels[d]);
    const std::vector<SpanRec>& level = lane.levels[d];
    for (std::size_t i = from; i < to; ++i) {
      if (level[i].startNs <= rec.startNs && rec.endNs <= level[i].endNs) depth = d + 1;
    }
  }
  // Everything it overlaps from there down must lie inside it to become its children.
  bool nests = depth < lane.levels.size();
  for (std::uint32_t d = depth; nests && d < lane.levels.size(); ++d) {
    const auto [from, to] = overlapping(lane.levels[d]);
    for (std::size_t i = from; i < to; ++i) nests = nests && encloses(lane.levels[d][i]);
  }
  if (nests) {
    const auto [from, to] = overlapping(lane.levels[depth]);
    nests = from != to;  // with nothing to hold, it simply fits there
  }
  if (nests) {
    // Deepest first, so that each level's range lands where the level below was emptied.
    for (auto d = static_cast<std::uint32_t>(lane.levels.size()); d-- > depth;) {
      const auto [from, to] = overlapping(lane.levels[d]);
      if (from == to) continue;
      if (d + 1 == lane.levels.size()) {
        lane.levels.emplace_back();
        lane.blocks.emplace_back();
      }
      std::vector<SpanRec>& source = lane.levels[d];
      std::vector<SpanRec>& target = lane.levels[d + 1];
      const std::size_t at = firstAfter(target, source[from].startNs);
      const std::size_t moved = to - from;
      target.insert(target.begin() + static_cast<std::ptrdiff_t>(at),
                    source.begin() + static_cast<std::ptrdiff_t>(from),
                    source.begin() + static_cast<std::ptrdiff_t>(to));
      source.erase(source.begin() + static_cast<std::ptrdiff_t>(from),
                   source.begin() + static_cast<std::ptrdiff_t>(to));
      updateBlocks(lane, d, from);
      updateBlocks(lane, d + 1, at);
      auto remap = [&](SpanRef& r) {
        if (r.lane != laneNo) return;
        if (r.depth == d + 1 && r.index >= at) {
          r.index += static_cast<std::uint32_t>(moved);
        } else if (r.depth == d && r.index >= to) {
          r.index -= static_cast<std::uint32_t>(moved);
        } else if (r.depth == d && r.index >= from) {
          r.depth = d + 1;
          r.index = static_cast<std::uint32_t>(at + (r.index - from));
        }
      };
      if (lane.flowEnds) {
        for (Flow& f : flows_) {
          remap(f.from);
          remap(f.to);
        }
        flowMatcher_->forEachRef(remap);
      }
    }
  } else {
    // It overlaps part of something: the first level under its enclosers where it fits.
    for (; depth < lane.levels.size(); ++depth) {
      const auto [from, to] = overlapping(lane.levels[depth]);
      if (from == to) break;
    }
  }
  if (depth == lane.levels.size()) {
    lane.levels.emplace_back();
    lane.blocks.emplace_back();
  }
  auto& level = lane.levels[depth];
  const auto index = static_cast<std::uint32_t>(firstAfter(level, rec.startNs));
  level.insert(level.begin() + index, rec);
  updateBlocks(lane, depth, index);
  auto shift = [&](SpanRef& r) {
    if (r.lane == laneNo && r.depth == depth && r.index >= index) ++r.index;
  };
  if (lane.flowEnds) {
    for (Flow& f : flows_) {
      shift(f.from);
      shift(f.to);
    }
    flowMatcher_->forEachRef(shift);
  }
  // Each level's latest end (the last span by start: a level's spans are disjoint), which the
  // spans placed after it are measured against.
  lane.openEnds.clear();
  for (const auto& l : lane.levels) lane.openEnds.push_back(l.empty() ? INT64_MIN : l.back().endNs);
  return {laneNo, depth, index};
}

// Summarises the blocks from the one holding span `from` onwards: a block that just filled, or
// every later block after a late span moved the level's spans up by one.
void TimelineIndex::updateBlocks(Lane& lane, std::uint32_t depth, std::size_t from) {
  const auto& level = lane.levels[depth];
  auto& blocks = lane.blocks[depth];
  blocks.resize(level.size() / kBlockSpans);
  for (std::size_t b = from / kBlockSpans; b < blocks.size(); ++b) {
    SpanBlock block;
    for (std::size_t i = b * kBlockSpans; i < (b + 1) * kBlockSpans; ++i) {
      block.maxDuration = std::max(block.maxDuration, level[i].endNs - level[i].startNs);
      if (i > 0) {
        block.maxGap = std::max(block.maxGap, saturatingSub(level[i].startNs, level[i - 1].endNs));
      }
    }
    block.lastEnd = level[(b + 1) * kBlockSpans - 1].endNs;
    blocks[b] = block;
  }
}

void TimelineIndex::addCounter(const Event& e) {
  const std::uint32_t name = nameId(e.name);
  auto [it, inserted] = counterIndex_.try_emplace({e.rank, e.lane, name},
                                                  static_cast<std::uint32_t>(counters_.size()));
  if (inserted) {
    CounterTrack t;
    t.rank = e.rank;
    t.laneId = e.lane;
    t.name = name << 4 | static_cast<std::uint32_t>(e.category);
    t.category = e.category;
    t.minValue = t.maxValue = e.bytes;
    counters_.push_back(std::move(t));
  }
  CounterTrack& t = counters_[it->second];
  const CounterPoint p{e.startNs, e.bytes};
  if (t.points.empty() || t.points.back().timeNs <= p.timeNs) {
    t.points.push_back(p);
  } else {
    t.points.insert(
        std::upper_bound(t.points.begin(), t.points.end(), p.timeNs,
                         [](std::int64_t v, const CounterPoint& q) { return v < q.timeNs; }),
        p);
  }
  t.minValue = std::min(t.minValue, e.bytes);
  t.maxValue = std::max(t.maxValue, e.bytes);
}

std::size_t TimelineIndex::bytesHeld() const {
  std::size_t b = sizeof(*this) + details_.capacity() * sizeof(SpanDetail) +
                  detailSlots_.capacity() * sizeof(DetailSlot) + flows_.capacity() * sizeof(Flow) +
                  flowMatcher_->bytesHeld();
  for (const Lane& l : lanes_) {
    b += sizeof(Lane) + l.instants.capacity() * sizeof(SpanRec);
    for (const auto& lv : l.levels) {
      b += sizeof(std::vector<SpanRec>) + lv.capacity() * sizeof(SpanRec);
    }
    for (const auto& blocks : l.blocks) {
      b += sizeof(std::vector<SpanBlock>) + blocks.capacity() * sizeof(SpanBlock);
    }
  }
  for (const CounterTrack& c : counters_)
    b += sizeof(c) + c.points.capacity() * sizeof(CounterPoint);
  for (const std::string& s : names_) b += sizeof(std::string) + s.capacity() + 48;
  for (const std::string& s : args_) b += sizeof(std::string) + s.capacity();
  return b;
}

Event TimelineIndex::eventOf(const Lane& lane, const SpanRec& s, EventKind kind) const {
  Event e;
  e.startNs = s.startNs;
  e.endNs = s.endNs;
  e.name = names_[s.nameCat >> 4].c_str();
  e.category = static_cast<Category>(s.nameCat & 15);
  e.kind = kind;
  e.rank = lane.rank;
  e.lane = lane.laneId;
  const SpanDetail& d = details_[s.detail];
  e.bytes = d.bytes;
  e.correlation = d.correlation;
  e.peer = d.peer;
  e.group = d.group;
  e.step = d.step;
  e.microBatch = d.microBatch;
  e.stage = d.stage;
  e.instruction = d.instruction;
  e.flags = d.flags;
  e.args = d.args;
  return e;
}

Event TimelineIndex::event(SpanRef r) const {
  return eventOf(lanes_[r.lane], span(r), EventKind::Span);
}

std::optional<std::int64_t> counterValueAt(const std::vector<CounterPoint>& points,
                                           std::int64_t timeNs) {
  const auto after =
      std::upper_bound(points.begin(), points.end(), timeNs,
                       [](std::int64_t t, const CounterPoint& point) { return t < point.timeNs; });
  if (after == points.begin()) return std::nullopt;
  return std::prev(after)->value;
}

TraceData TimelineIndex::toTrace(std::int64_t fromNs, std::int64_t toNs) const {
  TraceData t;
  auto keep = [&](Event e) {
    if (e.endNs < fromNs || e.startNs > toNs) return;
    e.args = t.addArgs(args_[e.args]);
    t.events.push_back(e);
  };
  for (const Lane& l : lanes_) {
    for (const auto& lv : l.levels) {
      for (const SpanRec& s : lv) keep(eventOf(l, s, EventKind::Span));
    }
    for (const SpanRec& s : l.instants) keep(eventOf(l, s, EventKind::Instant));
    t.laneNames[{l.rank, l.laneId}] = l.name;
  }
  for (const CounterTrack& c : counters_) {
    Event e;
    e.name = names_[c.name >> 4].c_str();
    e.category = c.category;
    e.kind = EventKind::Counter;
    e.rank = c.rank;
    e.lane = c.laneId;
    // A range starting after a sample starts with the value then in force: without it, a
    // counter with no sample inside the range would be missing, and the others would read as
    // unknown up to their first sample.
    const std::optional<std::int64_t> atStart = counterValueAt(c.points, fromNs);
    const bool sampledAtStart = std::binary_search(
        c.points.begin(), c.points.end(), CounterPoint{fromNs, 0},
        [](const CounterPoint& a, const CounterPoint& b) { return a.timeNs < b.timeNs; });
    if (atStart && !sampledAtStart && fromNs <= toNs) {
      e.startNs = e.endNs = fromNs;
      e.bytes = *atStart;
      t.events.push_back(e);
    }
    for (const CounterPoint& p : c.points) {
      e.startNs = e.endNs = p.timeNs;
      e.bytes = p.value;
      keep(e);
    }
  }
  t.rankNames = rankNames_;
  t.adoptNames();
  t.sortByTime();
  for (std::int32_t r : t.ranks()) t.worldSize = std::max(t.worldSize, r + 1);
  return t;
}

}  // namespace parascope::profiler
