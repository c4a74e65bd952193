// Matches the two ends of flows by correlation id while events stream in, in any order: the
// span flagged as a flow's source links to every other span with its id, whichever comes
// first. An open-addressing table (one probe sequence, no allocation per id): a node-based map
// took two fifths of the index build on flow-heavy traces.
#pragma once

#include <cstdint>
#include <vector>

#include "ui/timeline_index.h"

namespace parascope::ui {

class FlowMatcher {
 public:
  // Adds one end; appends to `flows` every pair it completes.
  void add(std::uint64_t correlation, bool source, SpanRef ref, std::vector<Flow>& flows);
  std::size_t bytesHeld() const;
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
  Slot& find(std::uint64_t key);
  void grow();

  std::vector<Slot> slots_;  // size a power of two, at most half full
  std::size_t used_ = 0;
  std::vector<Waiting> waiting_;
};

}  // namespace parascope::ui
