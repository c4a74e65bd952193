// parascope-cli bench ps: its options and wiring; the benchmark itself is bench/ps.cpp.
#include <memory>

#include "app/cli/commands.h"
#include "bench/ps.h"

namespace parascope::cli {

void registerBenchPsCommand(CLI::App& bench) {
  auto o = std::make_shared<bench::BenchPsOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "ps",
      "Parameter servers: pull/push rows/s vs point-to-point and memcpy; word2vec words/s (or a "
      "GPT's tokens/s) and loss per mode vs collective");
  cmd->add_option("--config", o->config,
                  "The training part's config: word2vec, or a GPT with a parameter_server block")
      ->capture_default_str();
  cmd->add_option("--steps", o->steps, "Training steps per run")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--rows", o->rows, "Rows per pull and per push (transfer part)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--requests", o->requests, "Pulls, then pushes, per worker (transfer part)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--backend", o->backend,
                  "Transfer part: threads, mpi (re-launches under mpirun) or all")
      ->check(CLI::IsMember({"threads", "mpi", "all"}));
  cmd->add_option("--part", o->part, "transfer, train or all")
      ->check(CLI::IsMember({"transfer", "train", "all"}));
  cmd->add_option("--servers", o->servers, "Under mpirun: the job's servers")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] { bench::runBenchPs(*o); });
}

}  // namespace parascope::cli
