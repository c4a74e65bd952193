// Subcommands of parascope-cli. Each lives in its own file and registers itself on the parent
// CLI11 app with a callback that does the work; adding a command is one file and one line in
// main.cpp. Callbacks throw UserError for anything the user can fix (exit 2) and other
// exceptions for runtime failures (exit 1).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "core/comm/communicator.h"
#include "core/plan/system.h"

namespace parascope::cli {

// --system: a preset's name, "this-machine" or empty (this machine's calibrated description,
// calibrating on first use), or a description file. UserError naming the valid names.
SystemDescription systemNamed(const std::string& name);

void registerTrainCommand(CLI::App& app);
// train's run with parameter servers (ps_train.cpp): on threads, or as this rank of `world`.
struct PsCheckpoints {
  std::string load, save;
  int keep = 0;
  int saveInterval = 0;
};
void runPsTrain(const nlohmann::json& doc, bool json, const std::string& trace,
                const PsCheckpoints& checkpoints, Communicator* world);
void registerGradCommand(CLI::App& app);
void registerBenchStepCommand(CLI::App& bench);
void registerAnalyzeCommand(CLI::App& app);
void registerConvertCommand(CLI::App& app);
void registerCheckpointCommand(CLI::App& app);
void registerConfigCommand(CLI::App& app);
void registerBenchTraceCommand(CLI::App& bench);
void registerBenchCommCommand(CLI::App& bench);
void registerBenchOffloadCommand(CLI::App& bench);
void registerBenchSwitchCommand(CLI::App& bench);
void registerBenchGpuCommand(CLI::App& bench);
void registerBenchPsCommand(CLI::App& bench);
// simulate, plan calibrate (on app) and bench plan (on bench).
void registerPlanCommands(CLI::App& app, CLI::App& bench);

}  // namespace parascope::cli
