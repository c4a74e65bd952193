// The GPT with parameter servers (core/ps/ps_model.h): its token embedding the sparse table and
// every other parameter the dense one. Sync mode trains as the engine's own data-parallel run of
// the same GPT (AdamW without decay, clipping or schedule, against the tables' Adam), and as the
// collective mode; geo with k_steps = 1 as sync; servers start from the engine's initial
// parameters; a step pulls the rows the tied head touches (all of them); the engine's keys that
// do not apply are refused by name.
#include <QtTest>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/config/config.h"
#include "core/config/model_kind.h"
#include "core/config/ps_config.h"
#include "core/model/model.h"
#include "core/ps/ps_model.h"
#include "core/ps/ps_protocol.h"
#include "core/ps/ps_run.h"
#include "core/train/trainer.h"

using namespace parascope;

namespace {

constexpr int kWorkers = 2;
constexpr int kSteps = 6;

// What both runs share: a small GPT on the fortunes, 2 x 4 sequences per step.
nlohmann::json common() {
  return {{"model",
           {{"type", "gpt"},
            {"vocab_size", 256},
            {"context_length", 16},
            {"hidden_size", 32},
            {"num_attention_heads", 2},
            {"num_layers", 2},
            {"mlp_ratio", 4}}},
          {"data", {{"type", "text"}, {"path", "/usr/share/games/fortunes"}}},
          {"train_micro_batch_size_per_gpu", 4},
          {"train_iters", kSteps},
          {"eval_iters", 3},
          {"seed", 11}};
}

PsConfig psConfig(const std::vector<std::string>& overrides) {
  nlohmann::json doc = common();
  doc["parameter_server"] = {{"worker_num", kWorkers},
                             {"sparse_table", {{"optimizer", "adam"}, {"learning_rate", 0.003}}},
                             {"dense_table", {{"optimizer", "adam"}, {"learning_rate", 0.003}}}};
  for (const std::string& o : overrides) applyOverride(doc, o);
  return parsePsConfig(doc);
}

ps::PsResult train(const PsConfig& c) {
  ps::RunOptions o;
  o.gatherTables = true;
  return ps::runPsThreads(c, o);
}

// The engine's data-parallel run of the same GPT with Adam's arithmetic: its parameters by name
// after kSteps steps, and its validation loss.
struct EngineRun {
  std::map<std::string, std::vector<float>> values;
  double validationLoss = 0;
};

EngineRun engineRun() {
  nlohmann::json doc = common();
  doc["optimizer"] = {
      {"type", "AdamW"},
      {"params", {{"lr", 0.003}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.0}}}};
  doc["gradient_clipping"] = 0.0;
  doc["data_parallel_size"] = kWorkers;
  const TrainConfig c = parseTrainConfig(doc);
  EngineRun run;
  runInProcess(kWorkers, [&](Communicator& world) {
    Trainer trainer(c, defaultAllocator(), world);
    for (int s = 0; s < kSteps; ++s) trainer.step();
    const double loss = trainer.evaluate().loss;
    if (world.rank() != 0) return;
    run.validationLoss = loss;
    for (const Parameter& p : trainer.model().parameters()) {
      const float* v = p.value.data<float>();
      run.values[p.name].assign(v, v + p.value.numel());
    }
  });
  return run;
}

double largestDifference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double{a[i]} - b[i]) / std::max(1.0, std::abs(double{b[i]})));
  }
  return worst;
}

// The largest relative difference over both tables of two PS runs.
double largestDifference(const ps::PsResult& a, const ps::PsResult& b) {
  if (a.sparseRows.size() != b.sparseRows.size()) return 1e30;
  double worst = largestDifference(a.dense, b.dense);
  for (const auto& [row, values] : a.sparseRows) {
    const auto it = b.sparseRows.find(row);
    if (it == b.sparseRows.end()) return 1e30;
    worst = std::max(worst, largestDifference(values, it->second));
  }
  return worst;
}

