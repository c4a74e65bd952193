// parascope-cli: the headless front end over core/ (and profiler/).
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "app/cli/commands.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/common/malloc_arena.h"
#include "core/common/printable.h"
#include "core/common/stop_signal.h"

namespace {

// One line on stderr, then, under mpirun, the failure notice to every peer (which would
// otherwise wait for this rank until their timeout); returns the exit status.
int fail(const char* prefix, const char* what, int status) {
  // Messages quote names read from files: no escape sequence of theirs reaches the terminal.
  std::fprintf(stderr, "%s: %s\n", prefix, parascope::printableText(what).c_str());
  parascope::failMpiWorld(what, status);
  return status;
}

int stopped(int signal) {
  const parascope::Interrupted e(signal);
  return fail("stopped", e.what(), e.exitCode());
}

// An empty value is never meaningful (`--save ""` would otherwise be taken for no --save at all,
// and a run would end without the checkpoints it was asked for): every option that takes a
// value, in every command, refuses one.
void refuseEmptyValues(CLI::App& app) {
  const CLI::Validator nonEmpty(
      [](std::string& value) {
        return value.empty() ? std::string("the value is empty; give one") : std::string();
      },
      "", "non-empty");
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size() != 0) option->check(nonEmpty);
  }
  for (CLI::App* sub : app.get_subcommands({})) refuseEmptyValues(*sub);
}

}  // namespace

int main(int argc, char** argv) {
  parascope::shareMallocArenas();
  CLI::App app{"ParaScope: train, benchmark and inspect parallel training, headless."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  parascope::cli::registerTrainCommand(app);
  parascope::cli::registerGradCommand(app);
  parascope::cli::registerAnalyzeCommand(app);
  parascope::cli::registerConvertCommand(app);
  parascope::cli::registerCheckpointCommand(app);
  parascope::cli::registerConfigCommand(app);
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks that print figures (never pass/fail)");
  bench->require_subcommand(1);
  parascope::cli::registerBenchStepCommand(*bench);
  parascope::cli::registerBenchTraceCommand(*bench);
  parascope::cli::registerBenchCommCommand(*bench);
  parascope::cli::registerBenchOffloadCommand(*bench);
  parascope::cli::registerBenchSwitchCommand(*bench);
  parascope::cli::registerBenchGpuCommand(*bench);
  parascope::cli::registerBenchPsCommand(*bench);
  parascope::cli::registerPlanCommands(app, *bench);

  refuseEmptyValues(app);
  // JSON output carries the paths it was given, and JSON text is UTF-8: a path that is not is
  // refused now, not after the work when its line would be written.
  bool json = false;
  for (int i = 1; i < argc; ++i) json = json || std::string_view(argv[i]) == "--json";
  for (int i = 1; json && i < argc; ++i) {
    if (!parascope::isValidUtf8(argv[i])) {
      std::fprintf(stderr,
                   "error: argument %d ('%s') is not valid UTF-8, which --json output cannot "
                   "carry; rename the file, or leave out --json\n",
                   i, parascope::printableText(argv[i]).c_str());
      return 2;
    }
  }
  // SIGINT / SIGTERM stop the command at its next safe point (exit 130 / 143, no file left).
  parascope::installStopSignalHandlers();
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, as every other usage error; --help shows the rest.
    std::fprintf(stderr, "error: %s (see %s --help)\n", parascope::printableText(e.what()).c_str(),
                 argv[0]);
    return 2;
  } catch (const parascope::UserError& e) {
    return fail("error", e.what(), 2);
  } catch (const parascope::Interrupted& e) {
    return fail("stopped", e.what(), e.exitCode());
  } catch (const std::bad_alloc&) {
    if (const int s = parascope::pendingStopSignal()) return stopped(s);
    return fail("failed", "out of memory (a setting or input asks for more than this machine has)",
                1);
  } catch (const std::exception& e) {
    // A stop signal ends work in ways that surface as failures (a benchmark's session that
    // stopped, a peer's pending operation failed): that is the stop, exit 128 + signal.
    if (const int s = parascope::pendingStopSignal()) return stopped(s);
    return fail("failed", e.what(), 1);
  }
  // A command that finished although a stop signal came (one with no safe point left to stop
  // at) still reports it: a signal is never swallowed into exit 0.
  if (const int s = parascope::pendingStopSignal()) return stopped(s);
  return 0;
}
