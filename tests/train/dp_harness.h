// Shared by the data-parallel tests on both backends: a tiny GPT config over a generated text
// file, a recorded run (per-step losses and final parameters) of one rank or of one replica of
// a data-parallel world, and the equivalence check at rtol 1e-5 / atol 4e-5 (looser for mixed
// precision).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/train/trainer.h"

namespace dptest {

struct RunRecord {
  std::vector<double> losses;
  std::vector<parascope::StepReport> reports;
  // Logical values after the last step, of the parameters this rank's pipeline stage holds (all
  // of them without pipeline parallelism; f32, under mixed precision the 16-bit values widened).
  std::map<std::string, std::vector<float>> parameters;
};

// Writes (once per process and tag) `bytes` of text drawn from `words` with a seeded generator
// into the temporary directory and returns its path.
std::string writeTextFixture(const std::string& tag, std::uint64_t seed, std::size_t bytes,
                             const std::vector<const char*>& words);
// The data-parallel tests' 96 KiB fixture.
std::string textFixture();

// The tiny GPT (2 layers, width 32, context 16) with global batch 16, lr 1e-2, clipping 1.0,
// plus "key=value" overrides.
parascope::TrainConfig tinyConfig(const std::vector<std::string>& overrides, int worldSize = 0);

// `steps` optimizer steps of one rank of `world` (a default Communicator: the single rank).
// `setup` runs on the trainer before the first step (e.g. to inject a fault).
RunRecord train(const parascope::TrainConfig& config, int steps,
                const parascope::Communicator& world = parascope::Communicator(),
                parascope::Allocator* allocator = nullptr,
                const std::function<void(parascope::Trainer&)>& setup = {});

// Model-state bytes of one rank, live after its second step and peaks during that step.
struct StateBytes {
  std::int64_t param, grad, optim, work, gradPeak, paramPeak;
};
struct ModelState {
  std::int64_t parameters = 0;  // P, of the logical model
  std::int64_t tensors = 0;     // parameter tensors (each may pad its buckets)
  std::vector<StateBytes> ranks;
};
// Two steps of `config` on its world of in-process ranks, each with its own Allocator.
ModelState measureModelState(const parascope::TrainConfig& config);

// Which parameters compare() checks: all of `want`'s (a rank that holds the whole model), or
// those `got` holds (a pipeline stage; it must hold some).
enum class Held { All, Some };

// Empty if `got` matches `want` within rtol / atol everywhere (fp32 default: 1e-5 / 4e-5), else
// the first difference.
std::string compare(const RunRecord& want, const RunRecord& got, double rtol = 1e-5,
                    double atol = 4e-5, Held held = Held::All);

}  // namespace dptest
