#include "core/ps/ps_checkpoint.h"

#include <filesystem>
#include <vector>

#include "core/common/bounded_json.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/io/safetensors.h"
#include "core/state/checkpoint.h"

namespace parascope::ps {

namespace fs = std::filesystem;

namespace {

nlohmann::json tableJson(const TableSpec& t, int dim) {
  return {{"optimizer", rowRuleName(t.rule)}, {"state_floats", t.stateFloats(dim)}};
}

// The saved rows of one table in one shard: ids, then stride floats per row.
struct SavedRows {
  std::vector<std::int64_t> ids;
  std::vector<float> data;
};

void exportRows(const RowTable& t, SavedRows& out) {
  t.forEach([&](std::int64_t row, const float* d) {
    out.ids.push_back(row);
    out.data.insert(out.data.end(), d, d + t.stride());
  });
}

}  // namespace

bool periodicSave(const PsConfig& c, int firstStep, int interval, int step) {
  if (interval <= 0 || step % interval != 0 || step >= c.trainIters) return false;
  return c.ps.mode != PsMode::Geo || (step - firstStep) % c.ps.kSteps == 0;
}

TableShard writeTableShard(const std::string& staging, int rank, const RowTable& sparse,
                           const RowTable& dense) {
  SavedRows s, d;
  exportRows(sparse, s);
  exportRows(dense, d);
  const auto rows = [](const SavedRows& r) { return static_cast<std::int64_t>(r.ids.size()); };
  const std::vector<SafetensorsEntry> entries = {
      {"sparse.rows", DType::I64, Shape{rows(s)}, s.ids.data()},
      {"sparse.data", DType::F32, Shape{rows(s), sparse.stride()}, s.data.data()},
      {"dense.rows", DType::I64, Shape{rows(d)}, d.ids.data()},
      {"dense.data", DType::F32, Shape{rows(d), dense.stride()}, d.data.data()}};
  TableShard shard;
  shard.file = shardFileName(rank);
  const SafetensorsWritten written =
      writeSafetensorsEntries((fs::path(staging) / shard.file).string(), entries);
  shard.crc32 = written.crc32;
  shard.bytes = static_cast<std::int64_t>(written.bytes);
  shard.sparseRows = rows(s);
  shard.denseRows = rows(d);
  return shard;
}

std::string commitTables(const std::string& dir, int step, const PsConfig& c,
                         const std::vector<TableShard>& shards, int keep) {
  const PsTables t = c.tables();
  nlohmann::json files = nlohmann::json::array();
  for (const TableShard& s : shards) {
    files.push_back({{"name", s.file},
                     {"crc32", s.crc32},
                     {"bytes", s.bytes},
                     {"sparse_rows", s.sparseRows},
                     {"dense_rows", s.denseRows}});
  }
  nlohmann::json m = {{"format_version", kTablesFormatVersion},
                      {"config", c.document},
                      {"step", step},
                      {"tables",
                       {{"model", c.modelName()},
                        {"embedding_dim", t.dim},
                        {"sparse_rows", t.sparseRows},
                        {"dense_rows", t.denseRows},
                        {"sparse", tableJson(c.ps.sparse, t.dim)},
                        {"dense", tableJson(c.ps.dense, t.dim)}}},
                      {"files", files}};
  // A GPT's dense table is its parameters end to end: their names and shapes say where each
  // value belongs, which the row counts alone do not.
  if (c.isGpt()) {
    m["tables"]["dense_parameters"] = c.denseParameters();
    m["tables"]["num_attention_heads"] = c.gpt.numHeads;  // the one shape no parameter shows
  }
  m["manifest_crc32"] = jsonDocumentChecksum(m);
  {
    OutputFile out((fs::path(stagingDirectory(dir, step)) / "manifest.json").string(),
                   "checkpoint manifest");
    const std::string text = m.dump(1) + "\n";
    out.write(text.data(), text.size());
    out.commit();
  }
  (void)TablesCheckpoint(stagingDirectory(dir, step));  // refuses one that would not load
  return publishCheckpoint(dir, step, keep);
}

TablesCheckpoint::TablesCheckpoint(const std::string& path)
    : directory_(resolveCheckpointDirectory(path)) {
  const std::string where = (fs::path(directory_) / "manifest.json").string();
  manifest_ = parseBoundedJson(readBoundedFile(where, kManifestJsonLimits.maxBytes, "manifest"),
                               where, kManifestJsonLimits);
  if (!manifest_.is_object() || !manifest_.contains("tables")) {
    throw UserError(where +
                    ": a model's checkpoint, not a parameter-server run's (its tables); "
                    "load it with a GPT or MLP config");
  }
  const auto version = manifestInteger(manifest_, "format_version", where, 0, 1 << 20);
  if (version != kTablesFormatVersion) {
    throw UserError(where + ": format_version " + std::to_string(version) +
                    " is not supported (supported: " + std::to_string(kTablesFormatVersion) + ")");
  }
  nlohmann::json rest = manifest_;
  const auto recorded = static_cast<std::uint32_t>(
      manifestInteger(manifest_, "manifest_crc32", where, 0, 0xffffffff));
  rest.erase("manifest_crc32");
  if (jsonDocumentChecksum(rest) != recorded) {
    throw UserError(where +
                    ": the manifest's checksum does not match its contents (edited or "
                    "corrupted)");
  }
  step_ = static_cast<int>(manifestInteger(manifest_, "step", where, 0, 1 << 30));
  const nlohmann::json& tables = manifestMember(manifest_, "tables", where);
  rows_ = manifestInteger(tables, "sparse_rows", where, 1, INT64_MAX);
  denseRows_ = manifestInteger(tables, "dense_rows", where, 1, INT64_MAX);
  const nlohmann::json& files = manifestMember(manifest_, "files", where);
  if (!files.is_array() || files.empty()) throw UserError(where + ": 'files' must list the shards");
  for (const nlohmann::json& f : files) {
    TableShard s;
    const nlohmann::json& name = manifestMember(f, "name", where);
    if (!name.is_string() || name.get<std::string>().find('/') != std::string::npos ||
        !name.get<std::string>().starts_with("rank-")) {
      throw UserError(where +
                      ": a file's 'name' must be a shard in the directory (rank-N.safetensors)");
    }
    s.file = name.get<std::string>();
    s.crc32 = static_cast<std::uint32_t>(manifestInteger(f, "crc32", where, 0, 0xffffffff));
    s.bytes = manifestInteger(f, "bytes", where, 0, INT64_MAX);
    s.sparseRows = manifestInteger(f, "sparse_rows", where, 0, INT64_MAX);
    s.denseRows = manifestInteger(f, "dense_rows", where, 0, INT64_MAX);
    const std::string file = (fs::path(directory_) / s.file).string();
    std::int64_t bytes = 0;
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(file, ec))) {
      throw UserError(file + ": missing (the manifest lists it)");
    }
    const std::uint32_t crc = fileChecksum(file, &bytes);
    if (bytes != s.bytes || crc != s.crc32) {
      throw UserError(file + ": " +
                      (bytes != s.bytes ? "holds " + std::to_string(bytes) +
                                              " bytes, the manifest says " + std::to_string(s.bytes)
                                        : std::string("its CRC-32 differs from the manifest's")) +
                      " (truncated or corrupted)");
    }
    shards_.push_back(std::move(s));
  }
}

