// Chrome Trace Event JSON in PyTorch Kineto's conventions, readable by Perfetto UI,
// chrome://tracing and HolisticTraceAnalysis: pid = rank, tid = lane, process/thread names,
// distributedInfo, "X" spans, "C" counters, "i" instants, "s"/"f" flows for sends -> receives
// and launches -> GPU work. Timestamps are microseconds with three decimals: exact ns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/common/output_file.h"
#include "profiler/trace_data.h"

namespace parascope::profiler {

// Writes every rank into one file (".gz" suffix: gzip). Returns the bytes written (before
// compression). Throws UserError on I/O failure; an existing file is replaced only on success.
std::size_t exportChromeTrace(const TraceData& trace, const std::string& path);

// The most files exportChromeTracePerRank writes (the largest world a config may ask for).
inline constexpr std::size_t kMaxPerRankFiles = 4096;

// One file per rank: "{rank}" in the pattern is replaced by the rank, or, without it,
// "run.json" becomes "run.rank0.json", ... Returns the paths written. Every path is checked
// before the first is written; a trace of more than kMaxPerRankFiles ranks is a UserError, and a
// failure or stop part-way removes the files already written.
// `inputs`: files none of the outputs may be (checkOutputPath).
std::vector<std::string> exportChromeTracePerRank(const TraceData& trace,
                                                  const std::string& pattern,
                                                  const std::vector<InputPath>& inputs = {});

// The path exportChromeTracePerRank uses for one rank.
std::string perRankPath(const std::string& pattern, std::int32_t rank);

}  // namespace parascope::profiler
