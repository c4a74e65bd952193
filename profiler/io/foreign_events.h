// How events from PyTorch's profiler map onto ParaScope's: category from Kineto's "cat" and
// the operator name (NCCL kernels and c10d/gloo/nccl annotations are communication,
// ProfilerStep#N marks step N), and the post-pass that tags events with the step they ran in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct ForeignMapping {
  Category category = Category::Host;
  std::int32_t step = -1;   // for ProfilerStep#N
  bool gpu = false;         // runs on a GPU stream (args.stream gives the lane)
  bool flowSource = false;  // a launch: its correlation id links to GPU work
};

ForeignMapping mapForeignEvent(std::string_view cat, std::string_view name);

// The category a trace file gives one of our events: Kineto's where Kineto has one that
// mapForeignEvent maps back to the same category (a kernel, copy or memset on a GPU stream; a
// CUDA runtime call or synchronisation CUPTI saw), so that Perfetto and PyTorch's trace tools
// read ParaScope's GPU traces as their own; categoryName() otherwise.
std::string_view exportCategory(const Event& e);

bool containsNoCase(std::string_view s, std::string_view needle);

// What recent Kineto traces say about a collective on `record_param_comms` (args "Collective
// name", "In msg nelems", "Out msg nelems", "dtype", "Group size", "Process Group Ranks" or
// "Global rank start"/"stride", "In split size"/"Out split size"), kept until the importer
// resolves ranks at the end, after the text they came from is gone.
struct KinetoCollective {
  std::string name, dtype, groupRanks, inSplits, outSplits;
  std::int64_t inElements = 0, outElements = 0;
  std::int64_t groupSize = -1, rankStart = -1, rankStride = -1, groupId = -1;
};

struct PeerBytes {
  std::int32_t peer = -1;
  std::int64_t bytes = 0;
};

// The bytes `rank` sends for the collective under NCCL's ring algorithms, so that bytes over
// the span's duration is nccl-tests' bus bandwidth: all-reduce 2(n-1)/n x S, all-gather and
// reduce-scatter (n-1)/n x the full buffer, broadcast and reduce S, all-to-all (n-1)/n x S or
// the split sizes; ring traffic goes to the next rank of the group. S is the message size in
// bytes (elements x dtype size). Unknown collectives, dtypes, waits and groups of one send 0.
struct CollectiveTraffic {
  std::int64_t sentBytes = 0;
  std::vector<PeerBytes> peers;  // world rank -> bytes, summing to sentBytes where known
};
CollectiveTraffic collectiveTraffic(const KinetoCollective& c, std::int32_t rank);
// Bytes of one element of a PyTorch dtype as Kineto names it ("Float", "BFloat16", ...), 0 if
// unknown.
std::int64_t dtypeBytes(std::string_view dtype);

// Tags every host span, instant and counter inside a rank's Step span with that step, where
// the event has none. Events must be sorted by rank and start.
void tagStepsFromSpans(TraceData& trace);

}  // namespace parascope::profiler
