// Matches the two ends of flows by correlation id while events stream in, in any order: the
// span flagged as a flow's source links to every other span with its id, whichever comes
// first. An open-addressing table (one probe sequence, no allocation per id): a node-based map
// took two fifths of the index build on flow-heavy traces.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/timeline/timeline_index.h"

namespace parascope::profiler {

class FlowMatcher {
 public:
  // Adds one end; appends to `flows` every pair it completes.
  void add(std::uint64_t correlation, bool source, SpanRef ref, std::vector<Flow>& flows);
  // Starts loading the table slot where `correlation` lives: the table is tens of MB probed
  // at random, so add() would otherwise wait on memory at almost every flow end.
  void prefetch(std::uint64_t correlation) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[slotOf(correlation, slots_.size() - 1)], 1);
  }
  // Sizes the table for `ids` more correlation ids, so that it does not rehash while they come.
  void reserve(std::size_t ids);
  std::size_t bytesHeld() const;
  // Applies f(SpanRef&) to every span the matcher remembers (after spans moved in a level).
  template <class F>
  void forEachRef(F&& f) {
    for (Slot& s : slots_) {
      if (s.key != 0 && s.source.valid()) f(s.source);
    }
    for (Waiting& w : waiting_) f(w.ref);
  }
  void clear();

 private:
  struct Slot {
    std::uint64_t key = 0;  // correlation id, 0: empty
    SpanRef source;
    std::uint32_t waiting = UINT32_MAX;  // first target seen before the source
  };
  struct Waiting {
    SpanRef ref;
    std::uint32_t next = UINT32_MAX;
  };
  static std::size_t slotOf(std::uint64_t key, std::size_t mask) {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> 20) & mask;
  }
  Slot& find(std::uint64_t key);
  void grow(std::size_t size);

  std::vector<Slot> slots_;  // size a power of two, at most half full
  std::size_t used_ = 0;
  std::vector<Waiting> waiting_;
};

}  // namespace parascope::profiler
