// The collective suite on the Open MPI backend; CTest starts it through mpirun at several
// world sizes. "suite" runs everything with the mismatch check on; "timeout" checks that a
// rank that never arrives makes rank 0 fail naming it; "fail" that a rank that fails makes its
// waiting peers fail with its reason. Exit status 0 only if every rank passed the suite.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <mpi.h>
#include "collective_suite.h"
#include "core/comm/mpi/mpi_backend.h"

using namespace parascope;

namespace {

void expectMismatchError(Communicator& world) {
  std::vector<float> x(8, 1.0f);
  try {
    world.allReduce(x.data(), x.data(), world.rank() == world.size() - 1 ? 5 : 4, DType::F32,
                    ReduceOp::Sum);
  } catch (const CommError& e) {
    if (!std::strstr(e.what(), "ranks issued different operations or arguments"))
      throw std::runtime_error(std::string("unexpected message: ") + e.what());
    return;
  }
  throw std::runtime_error("mismatched counts were not detected");
}

int runSuite(Communicator& world) {
  const commtest::SuiteSizes sizes =
      world.size() > 4 ? commtest::smallSizes() : commtest::defaultSizes();
  commtest::runCollectives(world, sizes);
  commtest::runSplitGroups(world, commtest::smallSizes());
  commtest::runManyInFlight(world);
  commtest::runRankOrder(world);
  commtest::runAdjointness(world);
  commtest::runByteConsistency(world);
  if (world.size() > 1) expectMismatchError(world);
  return 0;
}

// Rank 1 never joins; rank 0 must fail within the timeout, naming rank 1. Neither rank can
// finish MPI cleanly afterwards, so both leave with _exit and CTest matches the output.
int runTimeout(Communicator& world) {
  if (world.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  } else if (world.rank() == 0) {
    std::int32_t v = 1;
    try {
      world.allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
      std::printf("timeout-check: FAILED (no error)\n");
    } catch (const CommError& e) {
      const bool ok = std::strstr(e.what(), "ranks that did not arrive: 1") &&
                      std::strstr(e.what(), "[allReduce] group 'world'");
      std::printf("timeout-check: %s: %s\n", ok ? "ok" : "FAILED", e.what());
    }
  }
  std::fflush(stdout);
  _exit(0);
}

// Rank 2 fails after one collective while rank 0 waits for it in a collective and rank 1 in a
// receive. Both must fail with rank 2's reason (long before the 60 s timeout, whose message
// would differ) and print it before rank 2 ends the job (failMpiWorld waits for them).
int runFailure(Communicator& world) {
  std::int32_t v = 1;
  world.allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
  if (world.rank() == 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    failMpiWorld("disk on fire");
  }
  try {
    if (world.rank() == 0)
      world.allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
    else if (world.rank() == 1)
      world.recv(&v, 1, DType::I32, 2);
    std::printf("fail-check: FAILED on rank %d (no error)\n", world.rank());
  } catch (const CommError& e) {
    const char* op = world.rank() == 0 ? "[allReduce] group 'world'" : "[recv] group 'world'";
    const bool ok = std::strstr(e.what(), "world rank 2 failed: disk on fire") &&
                    std::strstr(e.what(), "ranks that did not arrive: 2") &&
                    std::strstr(e.what(), op);
    std::printf("fail-check: %s on rank %d: %s\n", ok ? "ok" : "FAILED", world.rank(), e.what());
    std::fflush(stdout);
    failMpiWorld(e.what());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "suite";
  CommOptions options;
  options.checkMismatch = true;
  if (mode == "timeout") options.timeout = std::chrono::milliseconds(500);
  Communicator world = mpiWorld(options);
  try {
    if (mode == "timeout") return runTimeout(world);
    if (mode == "fail") return runFailure(world);
    runSuite(world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d FAILED: %s\n", world.rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (world.rank() == 0) std::printf("collective suite passed on %d MPI ranks\n", world.size());
  return 0;
}