std::string userErrorOf(const std::vector<std::string>& overrides, bool engineKeys = false) {
  nlohmann::json doc = common();
  doc["parameter_server"] = nlohmann::json::object();
  if (engineKeys) doc["optimizer"] = {{"type", "AdamW"}};
  try {
    for (const std::string& o : overrides) applyOverride(doc, o);
    (void)parsePsConfig(doc);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

class TestGptParameterServer : public QObject {
  Q_OBJECT
 private slots:
  void syncTrainsAsTheEngine();
  void syncTrainsAsTheCollectiveMode();
  void geoWithOneStepTrainsAsSync();
  void serversStartFromTheEnginesParameters();
  void aStepPullsTheRowsTheTiedHeadTouches();
  void savedTablesContinueUnderAnotherServerCount();
  void tablesAreSavedEveryInterval();
  void aWorkersPassesCountAgainstMemory();
  void engineKeysAreRefusedByName_data();
  void engineKeysAreRefusedByName();
};

// The servers' Adam on the GPT's tables is the engine's AdamW without decay: the same values
// after kSteps steps but for the order of Adam's arithmetic (relative 1e-5), and the same
// validation loss.
void TestGptParameterServer::syncTrainsAsTheEngine() {
  const EngineRun engine = engineRun();
  const ps::PsResult ps = train(psConfig({"parameter_server.mode=sync"}));
  QCOMPARE(ps.sparseRows.size(), std::size_t{256});
  std::vector<float> wte;
  for (const auto& [row, values] : ps.sparseRows)
    wte.insert(wte.end(), values.begin(), values.end());
  const double embedding = largestDifference(wte, engine.values.at("wte.weight"));
  QVERIFY2(embedding <= 1e-5, qPrintable(QString("wte: %1").arg(embedding)));
  // The dense table holds the other parameters end to end, in the model's order.
  const PsConfig c = psConfig({});
  ModelSpec spec;
  spec.gpt = c.gpt;
  std::size_t offset = 0;
  for (const auto& [name, shape] : gptModelKind().parameterShapes(spec)) {
    if (name == "wte.weight") continue;
    const std::vector<float>& expected = engine.values.at(name);
    const std::vector<float> got(ps.dense.begin() + static_cast<long>(offset),
                                 ps.dense.begin() + static_cast<long>(offset + expected.size()));
    const double worst = largestDifference(got, expected);
    QVERIFY2(worst <= 1e-5, qPrintable(QString("%1: %2").arg(name.c_str()).arg(worst)));
    offset += expected.size();
  }
  QCOMPARE(offset, static_cast<std::size_t>(c.tables().denseValues));
  QVERIFY2(std::abs(ps.validationLoss - engine.validationLoss) < 1e-5,
           qPrintable(QString("%1 vs %2").arg(ps.validationLoss).arg(engine.validationLoss)));
}

void TestGptParameterServer::syncTrainsAsTheCollectiveMode() {
  const ps::PsResult sync = train(psConfig({"parameter_server.mode=sync"}));
  const ps::PsResult collective = train(psConfig({"parameter_server.mode=collective"}));
  const double worst = largestDifference(sync, collective);
  QVERIFY2(worst <= 1e-6, qPrintable(QString("largest relative difference %1").arg(worst)));
  QCOMPARE(sync.finalLoss, collective.finalLoss);
  QVERIFY(std::abs(sync.validationLoss - collective.validationLoss) < 1e-6);
}

void TestGptParameterServer::geoWithOneStepTrainsAsSync() {
  const std::vector<std::string> sgd = {"parameter_server.sparse_table.optimizer=sgd",
                                        "parameter_server.dense_table.optimizer=sgd",
                                        "parameter_server.sparse_table.learning_rate=0.5",
                                        "parameter_server.dense_table.learning_rate=0.5"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.end(), sgd.begin(), sgd.end());
    return psConfig(more);
  };
  const ps::PsResult sync = train(with({"parameter_server.mode=sync"}));
  const ps::PsResult geo = train(with({"parameter_server.mode=geo", "parameter_server.k_steps=1"}));
  const double worst = largestDifference(geo, sync);
  QVERIFY2(worst <= 1e-5, qPrintable(QString("largest relative difference %1").arg(worst)));
}

// Every server and worker draws a GPT row as the engine initialises that parameter.
void TestGptParameterServer::serversStartFromTheEnginesParameters() {
  const PsConfig c = psConfig({});
  Allocator allocator;
  const ps::RowInit sparse = ps::initialRows(c, ps::kSparseTable, allocator);
  const ps::RowInit dense = ps::initialRows(c, ps::kDenseTable, allocator);
  QCOMPARE(allocator.liveTotal(), std::int64_t{0});  // the GPT it drew them from is gone
  Model model;
  buildGpt(model, c.gpt);
  model.initialize(c.seed);
  const Parameter& wte = *model.find("wte.weight");
  std::vector<float> row(32);
  for (std::int64_t r : {0, 97, 255}) {
    sparse(r, row.data());
    for (int j = 0; j < 32; ++j) QCOMPARE(row[j], wte.value.data<float>()[r * 32 + j]);
  }
  // The dense table's first row is wpe's first row (the next parameter in the model's order).
  dense(0, row.data());
  const Parameter& wpe = *model.find("wpe.weight");
  for (int j = 0; j < 32; ++j) QCOMPARE(row[j], wpe.value.data<float>()[j]);
  // Its last row is padded with zeros past the parameters.
  const PsTables t = c.tables();
  QVERIFY(t.denseValues <= std::int64_t{t.denseRows} * t.dim);
  dense(t.denseRows - 1, row.data());
  for (std::int64_t j = t.denseValues - std::int64_t{t.denseRows - 1} * t.dim; j < t.dim; ++j)
    QCOMPARE(row[static_cast<std::size_t>(j)], 0.0f);
}

// The LM head is tied to wte: it reads every row and writes a gradient to every row, so a step's
// batch touches the whole vocabulary and each worker pulls it once per step.
void TestGptParameterServer::aStepPullsTheRowsTheTiedHeadTouches() {
  const PsConfig c = psConfig({"parameter_server.mode=sync"});
  const ps::PsResult r = train(c);
  QCOMPARE(r.workers.size(), std::size_t{kWorkers});
  for (const ps::WorkerLoad& w : r.workers) QCOMPARE(w.rowsPulled, std::int64_t{256} * kSteps);
  QCOMPARE(r.servers.front().rowsHeld, std::int64_t{256});
  QCOMPARE(r.targets, std::int64_t{kSteps} * kWorkers * 4 * 16);
}

// The GPT's tables saved by two servers after 3 steps and continued by one to kSteps train as one
// server straight through, bit for bit; word2vec's config, or another GPT shape, is refused.
void TestGptParameterServer::savedTablesContinueUnderAnotherServerCount() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("parascope-gpt-ps-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ps::RunOptions save;
  save.save = dir.string();
  (void)ps::runPsThreads(psConfig({"parameter_server.server_num=2", "train_iters=3"}), save);
  ps::RunOptions load;
  load.load = dir.string();
  load.gatherTables = true;
  const ps::PsResult continued = ps::runPsThreads(psConfig({}), load);
  const ps::PsResult straight = train(psConfig({}));
  QCOMPARE(largestDifference(continued, straight), 0.0);
  QCOMPARE(continued.validationLoss, straight.validationLoss);
  const auto refusal = [&](const PsConfig& c) -> std::string {
    try {
      ps::checkCheckpointOptions(c, load);
    } catch (const UserError& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string step = (dir / "step-00000003").string();
  QCOMPARE(refusal(psConfig({"model.hidden_size=64"})),
           "--load " + step +
               ": its tables have model.hidden_size = 32, this config 64; load it with the config "
               "it was saved with (parameter_server.server_num may differ)");
  QCOMPARE(refusal(psConfig({"model.num_attention_heads=4"})),
           "--load " + step +
               ": its tables have model.num_attention_heads = 2, this config 4; load it with the "
               "config it was saved with (parameter_server.server_num may differ)");
  // Fewer layers: fewer dense rows, refused by their count before the names are compared.
  const std::string fewer = refusal(psConfig({"model.num_layers=1"}));
  QVERIFY2(fewer.starts_with("--load " + step + ": its tables have the dense parameters' rows"),
           fewer.c_str());
  std::filesystem::remove_all(dir);
}

// --save-interval: the servers' tables after every 2nd step of 6 (step 6 is the end's save), each
// a checkpoint that continues as the straight run; async has no shared step, geo saves where its
// rounds end.
void TestGptParameterServer::tablesAreSavedEveryInterval() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("parascope-gpt-ps-every-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ps::RunOptions save;
  save.save = dir.string();
  save.saveInterval = 2;
  const ps::PsResult saved = ps::runPsThreads(psConfig({"parameter_server.server_num=2"}), save);
  QCOMPARE(saved.checkpoint, (dir / "step-00000006").string());
  for (const char* step : {"step-00000002", "step-00000004", "step-00000006"})
    QVERIFY2(std::filesystem::exists(dir / step / "manifest.json"), step);
  ps::RunOptions load;
  load.load = (dir / "step-00000004").string();
  load.gatherTables = true;
  const ps::PsResult continued = ps::runPsThreads(psConfig({}), load);
  const ps::PsResult straight = train(psConfig({}));
  QCOMPARE(largestDifference(continued, straight), 0.0);
  QCOMPARE(continued.validationLoss, straight.validationLoss);
  const auto refusal = [&](const std::vector<std::string>& overrides) -> std::string {
    try {
      ps::checkCheckpointOptions(psConfig(overrides), save);
    } catch (const UserError& e) {
      return e.what();
    }
    return "accepted";
  };
  QCOMPARE(refusal({"parameter_server.mode=async"}),
           std::string("--save-interval: mode \"async\" has no step the servers share (each "
                       "applies pushes as they come); its tables are saved at the end"));
  QCOMPARE(refusal({"parameter_server.mode=geo", "parameter_server.k_steps=3"}),
           std::string("--save-interval 2: mode \"geo\" saves where its rounds end, every "
                       "parameter_server.k_steps = 3 steps; give a multiple of 3"));
  QCOMPARE(refusal({"parameter_server.mode=geo", "parameter_server.k_steps=2"}),
           std::string("accepted"));
  std::filesystem::remove_all(dir);
}

// A GPT worker's activations (the engine's estimate for its micro-batch) count with the tables:
// a micro-batch too big for the machine is refused before the run, naming the key.
void TestGptParameterServer::aWorkersPassesCountAgainstMemory() {
  const PsConfig small = psConfig({});
  ps::checkTableMemory(small, 8.0 * (1 << 30), small.ps.ranks());  // fits
  const PsConfig huge = psConfig({"train_micro_batch_size_per_gpu=200000"});
  try {
    ps::checkTableMemory(huge, 8.0 * (1 << 30), huge.ps.ranks());
    QFAIL("a 200,000-sequence micro-batch was accepted");
  } catch (const UserError& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("a worker's passes take ") != std::string::npos &&
                 what.find("lower train_micro_batch_size_per_gpu") != std::string::npos,
             what.c_str());
  }
}

void TestGptParameterServer::engineKeysAreRefusedByName_data() {
  QTest::addColumn<QStringList>("overrides");
  QTest::addColumn<bool>("optimizer");
  QTest::addColumn<QString>("message");
  QTest::newRow("optimizer")
      << QStringList{} << true
      << "config: optimizer does not apply with parameter_server: the servers update each table "
         "by its own rule (parameter_server.sparse_table and dense_table: optimizer, "
         "learning_rate)";
  QTest::newRow("zero")
      << QStringList{"zero_optimization.stage=1"} << false
      << "config: zero_optimization does not apply with parameter_server: each worker is one rank "
         "with the whole model in f32, its micro-batch one step, evaluated at the end (allowed "
         "beside parameter_server: model, data, train_micro_batch_size_per_gpu, train_iters, "
         "log_interval, eval_iters, seed, backend)";
  QTest::newRow("tensor parallel")
      << QStringList{"tensor_model_parallel_size=2"} << false
      << "config: tensor_model_parallel_size does not apply with parameter_server";
  QTest::newRow("sparse rows")
      << QStringList{"parameter_server.sparse_table.rows=4096"} << false
      << "config: parameter_server.sparse_table.rows applies to word2vec; a GPT's sparse table is "
         "its token embedding, of model.vocab_size rows";
  QTest::newRow("initial range")
      << QStringList{"parameter_server.dense_table.initial_range=0.1"} << false
      << "config: parameter_server.dense_table.initial_range applies to word2vec; a GPT's rows "
         "start as the engine initialises its parameters for `seed`";
  QTest::newRow("another model")
      << QStringList{"model.type=mlp"} << false
      << "config: model.type \"mlp\" does not train with parameter servers; allowed: "
         "\"word2vec\", \"gpt\"";
}

void TestGptParameterServer::engineKeysAreRefusedByName() {
  QFETCH(QStringList, overrides);
  QFETCH(bool, optimizer);
  QFETCH(QString, message);
  std::vector<std::string> o;
  for (const QString& s : overrides) o.push_back(s.toStdString());
  const QString got = QString::fromStdString(userErrorOf(o, optimizer));
  QVERIFY2(got.startsWith(message), qPrintable(got));
  QVERIFY(!got.contains('\n'));
}

QTEST_GUILESS_MAIN(TestGptParameterServer)
#include "test_gpt_parameter_server.moc"
