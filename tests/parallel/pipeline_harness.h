// Shared by the pipeline tests on both backends: a tiny GPT config (4 layers, width 32, context
// 16, global batch 16; AdamW eps 1e-2 as dp_harness.h argues) over a generated text file, a
// recorded run of one rank of a world (its per-step reports, losses, reduced gradients and the
// parameters it holds), and the check against one rank at rtol 1e-5 / atol 4e-5 of every step's
// loss and gradients and the final value of every parameter the rank holds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/train/dp_harness.h"

namespace pptest {

// Runs and their comparison are the data-parallel tests' (dp_harness.h); a pipeline rank's
// record holds only its stage's parameters.
using dptest::RunOptions;
using dptest::RunRecord;
using dptest::train;

// Writes (once per process) a deterministic byte-level text file and returns its path.
std::string textFixture();
// Removes the text files the configs wrote (this one and the data-parallel tests' default).
void removeFixtures();

parascope::TrainConfig tinyConfig(const std::vector<std::string>& overrides, int worldSize = 0);

// Empty if every loss, and every gradient and parameter `got` holds, match `want` within
// rtol / atol, else the first difference.
inline std::string compare(const RunRecord& want, const RunRecord& got, double rtol = 1e-5,
                           double atol = 4e-5) {
  return dptest::compare(want, got, rtol, atol, dptest::Held::Some);
}

}  // namespace pptest
