// parascope-cli convert IN... -o OUT: reads ParaScope or PyTorch profiler traces and writes
// them as one ParaScope trace (Chrome/Kineto JSON, gzip for ".gz"), or with --per-rank as one
// file per rank ("{rank}" in OUT, else OUT.rankN.json). Per-rank files in, merged file out,
// and the reverse.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/common/output_file.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"

namespace parascope::cli {

namespace {

struct ConvertOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool perRank = false;
  bool json = false;
};

void runConvert(const ConvertOptions& o) {
  // Before reading anything: a bad output path is refused at once, not after the import. Per
  // rank, the names depend on the ranks read; rank 0's name stands for their directory.
  std::vector<InputPath> inputs;
  for (const std::string& in : o.inputs) inputs.push_back({"the input trace", in});
  checkOutputPath(o.perRank ? profiler::perRankPath(o.output, 0) : o.output, "-o", inputs);
  const profiler::TraceData t = profiler::importChromeTraces(o.inputs);
  std::vector<std::string> written;
  if (o.perRank) {
    written = profiler::exportChromeTracePerRank(t, o.output, inputs);
  } else {
    profiler::exportChromeTrace(t, o.output);
    written.push_back(o.output);
  }
  for (const std::string& path : written) {
    if (o.json) {
      std::printf("%s\n", nlohmann::json{{"written", path},
                                         {"events_in_trace", t.events.size()},
                                         {"ranks", t.ranks().size()}}
                              .dump()
                              .c_str());
    } else {
      std::printf("wrote %s\n", path.c_str());
    }
  }
  if (!o.json) std::printf("%zu events from %zu rank(s)\n", t.events.size(), t.ranks().size());
}

}  // namespace

void registerConvertCommand(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert PyTorch or ParaScope traces to a ParaScope trace, merged or per rank");
  cmd->add_option("inputs", o->inputs, "Traces to read (.json or .json.gz)")->required();
  cmd->add_option("-o,--output", o->output, "File to write (.json or .json.gz)")->required();
  cmd->add_flag("--per-rank", o->perRank,
                "One file per rank: {rank} in the output name, else NAME.rankN.json");
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] { runConvert(*o); });
}

}  // namespace parascope::cli
