// File I/O per rank and file: the requests on a rank's I/O lane (Category::Io spans named
// "<file> read" or "<file> write", core/offload/aio_file.h), their bytes, the time the file had
// at least one request outstanding, and the requests' time queued before the kernel took them
// (their "queued" children). A request is outstanding until the rank finds it complete, which
// for one read ahead can be long after the disk finished it: the time bounds the disk's from
// above, so no rate is derived from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct FileIo {
  std::int32_t rank = 0;
  std::string file;  // "optimizer swap", "parameter swap"
  std::int64_t reads = 0, readBytes = 0;
  std::int64_t writes = 0, writeBytes = 0;
  std::int64_t outstandingNs = 0;  // union of its requests' spans
  std::int64_t queuedNs = 0;       // sum of its requests' queue times
};

// Ordered by rank, then file.
std::vector<FileIo> computeFileIo(const TraceData& trace);

}  // namespace parascope::profiler
