// Pipeline equivalence on Open MPI ranks (CTest runs it under mpirun with 2 and 4 processes):
// every rank trains the single-rank reference locally, then its part of each pipeline run, and
// compares per step the loss and the gradients of the parameters it holds, then their values, at
// rtol 1e-5 / atol 4e-5 (MPI's sums only reorder fp32 additions; test_pipeline_training.cpp); then
// each rank's peak activation memory under each recompute mode (none > selective > full). With 4
// ranks also bf16 and fp16 over two stages x two data-parallel ranks, against one fp32 rank within
// the 16-bit tolerance (test_pipeline_precision.cpp). Exit status 0 and the pass line from rank 0
// only if every rank matched in every case.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/comm/mpi/mpi_backend.h"
#include "pipeline_harness.h"

using namespace parascope;

int main() {
  Communicator world = mpiWorld();
  const int n = world.size();
  std::vector<std::vector<std::string>> cases = {
      {"pipeline_model_parallel_size=2", "pipeline_schedule=1f1b"},
      {"pipeline_model_parallel_size=2", "pipeline_schedule=interleaved",
       "virtual_pipeline_model_parallel_size=2"},
      {"pipeline_model_parallel_size=2", "pipeline_schedule=zb-h1", "recompute_granularity=full"},
  };
  if (n == 4) {
    cases.push_back({"pipeline_model_parallel_size=2", "pipeline_schedule=zb-h1"});  // x dp 2
    cases.push_back({"pipeline_model_parallel_size=4", "pipeline_schedule=gpipe",
                     "recompute_granularity=selective"});
    cases.push_back({"pipeline_model_parallel_size=2", "pipeline_schedule=1f1b",
                     "tensor_model_parallel_size=2", "sequence_parallel=true"});
    // ZeRO-2 and 3 over the two data-parallel ranks of each stage.
    cases.push_back(
        {"pipeline_model_parallel_size=2", "pipeline_schedule=1f1b", "zero_optimization.stage=2"});
    cases.push_back({"pipeline_model_parallel_size=2", "pipeline_schedule=zb-h1",
                     "zero_optimization.stage=3", "recompute_granularity=full"});
    cases.push_back({"pipeline_model_parallel_size=2", "pipeline_schedule=interleaved",
                     "virtual_pipeline_model_parallel_size=2", "zero_optimization.stage=3"});
  }
  const int steps = 3;
  int failures = 0;
  try {
    const pptest::RunRecord want = pptest::train(pptest::tinyConfig({}), steps);
    for (auto c : cases) {
      c.push_back("gradient_accumulation_steps=4");
      const pptest::RunRecord got = pptest::train(pptest::tinyConfig(c, n), steps, world);
      const std::string diff = pptest::compare(want, got);
      if (!diff.empty()) {
        std::fprintf(stderr, "rank %d, case %s %s: %s\n", world.rank(), c[1].c_str(), c[2].c_str(),
                     diff.c_str());
        ++failures;
      }
    }
    if (n == 4) {
      const std::string lr = "optimizer.params.lr=1e-3";
      const pptest::RunRecord fp32 = pptest::train(pptest::tinyConfig({lr}), steps);
      for (const std::string low : {"bf16.enabled=true", "fp16.enabled=true"}) {
        const pptest::RunRecord got = pptest::train(
            pptest::tinyConfig({lr, low, "pipeline_model_parallel_size=2", "pipeline_schedule=1f1b",
                                "gradient_accumulation_steps=4"},
                               n),
            steps, world);
        const std::string diff = dptest::compareLowPrecision(fp32, got, 1e-2, dptest::Held::Some);
        if (!diff.empty()) {
          std::fprintf(stderr, "rank %d, case %s p2 d2: %s\n", world.rank(), low.c_str(),
                       diff.c_str());
          ++failures;
        }
      }
    }
    std::int64_t peaks[3] = {};
    const char* modes[] = {"none", "selective", "full"};
    for (int i = 0; i < 3; ++i) {
      Allocator allocator;
      pptest::train(pptest::tinyConfig({"pipeline_model_parallel_size=2", "pipeline_schedule=1f1b",
                                        "gradient_accumulation_steps=4",
                                        std::string("recompute_granularity=") + modes[i]},
                                       n),
                    1, world, &allocator);
      peaks[i] = allocator.peakBytes(MemoryCategory::Activation);
    }
    if (!(peaks[0] > peaks[1] && peaks[1] > peaks[2])) {
      std::fprintf(stderr, "rank %d: peak activation bytes none %lld, selective %lld, full %lld\n",
                   world.rank(), static_cast<long long>(peaks[0]), static_cast<long long>(peaks[1]),
                   static_cast<long long>(peaks[2]));
      ++failures;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", world.rank(), e.what());
    failures = 1;
  }
  pptest::removeFixtures();
  world.allReduce(&failures, &failures, 1, DType::I32, ReduceOp::Sum);
  if (world.rank() == 0 && failures == 0) {
    std::printf("pipeline equivalence passed on %d MPI ranks\n", n);
  }
  return failures == 0 ? 0 : 1;
}
