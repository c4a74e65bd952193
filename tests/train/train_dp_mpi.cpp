// Data-parallel equivalence on Open MPI ranks (CTest runs it under mpirun): every rank trains
// the single-rank reference locally, then its replica of the data-parallel run, and compares.
// Exit status 0 and the pass line from rank 0 only if every rank matched in every case.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/comm/mpi/mpi_backend.h"
#include "dp_harness.h"

using namespace parascope;

int main() {
  Communicator world = mpiWorld();
  const int n = world.size();
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"gradient_accumulation_steps=2", "zero_optimization.reduce_bucket_size=3000"},
      {"gradient_accumulation_steps=2", "zero_optimization.stage=1"},
      {"gradient_accumulation_steps=2", "zero_optimization.stage=2",
       "zero_optimization.reduce_bucket_size=3000"},
      {"zero_optimization.stage=3", "zero_optimization.reduce_bucket_size=3000"},
  };
  const int steps = 3;
  int failures = 0;
  try {
    const dptest::RunRecord want = dptest::train(dptest::tinyConfig({}), steps);
    for (const auto& c : cases) {
      const dptest::RunRecord got = dptest::train(dptest::tinyConfig(c, n), steps, world);
      const std::string diff = dptest::compare(want, got);
      if (!diff.empty()) {
        std::fprintf(stderr, "rank %d, case %zu: %s\n", world.rank(), &c - cases.data(),
                     diff.c_str());
        ++failures;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", world.rank(), e.what());
    failures = 1;
  }
  std::filesystem::remove(dptest::textFixture());
  world.allReduce(&failures, &failures, 1, DType::I32, ReduceOp::Sum);
  if (world.rank() == 0 && failures == 0) {
    std::printf("data-parallel equivalence passed on %d MPI ranks\n", n);
  }
  return failures == 0 ? 0 : 1;
}
