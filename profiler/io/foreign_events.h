// How events from PyTorch's profiler map onto ParaScope's: category from Kineto's "cat" and
// the operator name (NCCL kernels and c10d/gloo/nccl annotations are communication,
// ProfilerStep#N marks step N), and the post-pass that tags events with the step they ran in.
#pragma once

#include <cstdint>
#include <string_view>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct ForeignMapping {
  Category category = Category::Host;
  std::int32_t step = -1;   // for ProfilerStep#N
  bool gpu = false;         // runs on a GPU stream (args.stream gives the lane)
  bool flowSource = false;  // a launch: its correlation id links to GPU work
};

ForeignMapping mapForeignEvent(std::string_view cat, std::string_view name);

// Tags every host span, instant and counter inside a rank's Step span with that step, where
// the event has none. Events must be sorted by rank and start.
void tagStepsFromSpans(TraceData& trace);

}  // namespace parascope::profiler
