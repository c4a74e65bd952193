// Subcommands of parascope-cli. Each lives in its own file and registers itself on the parent
// CLI11 app with a callback that does the work; adding a command is one file and one line in
// main.cpp. Callbacks throw UserError for anything the user can fix (exit 2) and other
// exceptions for runtime failures (exit 1).
#pragma once

#include <CLI/CLI.hpp>

namespace parascope::cli {

void registerTrainCommand(CLI::App& app);
void registerGradCommand(CLI::App& app);
void registerBenchStepCommand(CLI::App& bench);
void registerAnalyzeCommand(CLI::App& app);
void registerConvertCommand(CLI::App& app);
void registerCheckpointCommand(CLI::App& app);
void registerConfigCommand(CLI::App& app);
void registerBenchTraceCommand(CLI::App& bench);
void registerBenchCommCommand(CLI::App& bench);
void registerBenchSwitchCommand(CLI::App& bench);
void registerBenchGpuCommand(CLI::App& bench);
// simulate, plan calibrate (on app) and bench plan (on bench).
void registerPlanCommands(CLI::App& app, CLI::App& bench);

}  // namespace parascope::cli
