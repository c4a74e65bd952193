// Builds small traces by hand for the profiler tests: one call per event, exact times.
#pragma once

#include <cstdint>

#include "profiler/trace_data.h"

namespace parascope::profiler::testing {

struct EventSpec {
  std::int32_t rank = 0;
  Category category = Category::Compute;
  std::int64_t start = 0;
  std::int64_t end = 0;
  const char* name = "op";
  std::int32_t step = -1;
  std::int32_t lane = trace::lane::kCompute;
};

inline Event& add(TraceData& t, const EventSpec& s) {
  Event e;
  e.rank = s.rank;
  e.category = s.category;
  e.startNs = s.start;
  e.endNs = s.end;
  e.name = t.strings.intern(s.name);
  e.step = s.step;
  e.lane = s.lane;
  t.events.push_back(e);
  return t.events.back();
}

}  // namespace parascope::profiler::testing
