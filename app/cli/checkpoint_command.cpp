// parascope-cli checkpoint inspect|verify|export DIR: what a checkpoint holds, whether its files
// are intact (CRC32), and its parameters as one safetensors weights file for PyTorch
// (docs/checkpoints.md). DIR is a step directory or a checkpoint directory with `latest`.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/common/output_file.h"
#include "core/common/printable.h"
#include "core/config/config_keys.h"
#include "core/io/safetensors.h"
#include "core/state/checkpoint.h"

namespace parascope::cli {

namespace {

struct CheckpointOptions {
  std::string dir;
  std::string out;
  bool json = false;
};

std::int64_t elementsOf(const LogicalTensor& t) {
  std::int64_t n = 1;
  for (std::int64_t d : t.shape) n *= d;
  return n;
}

// The settings that say which run wrote it: the model and the strategy under their config keys
// (config_keys.h), each as the document gives it or else its default; derived ones the document
// left out are left out.
nlohmann::json configSummary(const nlohmann::json& config) {
  nlohmann::json s = nlohmann::json::object();
  if (!config.is_object()) return s;
  for (const ConfigKey& k : configKeys()) {
    if (k.type == KeyType::Object || !(k.strategy || k.section() == "model" || k.path == "seed"))
      continue;
    const nlohmann::json value = configValue(config, k.path);
    if (!value.is_null()) s[k.path] = value;
  }
  return s;
}

std::string hex(std::uint32_t crc) {
  char text[16];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

void runInspect(const CheckpointOptions& o) {
  const CheckpointReader reader(o.dir);
  const CheckpointManifest& m = reader.manifest();
  std::int64_t elements = 0, bytes = 0;
  for (const LogicalTensor& t : m.tensors) elements += elementsOf(t);
  for (const CheckpointFile& f : m.files) bytes += f.bytes;
  const nlohmann::json counters = countersToJson(m.counters);
  const nlohmann::json config = configSummary(m.config);
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"kind", "checkpoint"},
                                       {"directory", reader.directory()},
                                       {"format_version", m.formatVersion},
                                       {"step", m.counters.step},
                                       {"counters", counters},
                                       {"config", config},
                                       {"tensors", m.tensors.size()},
                                       {"elements_per_field", elements},
                                       {"files", m.files.size()},
                                       {"slices", m.slices.size()},
                                       {"size_bytes", bytes}}
                            .dump()
                            .c_str());
    for (const CheckpointFile& f : m.files) {
      std::printf(
          "%s\n",
          nlohmann::json{
              {"kind", "file"}, {"name", f.name}, {"size_bytes", f.bytes}, {"crc32", hex(f.crc32)}}
              .dump()
              .c_str());
    }
    return;
  }
  // Names from the manifest (keys, file names) are printed with their control characters
  // escaped; the JSON lines escape them anyway.
  std::printf("checkpoint %s (format %d)\n", printableText(reader.directory()).c_str(),
              m.formatVersion);
  std::printf("step %d, skipped %d, next sample %lld, loss scale %g\n", m.counters.step,
              m.counters.skipped, static_cast<long long>(m.counters.nextSample),
              m.counters.lossScale);
  std::printf("config:");
  for (auto it = config.begin(); it != config.end(); ++it) {
    std::printf(" %s=%s", printableText(it.key()).c_str(), it.value().dump().c_str());
  }
  std::printf("\n%zu tensors, %lld elements per field, %zu slices in %zu files, %.1f MiB\n",
              m.tensors.size(), static_cast<long long>(elements), m.slices.size(), m.files.size(),
              static_cast<double>(bytes) / (1 << 20));
  for (const CheckpointFile& f : m.files) {
    std::printf("  %s  %lld bytes  crc32 %s\n", printableText(f.name).c_str(),
                static_cast<long long>(f.bytes), hex(f.crc32).c_str());
  }
}

void runVerify(const CheckpointOptions& o) {
  const CheckpointReader reader(o.dir);
  reader.verifyChecksums();
  std::int64_t bytes = 0;
  for (const CheckpointFile& f : reader.manifest().files) bytes += f.bytes;
  std::printf("OK %s: step %d, %zu files, %lld bytes, every element stored once, CRC32 match\n",
              printableText(reader.directory()).c_str(), reader.manifest().counters.step,
              reader.manifest().files.size(), static_cast<long long>(bytes));
}

// Whole tensors in memory: an offline tool, and the weights file holds them whole anyway.
void runExport(const CheckpointOptions& o) {
  // Refused before reading anything; never into the checkpoint it reads.
  checkOutputPath(o.out, "--out", {{"the checkpoint", o.dir}});
  const CheckpointReader reader(o.dir);
  const CheckpointManifest& m = reader.manifest();
  std::vector<std::vector<float>> values;
  values.reserve(m.tensors.size());
  std::vector<SafetensorsEntry> entries;
  for (const LogicalTensor& t : m.tensors) {
    values.emplace_back(static_cast<std::size_t>(elementsOf(t)));
    reader.read({t.name, StateField::Param, 0, elementsOf(t), values.back().data(), DType::F32});
    entries.push_back({t.name, DType::F32, t.shape, values.back().data()});
  }
  writeSafetensorsEntries(o.out, entries, {{"format", "pt"}});
  std::printf("wrote %s: %zu tensors (param, f32) of step %d\n", o.out.c_str(), entries.size(),
              m.counters.step);
}

}  // namespace

void registerCheckpointCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("checkpoint", "Inspect, verify or export a checkpoint");
  cmd->require_subcommand(1);
  auto o = std::make_shared<CheckpointOptions>();
  const char* dirHelp = "Checkpoint: a step directory, or a directory with a 'latest' pointer";

  CLI::App* inspect = cmd->add_subcommand("inspect", "Step, counters, config, tensors and files");
  inspect->add_option("dir", o->dir, dirHelp)->required();
  inspect->add_flag("--json", o->json, "Print one JSON object per line");
  inspect->callback([o] { runInspect(*o); });

  CLI::App* verify =
      cmd->add_subcommand("verify", "Validate the manifest and every file's CRC32 (exit 2 if bad)");
  verify->add_option("dir", o->dir, dirHelp)->required();
  verify->callback([o] { runVerify(*o); });

  CLI::App* exportCmd =
      cmd->add_subcommand("export", "Write the parameters as one safetensors file for PyTorch");
  exportCmd->add_option("dir", o->dir, dirHelp)->required();
  exportCmd->add_option("-o,--out", o->out, "Weights file to write (.safetensors)")->required();
  exportCmd->callback([o] { runExport(*o); });
}

}  // namespace parascope::cli