void TablesCheckpoint::checkFits(const PsConfig& c) const {
  const std::string where = directory_;
  const nlohmann::json& t = manifestMember(manifest_, "tables", where);
  const auto saved = [&](const char* key) { return manifestInteger(t, key, where, 0, INT64_MAX); };
  const auto refuse = [&](const std::string& key, std::int64_t ours, std::int64_t theirs) {
    throw UserError("--load " + where + ": its tables have " + key + " = " +
                    std::to_string(theirs) + ", this config " + std::to_string(ours) +
                    "; load it with the config it was saved with (parameter_server.server_num "
                    "may differ)");
  };
  // Manifests written before the GPT's tables existed hold word2vec's and do not say so.
  const std::string model =
      t.contains("model") && t["model"].is_string() ? t["model"].get<std::string>() : "word2vec";
  if (model != c.modelName()) {
    throw UserError("--load " + where + ": it holds a " + model + " run's tables, this config " +
                    "trains model.type \"" + c.modelName() + "\"");
  }
  const PsTables ours = c.tables();
  const bool gpt = c.isGpt();
  if (saved("embedding_dim") != ours.dim)
    refuse(gpt ? "model.hidden_size" : "model.embedding_dim", ours.dim, saved("embedding_dim"));
  if (saved("sparse_rows") != ours.sparseRows) {
    refuse(gpt ? "model.vocab_size" : "parameter_server.sparse_table.rows", ours.sparseRows,
           saved("sparse_rows"));
  }
  if (saved("dense_rows") != ours.denseRows) {
    refuse(gpt ? "the dense parameters' rows (model.num_layers, ...)" : "model.max_vocab_size",
           ours.denseRows, saved("dense_rows"));
  }
  if (gpt && saved("num_attention_heads") != c.gpt.numHeads)
    refuse("model.num_attention_heads", c.gpt.numHeads, saved("num_attention_heads"));
  if (gpt && (!t.contains("dense_parameters") || t["dense_parameters"] != c.denseParameters())) {
    throw UserError("--load " + where +
                    ": its GPT's dense parameters (names and shapes) differ from this config's; "
                    "load it with the config it was saved with (parameter_server.server_num may "
                    "differ)");
  }
  for (const char* table : {"sparse", "dense"}) {
    const TableSpec& spec = std::string(table) == "sparse" ? c.ps.sparse : c.ps.dense;
    const nlohmann::json& s = manifestMember(t, table, where);
    const nlohmann::json& rule = manifestMember(s, "optimizer", where);
    if (!rule.is_string() || rule.get<std::string>() != rowRuleName(spec.rule)) {
      throw UserError("--load " + where + ": its " + table + " table was trained with optimizer " +
                      rule.dump() + ", this config's parameter_server." + table +
                      "_table.optimizer is \"" + rowRuleName(spec.rule) +
                      "\"; the rule's state would not carry over");
    }
  }
}

