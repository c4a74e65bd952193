// parascope-cli bench offload: its options and wiring; the benchmark itself is bench/offload.cpp.
#include <memory>

#include "app/cli/commands.h"
#include "bench/offload.h"

namespace parascope::cli {

void registerBenchOffloadCommand(CLI::App& bench) {
  auto o = std::make_shared<bench::BenchOffloadOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "offload",
      "ZeRO-Infinity's offload vs the disk's direct-I/O bandwidth, and a rank under a budget");
  cmd->add_option("--config", o->config,
                  "Base config (the model is set to 12 x 768, then 24 x 768 for the budget)")
      ->capture_default_str();
  cmd->add_option("overrides", o->overrides, "Config overrides as key.path=value");
  cmd->add_option("--steps", o->steps, "Measured steps of each run, after one unmeasured")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--dir", o->dir,
                  "Directory on the disk to measure, in which the benchmark makes (and then "
                  "removes) its own scratch directory for the swap");
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] { bench::runBenchOffload(*o); });
}

}  // namespace parascope::cli
