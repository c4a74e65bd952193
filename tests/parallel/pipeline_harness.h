// Shared by the pipeline tests on both backends: a tiny GPT config (4 layers, width 32, context
// 16, global batch 16; AdamW eps 1e-6, so that an element whose gradient is rounding noise
// around zero cannot turn Adam's normalised update into noise too) over a generated text file, a
// recorded run of one rank of a world (its per-step reports, losses and the parameters it holds),
// and the check against one rank at rtol 1e-5 / atol 4e-5 of every parameter the rank holds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/train/trainer.h"

namespace pptest {

struct RunRecord {
  std::vector<double> losses;
  std::vector<parascope::StepReport> reports;
  std::map<std::string, std::vector<float>> parameters;  // those this rank holds
};

// Writes (once per process) a deterministic byte-level text file and returns its path.
std::string textFixture();

parascope::TrainConfig tinyConfig(const std::vector<std::string>& overrides, int worldSize = 0);

RunRecord train(const parascope::TrainConfig& config, int steps,
                const parascope::Communicator& world = parascope::Communicator(),
                parascope::Allocator* allocator = nullptr);

// Empty if every loss and every parameter `got` holds match `want` within rtol / atol, else the
// first difference.
std::string compare(const RunRecord& want, const RunRecord& got, double rtol = 1e-5,
                    double atol = 4e-5);

}  // namespace pptest
