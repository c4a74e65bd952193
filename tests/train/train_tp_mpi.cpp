// Tensor (and sequence) parallelism on Open MPI ranks (CTest runs it under mpirun with 4 ranks):
// every rank trains the single-rank reference locally, then its part of each tensor x data
// mesh, and compares per step the loss and every logical gradient, then the logical parameters.
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
      {"tensor_model_parallel_size=2"},
      {"tensor_model_parallel_size=2", "sequence_parallel=true", "zero_optimization.stage=1"},
      {"tensor_model_parallel_size=4", "sequence_parallel=true", "gradient_accumulation_steps=2"},
      // ZeRO-2 and 3 over the two data-parallel ranks of each tensor group, several buckets.
      {"tensor_model_parallel_size=2", "zero_optimization.stage=2",
       "zero_optimization.reduce_bucket_size=3000", "gradient_accumulation_steps=2"},
      {"tensor_model_parallel_size=2", "sequence_parallel=true", "zero_optimization.stage=3",
       "zero_optimization.reduce_bucket_size=3000"},
  };
  const int steps = 3;
  int failures = 0;
  try {
    // Losses and gradients per step, then parameters, at rtol 1e-5 / atol 4e-5: MPI's sums only
    // reorder fp32 additions and AdamW cannot amplify that (test_tensor_parallel.cpp).
    const std::vector<std::string> model = {"model.num_attention_heads=4"};
    for (const auto& c : cases) {
      std::vector<std::string> reference = model, split = model;
      for (const auto& o : c) {
        if (o.rfind("gradient_accumulation_steps", 0) == 0) reference.push_back(o);
        split.push_back(o);
      }
      const dptest::RunRecord want = dptest::train(dptest::tinyConfig(reference), steps);
      const dptest::RunRecord got = dptest::train(dptest::tinyConfig(split, n), steps, world);
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
  if (world.rank() == 0 && failures == 0)
    std::printf("tensor-parallel equivalence passed on %d MPI ranks\n", n);
  return failures == 0 ? 0 : 1;
}
