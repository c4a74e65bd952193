// Reading the parameter-server block and the word2vec model (ps_config.h).
#include "core/config/ps_config.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/config/model_kind.h"

namespace parascope {

namespace {

TableSpec readTable(JsonReader r, bool gpt) {
  TableSpec t;
  const std::string rule = r.choice("optimizer");
  t.rule = rule == "sgd" ? RowRule::Sgd : rule == "adagrad" ? RowRule::Adagrad : RowRule::Adam;
  t.learningRate = r.number("learning_rate");
  if (gpt && r.has("initial_range")) {
    throw UserError("config: " + r.keyPath("initial_range") +
                    " applies to word2vec; a GPT's rows start as the engine initialises its "
                    "parameters for `seed`");
  }
  t.initialRange = gpt ? 0 : r.number("initial_range");
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

// `model`: word2vec's, null for a GPT (whose sparse table is its embedding).
void readServers(JsonReader r, ParameterServerSpec& ps, const Word2VecSpec* model,
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
  if (model == nullptr && sparse.has("rows")) {
    throw UserError(
        "config: parameter_server.sparse_table.rows applies to word2vec; a GPT's sparse table "
        "is its token embedding, of model.vocab_size rows");
  }
  if (model != nullptr) *rows = sparse.integer("rows", *rows);
  if (model != nullptr && *rows <= model->vocabSize) {
    throw UserError("config: parameter_server.sparse_table.rows = " + std::to_string(*rows) +
                    " leaves no room for hashed word pairs: it must exceed model.max_vocab_size (" +
                    std::to_string(model->vocabSize) + ")");
  }
  ps.sparse = readTable(sparse, model == nullptr);
  ps.dense = readTable(r.object("dense_table"), model == nullptr);
  r.finish();
}

// A GPT document's keys that configure the collective engine's step (its optimizer, precision,
// parallel layout): a worker is one rank holding its whole model, and the servers update by the
// tables' rules. Each is refused by name rather than as an unknown key.
// "a", "a and b", "a, b and c".
std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out;
}

void refuseEngineKeys(const nlohmann::json& document) {
  // Every such key at once, so that one edit of the document takes them all out.
  std::vector<std::string> rules, engine;
  const auto& keys = configKeys();
  for (auto it = document.begin(); it != document.end(); ++it) {
    const std::string& key = it.key();
    if (key == "optimizer" || key == "scheduler" || key == "gradient_clipping") {
      rules.push_back(key);
      continue;
    }
    const bool known =
        std::any_of(keys.begin(), keys.end(), [&](const ConfigKey& k) { return k.path == key; });
    const bool ours = key == "model" || key == "data" || key == "parameter_server" ||
                      key == "train_micro_batch_size_per_gpu" || key == "train_iters" ||
                      key == "log_interval" || key == "eval_iters" || key == "seed" ||
                      key == "backend";
    if (!ours && known) engine.push_back(key);
  }
  const auto verb = [](const std::vector<std::string>& v) {
    return v.size() == 1 ? " does not apply" : " do not apply";
  };
  if (!rules.empty()) {
    throw UserError("config: " + listed(rules) + verb(rules) +
                    " with parameter_server: the servers update each table by its own rule "
                    "(parameter_server.sparse_table and dense_table: optimizer, learning_rate)" +
                    (engine.empty() ? "" : "; nor do " + listed(engine)));
  }
  if (!engine.empty()) {
    throw UserError("config: " + listed(engine) + verb(engine) +
                    " with parameter_server: each worker is one rank with the whole model in "
                    "f32, its micro-batch one step, evaluated at the end (allowed beside "
                    "parameter_server: model, data, train_micro_batch_size_per_gpu, train_iters, "
                    "log_interval, eval_iters, seed, backend)");
  }
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

bool isPsConfig(const nlohmann::json& document) {
  if (!document.is_object()) return false;
  if (document.contains("parameter_server")) return true;
  const auto model = document.find("model");
  if (model == document.end() || !model->is_object()) return false;
  const auto type = model->find("type");
  return type != model->end() && *type == "word2vec";
}

bool isWord2VecKey(const ConfigKey& key) {
  return key.path.starts_with("parameter_server") || key.help.starts_with("(word2vec)");
}

PsConfig parsePsConfig(const nlohmann::json& document, int worldSize) {
  PsConfig c;
  c.document = document;
  JsonReader r(document, "");
  std::int64_t rows = 0;
  {
    JsonReader m = r.object("model");
    const std::string type = m.choice("type");
    if (type == "word2vec") {
      readModel(m, c.model, &rows);
    } else if (type == "gpt") {
      c.modelType = PsConfig::Model::Gpt;
      ModelSpec spec;
      gptModelKind().read(m, spec);
      gptModelKind().checkTrainable(spec);
      m.finish();
      c.gpt = spec.gpt;
    } else {
      throw UserError("config: model.type \"" + type +
                      "\" does not train with parameter servers; allowed: \"word2vec\", \"gpt\"");
    }
  }
  {
    JsonReader d = r.object("data");
    if (d.choice("type") != "text") {
      throw UserError(std::string("config: model.type \"") + c.modelName() +
                      "\" needs data.type \"text\"");
    }
    c.data.path = d.string("path", c.data.path);
    c.data.validationFraction = d.number("validation_fraction");
    d.finish();
  }
  readServers(r.object("parameter_server"), c.ps, c.isGpt() ? nullptr : &c.model, &rows);
  if (!c.isGpt()) c.model.pairRows = rows - c.model.vocabSize;
  c.microBatch = static_cast<int>(r.integer("train_micro_batch_size_per_gpu"));
  c.trainIters = static_cast<int>(r.integer("train_iters"));
  c.logInterval = static_cast<int>(r.integer("log_interval"));
  c.evalIters = static_cast<int>(r.integer("eval_iters"));
  c.seed = static_cast<std::uint64_t>(r.integer("seed"));
  c.backend = r.choice("backend");
  if (c.isGpt()) refuseEngineKeys(document);
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

PsTables PsConfig::tables() const {
  PsTables t;
  if (!isGpt()) {
    t.dim = model.dim;
    t.sparseRows = model.rows();
    t.denseRows = model.vocabSize;
    t.denseValues = static_cast<std::int64_t>(model.vocabSize) * model.dim;
    return t;
  }
  t.dim = gpt.hiddenSize;
  t.sparseRows = gpt.vocabSize;
  for (const auto& [name, shape] : denseParameters()) {
    std::int64_t n = 1;
    for (const std::int64_t d : shape) n *= d;
    t.denseValues += n;
  }
  t.denseRows = static_cast<int>((t.denseValues + t.dim - 1) / t.dim);
  return t;
}

std::vector<std::pair<std::string, std::vector<std::int64_t>>> PsConfig::denseParameters() const {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
  if (!isGpt()) return out;
  ModelSpec spec;
  spec.gpt = gpt;
  for (const auto& [name, shape] : gptModelKind().parameterShapes(spec)) {
    if (name != "wte.weight")
      out.emplace_back(name, std::vector<std::int64_t>(shape.begin(), shape.end()));
  }
  return out;
}

PsMemory psMemory(const PsConfig& c) {
  const PsTables t = c.tables();
  const std::int64_t dim = t.dim;
  constexpr std::int64_t kIndexBytesPerRow = 56;  // 4 slots x 12 bytes, and the row's id
  const auto rowBytes = [&](const TableSpec& spec) {
    return 4 * (dim + spec.stateFloats(static_cast<int>(dim))) + kIndexBytesPerRow;
  };
  const std::int64_t denseValues = std::int64_t{4} * t.denseRows * dim;
  const std::int64_t denseTable = t.denseRows * rowBytes(c.ps.dense);
  PsMemory out;
  // Every worker keeps the dense table's values and their gradient; a GPT worker also its model's
  // parameters and gradients, into which it copies both tables' rows (activations not counted).
  out.perWorker = 2 * denseValues;
  if (c.isGpt()) out.perWorker += 8 * (t.denseValues + t.sparseRows * dim) + 8 * t.sparseRows * dim;
  // A GPT's tables keep the engine's initial values of every row they may create, on a server
  // and in a geo or collective worker's local copies.
  const std::int64_t initialValues = c.isGpt() ? 4 * (t.sparseRows + t.denseRows) * dim : 0;
  switch (c.ps.mode) {
    case PsMode::Collective:
      // Both tables whole, the sparse table's dense gradient and its rows' touch counts.
      out.perWorker +=
          t.sparseRows * (rowBytes(c.ps.sparse) + 4 * dim + 4) + denseTable + initialValues;
      return out;
    case PsMode::Geo:
      // Local copies of every row it touched, and their values when pulled this round.
      out.perWorker += t.sparseRows * (rowBytes(c.ps.sparse) + 4 * dim + kIndexBytesPerRow) +
                       denseTable + denseValues + initialValues;
      break;
    case PsMode::Sync:
    case PsMode::Async: break;
  }
  const std::int64_t servers = c.ps.servers;
  out.perServer = (t.sparseRows + servers - 1) / servers * rowBytes(c.ps.sparse) +
                  (denseTable + servers - 1) / servers + initialValues;
  return out;
}

}  // namespace parascope
