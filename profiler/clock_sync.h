// Clock alignment for traces of several processes: each rank measures its clock's offset to
// rank 0's with ping-pong messages (Cristian's algorithm, as NTP does) and keeps the sample
// with the shortest round trip, whose error is at most half that round trip. The Tracer adds
// the offset to every timestamp (Tracer::setClockOffset). In-process ranks share one clock and
// need none of this.
#pragma once

#include <cstdint>
#include <functional>

#include "core/comm/communicator.h"

namespace parascope::profiler {

struct ClockOffset {
  std::int64_t offsetNs = 0;         // add to this rank's clock to read rank 0's
  std::int64_t residualNs = 0;       // this rank's error bound: half its best round trip
  std::int64_t worldResidualNs = 0;  // the largest residual of any rank (same on every rank)
};

// Collective over `world`: rank 0 answers `rounds` pings from each other rank in turn. `clock`
// is this rank's clock in ns (steady clock by default; tests pass skewed ones).
ClockOffset estimateClockOffset(Communicator& world, int rounds = 32,
                                const std::function<std::int64_t()>& clock = {});

}  // namespace parascope::profiler
