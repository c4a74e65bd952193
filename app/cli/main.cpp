// parascope-cli: the headless front end over core/ (and profiler/).
#include <cstdio>
#include <exception>

#include "app/cli/commands.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"ParaScope: train, benchmark and inspect parallel training, headless."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  parascope::cli::registerTrainCommand(app);
  parascope::cli::registerGradCommand(app);
  parascope::cli::registerAnalyzeCommand(app);
  parascope::cli::registerConvertCommand(app);
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks that print figures (never pass/fail)");
  bench->require_subcommand(1);
  parascope::cli::registerBenchStepCommand(*bench);
  parascope::cli::registerBenchTraceCommand(*bench);
  parascope::cli::registerBenchCommCommand(*bench);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const parascope::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "failed: %s\n", e.what());
    // Under mpirun the peers would otherwise wait for this rank until their timeout.
    parascope::failMpiWorld(e.what());
    return 1;
  }
  return 0;
}
