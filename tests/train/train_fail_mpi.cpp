// A data-parallel rank failing mid-step on Open MPI (CTest runs it under mpirun with 2 ranks):
// rank 1 throws in the middle of the second step's backward pass, after some gradient buckets
// started reducing; rank 0, waiting in the reduction, must fail with rank 1's reason rather
// than at the communication timeout, and both ranks report before the job ends.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/comm/mpi/mpi_backend.h"
#include "dp_harness.h"

using namespace parascope;

int main() {
  Communicator world = mpiWorld();
  const TrainConfig c = dptest::tinyConfig({}, world.size());
  Allocator allocator;
  Trainer t(c, allocator, world);
  std::filesystem::remove(dptest::textFixture());  // read by now; the run ends in an abort
  if (world.rank() == 1) {
    t.model().addBackwardHook([&t](std::size_t layer, bool finished) {
      if (t.stepsDone() == 1 && layer == 1 && finished) throw std::runtime_error("disk on fire");
    });
  }
  try {
    for (int i = 0; i < 3; ++i) t.step();
    std::printf("dp-fail-check: FAILED on rank %d (the run went on)\n", world.rank());
  } catch (const CommError& e) {
    const bool ok =
        std::strstr(e.what(), "world rank 1 failed: disk on fire") != nullptr && t.stepsDone() == 1;
    std::printf("dp-fail-check: %s on rank %d after %d step(s): %s\n", ok ? "ok" : "FAILED",
                world.rank(), t.stepsDone(), e.what());
    failMpiWorld(e.what());
  } catch (const std::exception& e) {
    std::printf("dp-fail-check: rank %d failed after %d step(s): %s\n", world.rank(), t.stepsDone(),
                e.what());
    failMpiWorld(e.what());
  }
  return 1;
}
