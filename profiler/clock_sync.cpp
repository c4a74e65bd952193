// Ping-pong clock offset estimation. Rank 0 serves the other ranks one after another, so a
// rank's first ping may wait while rank 0 serves an earlier rank; the minimum round trip over
// the rounds discards such samples.
#include "profiler/clock_sync.h"

#include <algorithm>
#include <limits>

#include "core/common/error.h"
#include "core/trace/clock.h"

namespace parascope::profiler {

namespace {

void serve(Communicator& world, int rounds, const std::function<std::int64_t()>& clock) {
  for (int r = 1; r < world.size(); ++r) {
    for (int i = 0; i < rounds; ++i) {
      std::int64_t ping = 0;
      world.recv(&ping, 1, DType::I64, r);
      const std::int64_t now = clock();
      world.send(&now, 1, DType::I64, r);
    }
  }
}

ClockOffset ask(Communicator& world, int rounds, const std::function<std::int64_t()>& clock) {
  ClockOffset best;
  std::int64_t bestRtt = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < rounds; ++i) {
    const std::int64_t t0 = clock();
    world.send(&t0, 1, DType::I64, 0);
    std::int64_t server = 0;
    world.recv(&server, 1, DType::I64, 0);
    const std::int64_t t1 = clock();
    // Rank 0 read its clock somewhere in [t0, t1]; the midpoint is off by at most rtt / 2.
    if (t1 - t0 < bestRtt) {
      bestRtt = t1 - t0;
      best.offsetNs = server - (t0 + (t1 - t0) / 2);
      best.residualNs = (bestRtt + 1) / 2;
    }
  }
  return best;
}

}  // namespace

ClockOffset estimateClockOffset(Communicator& world, int rounds,
                                const std::function<std::int64_t()>& clock) {
  if (rounds < 1) {
    throw UserError("clock alignment: rounds = " + std::to_string(rounds) + "; need at least 1");
  }
  const std::function<std::int64_t()> read =
      clock ? clock : std::function<std::int64_t()>(trace::steadyNs);
  ClockOffset out;
  if (world.size() == 1) return out;
  if (world.rank() == 0) {
    serve(world, rounds, read);
  } else {
    out = ask(world, rounds, read);
  }
  std::int64_t worst = out.residualNs;
  world.allReduce(&worst, &worst, 1, DType::I64, ReduceOp::Max);
  out.worldResidualNs = worst;
  return out;
}

}  // namespace parascope::profiler
