// Two ranks' compute lanes, each a step [0, 100) ns holding F [10, 40) with a gemm [15, 30) and
// B [50, 90) with a gemm [55, 70) and a gelu [72, 80); rank 1's times later by `rank1OffsetNs`.
// The flame graph's and its view's tests read the same nesting.
#pragma once

#include <cstdint>

#include "profiler/trace_data.h"

inline parascope::profiler::TraceData nestedSteps(std::int64_t rank1OffsetNs) {
  namespace profiler = parascope::profiler;
  profiler::TraceData trace;
  auto span = [&](int rank, const char* name, std::int64_t from, std::int64_t to) {
    profiler::Event e;
    e.rank = rank;
    e.lane = parascope::trace::lane::kCompute;
    e.category = profiler::Category::Compute;
    e.name = trace.strings.intern(name);
    e.startNs = from + rank * rank1OffsetNs;
    e.endNs = to + rank * rank1OffsetNs;
    trace.events.push_back(e);
  };
  for (int rank = 0; rank < 2; ++rank) {
    span(rank, "step", 0, 100);
    span(rank, "F", 10, 40);
    span(rank, "gemm", 15, 30);
    span(rank, "B", 50, 90);
    span(rank, "gemm", 55, 70);
    span(rank, "gelu", 72, 80);
  }
  trace.sortByTime();
  return trace;
}
