// FlowMatcher; see flow_matcher.h.
#include "profiler/timeline/flow_matcher.h"

#include <algorithm>

namespace parascope::profiler {

FlowMatcher::Slot& FlowMatcher::find(std::uint64_t key) {
  if (2 * (used_ + 1) > slots_.size()) grow(std::max<std::size_t>(1024, slots_.size() * 2));
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = slotOf(key, mask);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.key == key) return s;
    if (s.key == 0) {
      s.key = key;
      ++used_;
      return s;
    }
  }
}

void FlowMatcher::reserve(std::size_t ids) {
  std::size_t size = 1024;
  while (size < 2 * (used_ + ids)) size *= 2;
  if (size > slots_.size()) grow(size);
}

void FlowMatcher::grow(std::size_t size) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(size, Slot{});
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.key == 0) continue;
    std::size_t i = slotOf(s.key, mask);
    while (slots_[i].key != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void FlowMatcher::add(std::uint64_t correlation, bool source, SpanRef ref,
                      std::vector<Flow>& flows) {
  Slot& s = find(correlation);
  if (source) {
    s.source = ref;
    // Targets that came first, in the order they came.
    std::vector<SpanRef> early;
    for (std::uint32_t w = s.waiting; w != UINT32_MAX; w = waiting_[w].next) {
      early.push_back(waiting_[w].ref);
    }
    for (auto it = early.rbegin(); it != early.rend(); ++it) flows.push_back({ref, *it});
    s.waiting = UINT32_MAX;
  } else if (s.source.valid()) {
    flows.push_back({s.source, ref});
  } else {
    waiting_.push_back({ref, s.waiting});
    s.waiting = static_cast<std::uint32_t>(waiting_.size() - 1);
  }
}

std::size_t FlowMatcher::bytesHeld() const {
  return slots_.capacity() * sizeof(Slot) + waiting_.capacity() * sizeof(Waiting);
}

void FlowMatcher::clear() {
  std::vector<Slot>().swap(slots_);
  std::vector<Waiting>().swap(waiting_);
  used_ = 0;
}

}  // namespace parascope::profiler