void TablesCheckpoint::load(RowTable& sparse, RowTable& dense, int servers, int index,
                            WordRange slice) const {
  for (const TableShard& s : shards_) {
    const std::string file = (fs::path(directory_) / s.file).string();
    const SafetensorsReader reader(file);
    const auto read = [&](const char* rowsName, const char* dataName, RowTable& table,
                          std::int64_t count, std::int64_t limit, auto keep) {
      const auto& tensors = reader.tensors();
      const auto rows = tensors.find(rowsName), data = tensors.find(dataName);
      if (rows == tensors.end() || data == tensors.end() || rows->second.dtype != DType::I64 ||
          rows->second.shape != Shape{count} || data->second.dtype != DType::F32 ||
          data->second.shape != Shape{count, table.stride()}) {
        throw UserError(file + ": '" + rowsName + "' and '" + dataName + "' must hold " +
                        std::to_string(count) + " rows of " + std::to_string(table.stride()) +
                        " floats (the manifest's count and the table's rule)");
      }
      std::vector<std::int64_t> ids(static_cast<std::size_t>(count));
      std::vector<float> values(static_cast<std::size_t>(count * table.stride()));
      reader.readBytes(rows->second.offset, ids.data(), ids.size() * sizeof(std::int64_t),
                       rowsName);
      reader.readBytes(data->second.offset, values.data(), values.size() * sizeof(float), dataName);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= limit) {
          throw UserError(file + ": '" + rowsName + "' holds row " + std::to_string(ids[i]) +
                          ", outside the table's " + std::to_string(limit) + " rows");
        }
        if (keep(ids[i])) table.setRaw(ids[i], values.data() + i * table.stride());
      }
    };
    read("sparse.rows", "sparse.data", sparse, s.sparseRows, rows_,
         [&](std::int64_t row) { return serverOf(row, servers) == index; });
    read("dense.rows", "dense.data", dense, s.denseRows, denseRows_,
         [&](std::int64_t row) { return row >= slice.first && row < slice.first + slice.count; });
  }
}

}  // namespace parascope::ps
