// Reading the parameter-server block and the word2vec model (ps_config.h).
#include "core/config/ps_config.h"

#include <string>

#include "core/common/error.h"
#include "core/config/json_reader.h"

namespace parascope {

namespace {

TableSpec readTable(JsonReader r) {
  TableSpec t;
  const std::string rule = r.choice("optimizer");
  t.rule = rule == "sgd" ? RowRule::Sgd : rule == "adagrad" ? RowRule::Adagrad : RowRule::Adam;
  t.learningRate = r.number("learning_rate");
  t.initialRange = r.number("initial_range");
  if (t.rule != RowRule::Adagrad && r.has("initial_g2sum")) {
    throw UserError("config: " + r.keyPath("initial_g2sum") +
                    " applies to optimizer \"adagrad\", not \"" + rule + "\"");
  }
  for (const char* key : {"beta1", "beta2", "epsilon"}) {
    if (t.rule != RowRule::Adam && r.has(key)) {
      throw UserError("config: " + r.keyPath(key) + " applies to optimizer \"adam\", not \"" +
                      rule + "\"");
    }
  }
  if (t.rule == RowRule::Adagrad) t.initialG2sum = r.number("initial_g2sum");
  if (t.rule == RowRule::Adam) {
    t.beta1 = r.number("beta1");
    t.beta2 = r.number("beta2");
    t.epsilon = r.number("epsilon");
  }
  r.finish();
  return t;
}

void readModel(JsonReader r, Word2VecSpec& m, std::int64_t* rows) {
  r.choice("type");
  m.dim = static_cast<int>(r.integer("embedding_dim"));
  m.window = static_cast<int>(r.integer("window"));
  m.negatives = static_cast<int>(r.integer("negatives"));
  m.vocabSize = static_cast<int>(r.integer("max_vocab_size"));
  m.minCount = static_cast<int>(r.integer("min_count"));
  m.sample = r.number("sample");
  *rows = m.vocabSize + m.pairRows;
  r.finish();
}

void readServers(JsonReader r, ParameterServerSpec& ps, const Word2VecSpec& model,
                 std::int64_t* rows) {
  const std::string mode = r.choice("mode");
  ps.mode = mode == "sync"    ? PsMode::Sync
            : mode == "async" ? PsMode::Async
            : mode == "geo"   ? PsMode::Geo
                              : PsMode::Collective;
  const bool collective = ps.mode == PsMode::Collective;
  ps.servers = static_cast<int>(r.integer("server_num", collective ? 0 : 1));
  if (collective && ps.servers != 0) {
    throw UserError("config: parameter_server.server_num = " + std::to_string(ps.servers) +
                    ", but mode \"collective\" has no servers (set it to 0, or remove it)");
  }
  if (!collective && ps.servers == 0) {
    throw UserError("config: parameter_server.server_num = 0 leaves mode \"" + mode +
                    "\" without servers; give 1 or more (0 is for mode \"collective\")");
  }
  ps.workers = static_cast<int>(r.integer("worker_num"));
  if (ps.mode != PsMode::Geo && r.has("k_steps")) {
    throw UserError(
        "config: parameter_server.k_steps applies to mode \"geo\" only (pushes every "
        "k steps); mode is \"" +
        mode + "\"");
  }
  ps.kSteps = ps.mode == PsMode::Geo ? static_cast<int>(r.integer("k_steps")) : 1;
  ps.continueOnWorkerFailure = r.choice("worker_failure") == "continue";
  if (ps.continueOnWorkerFailure && ps.mode != PsMode::Async) {
    throw UserError(
        "config: parameter_server.worker_failure = \"continue\" needs mode \"async\" "
        "(in mode \"" +
        mode + "\" every step waits for every worker); mode is \"" + mode + "\"");
  }
  if (ps.continueOnWorkerFailure && ps.workers < 2) {
    throw UserError(
        "config: parameter_server.worker_failure = \"continue\" needs worker_num >= 2 "
        "(worker 0 reports the run: its failure always ends it)");
  }
  JsonReader sparse = r.object("sparse_table");
  *rows = sparse.integer("rows", *rows);
  if (*rows <= model.vocabSize) {
    throw UserError("config: parameter_server.sparse_table.rows = " + std::to_string(*rows) +
                    " leaves no room for hashed word pairs: it must exceed model.max_vocab_size (" +
                    std::to_string(model.vocabSize) + ")");
  }
  ps.sparse = readTable(sparse);
  ps.dense = readTable(r.object("dense_table"));
  r.finish();
}

}  // namespace

const char* psModeName(PsMode m) {
  switch (m) {
    case PsMode::Sync: return "sync";
    case PsMode::Async: return "async";
    case PsMode::Geo: return "geo";
    case PsMode::Collective: return "collective";
  }
  return "?";
}

const char* rowRuleName(RowRule r) {
  switch (r) {
    case RowRule::Sgd: return "sgd";
    case RowRule::Adagrad: return "adagrad";
    case RowRule::Adam: return "adam";
  }
  return "?";
}

int TableSpec::stateFloats(int dim) const {
  switch (rule) {
    case RowRule::Sgd: return 0;
    case RowRule::Adagrad: return dim;
    case RowRule::Adam: return 2 * dim + 2;  // moments, then beta1^t and beta2^t of this row
  }
  return 0;
}

bool isWord2VecConfig(const nlohmann::json& document) {
  if (!document.is_object()) return false;
  const auto model = document.find("model");
  if (model == document.end() || !model->is_object()) return false;
  const auto type = model->find("type");
  return type != model->end() && *type == "word2vec";
}

bool isWord2VecKey(const ConfigKey& key) {
  return key.path.starts_with("parameter_server") || key.help.starts_with("(word2vec)");
}

Word2VecConfig parseWord2VecConfig(const nlohmann::json& document, int worldSize) {
  Word2VecConfig c;
  c.document = document;
  JsonReader r(document, "");
  std::int64_t rows = 0;
  readModel(r.object("model"), c.model, &rows);
  {
    JsonReader d = r.object("data");
    if (d.choice("type") != "text")
      throw UserError("config: model.type \"word2vec\" needs data.type \"text\"");
    c.data.path = d.string("path", c.data.path);
    c.data.validationFraction = d.number("validation_fraction");
    d.finish();
  }
  readServers(r.object("parameter_server"), c.ps, c.model, &rows);
  c.model.pairRows = rows - c.model.vocabSize;
  c.centersPerWorker = static_cast<int>(r.integer("train_micro_batch_size_per_gpu"));
  c.trainIters = static_cast<int>(r.integer("train_iters"));
  c.logInterval = static_cast<int>(r.integer("log_interval"));
  c.evalIters = static_cast<int>(r.integer("eval_iters"));
  c.seed = static_cast<std::uint64_t>(r.integer("seed"));
  c.backend = r.choice("backend");
  r.finish();
  if (c.ps.mode == PsMode::Geo && c.ps.kSteps > c.trainIters) {
    throw UserError("config: parameter_server.k_steps = " + std::to_string(c.ps.kSteps) +
                    " exceeds train_iters (" + std::to_string(c.trainIters) +
                    "): no push would ever reach the servers");
  }
  if (worldSize > 0 && worldSize != c.ps.ranks()) {
    throw UserError("config: parameter_server.server_num (" + std::to_string(c.ps.servers) +
                    ") + worker_num (" + std::to_string(c.ps.workers) +
                    ") = " + std::to_string(c.ps.ranks()) + " ranks, but mpirun started " +
                    std::to_string(worldSize));
  }
  if (worldSize == 0 && c.ps.ranks() > kMaxThreadRanks) {
    throw UserError(
        "config: parameter_server.server_num + worker_num = " + std::to_string(c.ps.ranks()) +
        " ranks; the threads backend runs at most " + std::to_string(kMaxThreadRanks));
  }
  return c;
}

Word2VecMemory word2vecMemory(const Word2VecConfig& c) {
  const Word2VecSpec& m = c.model;
  constexpr std::int64_t kIndexBytesPerRow = 56;  // 4 slots x 12 bytes, and the row's id
  const auto rowBytes = [&](const TableSpec& t) {
    return 4 * (m.dim + t.stateFloats(m.dim)) + kIndexBytesPerRow;
  };
  const std::int64_t denseValues = std::int64_t{4} * m.vocabSize * m.dim;
  const std::int64_t denseTable = m.vocabSize * rowBytes(c.ps.dense);
  Word2VecMemory out;
  // Every worker keeps the dense table's values and their gradient.
  out.perWorker = 2 * denseValues;
  switch (c.ps.mode) {
    case PsMode::Collective:
      // Both tables whole, the sparse table's dense gradient and its rows' touch counts.
      out.perWorker += m.rows() * (rowBytes(c.ps.sparse) + 4 * m.dim + 4) + denseTable;
      return out;
    case PsMode::Geo:
      // Local copies of every row it touched, and their values when pulled this round.
      out.perWorker += m.rows() * (rowBytes(c.ps.sparse) + 4 * m.dim + kIndexBytesPerRow) +
                       denseTable + denseValues;
      break;
    case PsMode::Sync:
    case PsMode::Async: break;
  }
  const std::int64_t servers = c.ps.servers;
  out.perServer = (m.rows() + servers - 1) / servers * rowBytes(c.ps.sparse) +
                  (denseTable + servers - 1) / servers;
  return out;
}

}  // namespace parascope
