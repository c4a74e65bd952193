// parascope-cli bench comm: its options and wiring; the benchmark itself is bench/comm.cpp.
#include <memory>
#include <string>

#include "app/cli/commands.h"
#include "bench/comm.h"
#include "core/common/error.h"

namespace parascope::cli {

void registerBenchCommCommand(CLI::App& bench) {
  auto o = std::make_shared<bench::BenchCommOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "comm", "Collective time, algbw and busbw: in-process vs Open MPI vs memcpy");
  cmd->add_option("--ranks", o->ranks, "Ranks (threads; processes under mpirun)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--backend", o->backend,
                  "threads, mpi (re-launches under mpirun unless already there) or all")
      ->check(CLI::IsMember({"threads", "mpi", "all"}));
  cmd->add_option("--ops", o->ops, "Operations to time")->delimiter(',');
  cmd->add_option("--min-bytes", o->minBytes, "Smallest message (bytes, powers of 4 up)")
      ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 32));
  cmd->add_option("--max-bytes", o->maxBytes, "Largest message (bytes)")
      ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 32));
  cmd->add_option("--seconds-per-point", o->secondsPerPoint, "Time budget per measurement")
      ->check(CLI::Range(0.001, 10.0));
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] {
    if (o->minBytes > o->maxBytes)
      throw UserError("bench comm: --min-bytes " + std::to_string(o->minBytes) +
                      " exceeds --max-bytes " + std::to_string(o->maxBytes));
    bench::runBenchComm(*o);
  });
}

}  // namespace parascope::cli
