// Data-parallel equivalence on Open MPI ranks (CTest runs it under mpirun): every rank trains
// the single-rank reference locally, then its replica of the data-parallel run, and compares:
// per step the loss and every gradient, then the parameters, of fp32 cases at rtol 1e-5 /
// atol 4e-5 (MPI's sums only reorder fp32 additions; test_data_parallel.cpp), of bf16 / fp16
// mixed precision within the low-precision tolerance of fp32 (lr 1e-3, see
// test_mixed_precision.cpp), an fp16 overflow injected on the last rank only, which every rank
// must skip, and bf16 model-state bytes per category (2 + 2 + 12 per parameter, sharded by the
// ZeRO stage). Exit status 0 and the pass line from rank 0 only if every rank passed.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/comm/mpi/mpi_backend.h"
#include "dp_harness.h"

using namespace parascope;

namespace {

struct Case {
  std::vector<std::string> overrides;
  bool mixed = false;
};

// Steps 0 and 2 train, step 1 is skipped by every rank at the same loss scale.
std::string checkOverflowAgreement(const Communicator& world) {
  const TrainConfig c = dptest::tinyConfig(
      {"fp16.enabled=true", "fp16.hysteresis=1", "zero_optimization.stage=2"}, world.size());
  dptest::RunOptions run{.world = world};
  if (world.rank() == world.size() - 1) run.built = [](Trainer& t) { t.injectGradientOverflow(1); };
  const dptest::RunRecord r = dptest::train(c, 3, run);
  const auto& s = r.reports;
  if (s[0].skipped || !s[1].skipped || s[2].skipped) return "overflow: wrong steps skipped";
  if (s[2].lossScale != s[1].lossScale / 2) return "overflow: the loss scale did not halve";
  return {};
}

// After two steps this rank's Parameter, Gradient and OptimizerState bytes are 2, 2 and 12 per
// parameter, divided by the ranks from stage 3, 2 and 1 on, up to the buckets' padding.
std::string checkMixedPrecisionBytes(const Communicator& world, int stage) {
  const int n = world.size();
  const TrainConfig c = dptest::tinyConfig(
      {"bf16.enabled=true", "zero_optimization.stage=" + std::to_string(stage)}, n);
  Allocator a;
  std::int64_t P = 0, padded = 0, parameter = 0, gradient = 0, optimizer = 0;
  dptest::RunOptions run{.world = world, .allocator = &a};
  run.finished = [&](Trainer& t) {
    P = t.model().parameterCount();
    padded = P + static_cast<std::int64_t>(t.model().parameters().size()) * (n - 1);
    parameter = a.liveBytes(MemoryCategory::Parameter);
    gradient = a.liveBytes(MemoryCategory::Gradient);
    optimizer = a.liveBytes(MemoryCategory::OptimizerState);
  };
  dptest::train(c, 2, run);
  auto within = [&](std::int64_t got, std::int64_t perParameter, bool sharded) {
    return sharded ? got >= perParameter * P / n && got <= perParameter * padded / n
                   : got >= perParameter * P && got <= perParameter * padded;
  };
  if (within(parameter, 2, stage >= 3) && within(gradient, 2, stage >= 2) &&
      within(optimizer, 12, stage >= 1)) {
    return {};
  }
  return "bf16 stage " + std::to_string(stage) + " bytes: parameters " + std::to_string(parameter) +
         ", gradients " + std::to_string(gradient) + ", optimizer state " +
         std::to_string(optimizer) + " for " + std::to_string(P) + " parameters";
}

}  // namespace

int main() {
  Communicator world = mpiWorld();
  const int n = world.size();
  const std::string small = "zero_optimization.reduce_bucket_size=3000";
  const std::vector<Case> cases = {
      {{}},
      {{"gradient_accumulation_steps=2", small}},
      {{"gradient_accumulation_steps=2", "zero_optimization.stage=1"}},
      {{"gradient_accumulation_steps=2", "zero_optimization.stage=2", small}},
      {{"zero_optimization.stage=3", small}},
      {{"bf16.enabled=true", small}, true},
      {{"fp16.enabled=true", "zero_optimization.stage=3", small}, true},
      {{"bf16.enabled=true", "zero_optimization.stage=2", "gradient_accumulation_steps=2", small,
        "communication_data_type=fp32"},
       true},
  };
  const int steps = 3;
  int failures = 0;
  try {
    const dptest::RunRecord want = dptest::train(dptest::tinyConfig({}), steps);
    const std::string lr = "optimizer.params.lr=1e-3";
    const dptest::RunRecord wantMixed = dptest::train(dptest::tinyConfig({lr}), steps);
    for (const Case& c : cases) {
      std::vector<std::string> o = c.overrides;
      if (c.mixed) o.push_back(lr);
      const dptest::RunRecord got = dptest::train(dptest::tinyConfig(o, n), steps, world);
      const std::string diff =
          c.mixed ? dptest::compareLowPrecision(wantMixed, got, 1e-2) : dptest::compare(want, got);
      if (!diff.empty()) {
        std::fprintf(stderr, "rank %d, case %zu: %s\n", world.rank(), &c - cases.data(),
                     diff.c_str());
        ++failures;
      }
    }
    for (const std::string& e : {checkOverflowAgreement(world), checkMixedPrecisionBytes(world, 1),
                                 checkMixedPrecisionBytes(world, 3)}) {
      if (!e.empty()) {
        std::fprintf(stderr, "rank %d: %s\n", world.rank(), e.c_str());
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
