// A data-parallel rank failing mid-step on Open MPI (CTest runs it under mpirun with 2 ranks):
// rank 1 throws in the middle of the second step's backward pass, after some gradient buckets
// started reducing; rank 0, waiting in the reduction, must fail with rank 1's reason rather
// than at the communication timeout, and both ranks report before the job ends.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/comm/mpi/mpi_backend.h"
#include "core/session/rank_hooks.h"
#include "core/session/session.h"
#include "dp_harness.h"

using namespace parascope;

int main() {
  Communicator world = mpiWorld();
  SessionOptions options;
  options.world = world;
  options.evaluate = false;
  RankHooks hooks;
  hooks.built = [&world](Trainer& t) {
    std::filesystem::remove(dptest::textFixture());  // read by now; the run ends in an abort
    if (world.rank() != 1) return;
    t.model().addBackwardHook([&t](std::size_t layer, bool finished) {
      if (t.stepsDone() == 1 && layer == 1 && finished) throw std::runtime_error("disk on fire");
    });
  };
  options.rankHooks = std::make_shared<RankHooks>(std::move(hooks));
  Session session(dptest::tinyConfig({"train_iters=3"}, world.size()), std::move(options));
  struct Steps : SessionObserver {
    std::atomic<int> done{0};
    void onRankStep(const StepReport& r) override { done = r.step; }
  } steps;
  session.addObserver(steps);
  session.run();
  const std::optional<ErrorReport> error = session.error();
  if (!error) {
    std::printf("dp-fail-check: FAILED on rank %d (the run went on)\n", world.rank());
    return 1;
  }
  // The failing rank reports its own reason; its peer, waiting in the reduction, the notice.
  const std::string want = world.rank() == 1 ? "disk on fire" : "world rank 1 failed: disk on fire";
  const bool ok = error->reason.find(want) != std::string::npos && steps.done == 1;
  std::printf("dp-fail-check: %s on rank %d after %d step(s): %s\n", ok ? "ok" : "FAILED",
              world.rank(), steps.done.load(), error->reason.c_str());
  failMpiWorld(error->reason.c_str());
  return 1;
}
