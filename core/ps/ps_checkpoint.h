// Checkpoints of a parameter-server run's tables: a step directory (as the model checkpoints'
// and committed the same way: staged, fsync'd, renamed, `latest` replaced last) holding one
// safetensors file per server with the sparse rows it held (ids, then values and the rule's state
// per row) and its slice of the dense table, and manifest.json (the config, the step, the tables'
// shapes and rules, each file's CRC-32, size and rows, and its own checksum). A load reads every
// server's file and keeps the rows the new server count gives each server, so a run saved with
// one server_num continues under another. docs/parameter_server.md has the format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/ps_config.h"
#include "core/ps/ps_protocol.h"
#include "core/ps/row_table.h"

namespace parascope::ps {

inline constexpr int kTablesFormatVersion = 1;

struct TableShard {
  std::string file;  // "rank-00001.safetensors"
  std::uint32_t crc32 = 0;
  std::int64_t bytes = 0;
  std::int64_t sparseRows = 0;
  std::int64_t denseRows = 0;
};

// Whether a run started at `firstStep` saves its tables after global step `step` (1-based) under
// RunOptions::saveInterval `interval`: a multiple of it short of train_iters (whose save is the
// end's) at which a round of pushes ends (every step in sync mode, every k_steps from firstStep
// in geo mode). Servers and worker 0 both ask it, so they agree on every save.
bool periodicSave(const PsConfig& c, int firstStep, int interval, int step);

// A server: writes its tables to `staging` (stagingDirectory(dir, step), made by the reporter
// with prepareCheckpoint before any server writes) as rank-<rank>.safetensors, fsync'd.
TableShard writeTableShard(const std::string& staging, int rank, const RowTable& sparse,
                           const RowTable& dense);

// The reporter, once every server's shard is written: manifest.json, then the commit.
std::string commitTables(const std::string& dir, int step, const PsConfig& c,
                         const std::vector<TableShard>& shards, int keep);

class TablesCheckpoint {
 public:
  // `path`: a step directory or a directory with a `latest` pointer. Validates the manifest (its
  // checksum and fields, file names within the directory) and every file's size and CRC-32;
  // UserError naming the file and what is wrong.
  explicit TablesCheckpoint(const std::string& path);
  const std::string& directory() const { return directory_; }
  int step() const { return step_; }
  // UserError naming the key when the run's tables differ from the saved ones in shape or rule.
  void checkFits(const PsConfig& c) const;
  // A server's tables under `servers` servers: the saved rows that hash to `index`, and the dense
  // rows of `slice`.
  void load(RowTable& sparse, RowTable& dense, int servers, int index, WordRange slice) const;

 private:
  std::string directory_;
  int step_ = 0;
  std::int64_t rows_ = 0, denseRows_ = 0;  // the tables' rows: a saved id must be below
  nlohmann::json manifest_;
  std::vector<TableShard> shards_;
};

}  // namespace parascope::ps
