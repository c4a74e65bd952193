#include "pipeline_harness.h"

#include <filesystem>

namespace pptest {

using parascope::TrainConfig;

std::string textFixture() {
  return dptest::writeTextFixture("pp", 11, 64 * 1024,
                                  {"each ", "stage ", "sends ", "its ", "output ", "to ", "the ",
                                   "next ", "while ", "bubbles ", "shrink.\n", "micro "});
}

void removeFixtures() {
  std::filesystem::remove(textFixture());
  std::filesystem::remove(dptest::textFixture());
}

TrainConfig tinyConfig(const std::vector<std::string>& overrides, int worldSize) {
  std::vector<std::string> all = {"model.num_layers=4", "eval_iters=2", "seed=5",
                                  "data.path=" + textFixture()};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return dptest::tinyConfig(all, worldSize);
}

}  // namespace pptest
