// parascope-cli bench switch: its options and wiring; the benchmark itself is bench/switch.cpp.
#include <memory>

#include "app/cli/commands.h"
#include "bench/switch.h"

namespace parascope::cli {

void registerBenchSwitchCommand(CLI::App& bench) {
  auto o = std::make_shared<bench::BenchSwitchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "switch", "Live strategy switches and checkpoints of a 100M GPT vs memcpy and plain I/O");
  cmd->add_option("--config", o->config, "Base config (the model is set to 12 x 768)")
      ->capture_default_str();
  cmd->add_option("overrides", o->overrides, "Config overrides as key.path=value");
  cmd->add_option("--rounds", o->rounds, "There-and-back switches per pair of layouts")
      ->check(CLI::Range(1, 100));
  cmd->add_option(
      "--dir", o->dir,
      "Directory in which the benchmark makes (and then removes) its own scratch directory");
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] { bench::runBenchSwitch(*o); });
}

}  // namespace parascope::cli
