// The sequential direct-I/O bandwidth of the disk under a directory, measured through the swap's
// own AioFile (its block size and queue depth): what the swap files can expect of it. Used by
// `bench offload` beside the swapped runs and by calibration for the system description's disk.
#pragma once

#include <cstdint>
#include <string>

#include "core/offload/aio_file.h"

namespace parascope {

struct DiskBandwidth {
  double writeBytesPerSecond = 0, readBytesPerSecond = 0;
  // Reading each chunk while the one before is written back, as a swapped update does: bytes
  // read and written together per second.
  double swapBytesPerSecond = 0;
};

// Over a file of about `bytes` (at least one 64 MiB chunk) in `dir`, unlinked at once: written
// whole, read whole, then read and written back chunk by chunk. `what` names the directory's
// option in messages (UserError when the file cannot be made or written).
DiskBandwidth measureDiskBandwidth(const std::string& dir, std::int64_t bytes, const AioSpec& aio,
                                   const std::string& what);

}  // namespace parascope
