// parascope-cli bench trace: its options and wiring; the benchmark itself is bench/trace.cpp.
#include <memory>

#include "app/cli/commands.h"
#include "bench/trace.h"

namespace parascope::cli {

void registerBenchTraceCommand(CLI::App& bench) {
  auto o = std::make_shared<bench::BenchTraceOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "trace", "Cost of tracing: per span, per training step, export and import speed");
  cmd->add_option("--events", o->events, "Events in the export/import trace")
      ->check(CLI::Range(std::int64_t{1000}, std::int64_t{100'000'000}));
  cmd->add_option("--step-pairs", o->stepPairs,
                  "GPT-mini steps measured traced and untraced, alternating (each)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option(
         "--dir", o->dir,
         "Directory in which the benchmark makes (and then removes) its own scratch directory")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] { bench::runBenchTrace(*o); });
}

}  // namespace parascope::cli
