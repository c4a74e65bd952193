// Parameter-server training of word2vec (core/ps): sync mode trains as the collective run does,
// geo with k_steps = 1 as sync, a table sharded over servers as one table, pulls fetch exactly
// the rows a batch touches, async converges near sync, and every bad config is one clear line.
#include <QtTest>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/config/config.h"
#include "core/config/ps_config.h"
#include "core/ps/ps_checkpoint.h"
#include "core/ps/ps_protocol.h"
#include "core/ps/ps_run.h"
#include "core/ps/row_table.h"
#include "core/ps/skip_gram.h"
#include "core/ps/word2vec_corpus.h"
#include "core/state/checkpoint.h"
#include "profiler/analysis/ps_load.h"
#include "profiler/analysis/trace_analysis.h"
#include "profiler/tracer.h"

using namespace parascope;
namespace fs = std::filesystem;

namespace {

nlohmann::json smallDocument(const std::vector<std::string>& overrides) {
  nlohmann::json doc = {{"model",
                         {{"type", "word2vec"},
                          {"embedding_dim", 16},
                          {"window", 3},
                          {"negatives", 3},
                          {"max_vocab_size", 2000},
                          {"min_count", 3}}},
                        {"data", {{"type", "text"}, {"path", "/usr/share/games/fortunes"}}},
                        {"parameter_server", {{"sparse_table", {{"rows", 2000 + 16384}}}}},
                        {"train_micro_batch_size_per_gpu", 64},
                        {"train_iters", 12},
                        {"eval_iters", 2},
                        {"seed", 7}};
  for (const auto& o : overrides) applyOverride(doc, o);
  return doc;
}

// A fresh directory under the temporary one, unique to this process.
fs::path scratch(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("parascope-ps-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

PsConfig smallConfig(const std::vector<std::string>& overrides) {
  return parsePsConfig(smallDocument(overrides));
}

ps::PsResult train(const PsConfig& c) {
  ps::RunOptions o;
  o.gatherTables = true;
  return ps::runPsThreads(c, o);
}

// The largest |a - b| / max(1, |b|) over both tables; every row of one run must be in the other.
double largestDifference(const ps::PsResult& a, const ps::PsResult& b) {
  if (a.sparseRows.size() != b.sparseRows.size() || a.dense.size() != b.dense.size()) return 1e30;
  double worst = 0;
  auto compare = [&](const std::vector<float>& x, const std::vector<float>& y) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      worst =
          std::max(worst, std::abs(double{x[i]} - y[i]) / std::max(1.0, std::abs(double{y[i]})));
    }
  };
  for (const auto& [row, values] : a.sparseRows) {
    const auto it = b.sparseRows.find(row);
    if (it == b.sparseRows.end()) return 1e30;
    compare(values, it->second);
  }
  compare(a.dense, b.dense);
  return worst;
}

}  // namespace

class TestParameterServer : public QObject {
  Q_OBJECT
 private slots:
  void syncTrainsAsTheCollectiveRun_data();
  void syncTrainsAsTheCollectiveRun();
  void geoWithOneStepTrainsAsSync();
  void shardedTablesEqualOneTable();
  void pullsFetchExactlyTheRowsABatchTouches();
  void asyncConvergesNearSync();
  void rowsStartAlikeOnEveryServer();
  void theTraceTellsEachRanksLoad_data();
  void theTraceTellsEachRanksLoad();
  void aFailingServerEndsEveryWorkerWithItsReason();
  void aFailingWorkerEndsTheRunByDefault();
  void anAsyncRunGoesOnWithoutAFailedWorker();
  void savedTablesContinueUnderAnotherServerCount();
  void damagedCheckpointsAreRefused();
  void badConfigsAreOneLine_data();
  void badConfigsAreOneLine();
  void tooBigATableIsRefusedBeforeTheRun();
};

void TestParameterServer::syncTrainsAsTheCollectiveRun_data() {
  QTest::addColumn<QString>("optimizer");
  QTest::newRow("sgd") << "sgd";
  QTest::newRow("adagrad") << "adagrad";
  QTest::newRow("adam") << "adam";
}

// The same data order and the same per-row rule: the servers' mean of the workers' gradients is
// the all-reduced mean, and the collective run updates exactly the rows some worker touched.
void TestParameterServer::syncTrainsAsTheCollectiveRun() {
  QFETCH(QString, optimizer);
  const std::string rule = optimizer.toStdString();
  const std::string lr = rule == "sgd" ? "1.0" : "0.01";
  const std::vector<std::string> tables = {"parameter_server.sparse_table.optimizer=" + rule,
                                           "parameter_server.dense_table.optimizer=" + rule,
                                           "parameter_server.sparse_table.learning_rate=" + lr,
                                           "parameter_server.dense_table.learning_rate=" + lr};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.end(), tables.begin(), tables.end());
    return smallConfig(more);
  };
  const ps::PsResult sync = train(with({"parameter_server.mode=sync"}));
  const ps::PsResult collective = train(with({"parameter_server.mode=collective"}));
  QVERIFY(sync.sparseRows.size() > 1000);
  QCOMPARE(sync.sparseRows.size(), collective.sparseRows.size());
  const double worst = largestDifference(sync, collective);
  QVERIFY2(worst <= 1e-6, qPrintable(QString("largest relative difference %1").arg(worst)));
  QCOMPARE(sync.finalLoss, collective.finalLoss);
  QVERIFY(std::abs(sync.validationLoss - collective.validationLoss) < 1e-6);
}

void TestParameterServer::geoWithOneStepTrainsAsSync() {
  const std::vector<std::string> sgd = {"parameter_server.sparse_table.optimizer=sgd",
                                        "parameter_server.dense_table.optimizer=sgd",
                                        "parameter_server.sparse_table.learning_rate=1.0",
                                        "parameter_server.dense_table.learning_rate=1.0"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.end(), sgd.begin(), sgd.end());
    return smallConfig(more);
  };
  const ps::PsResult sync = train(with({"parameter_server.mode=sync"}));
  const ps::PsResult geo = train(with({"parameter_server.mode=geo", "parameter_server.k_steps=1"}));
  // Geo adds the workers' mean change, sync applies the mean gradient: equal but for rounding.
  const double worst = largestDifference(geo, sync);
  QVERIFY2(worst <= 1e-5, qPrintable(QString("largest relative difference %1").arg(worst)));
  // With k_steps = 4 the workers drift apart between pushes: the same rows, other values.
  const ps::PsResult geo4 =
      train(with({"parameter_server.mode=geo", "parameter_server.k_steps=4"}));
  QCOMPARE(geo4.sparseRows.size(), sync.sparseRows.size());
  const double drift = largestDifference(geo4, sync);
  QVERIFY2(drift > 20 * std::max(worst, 1e-9),
           qPrintable(QString("k_steps 4 %1, k_steps 1 %2").arg(drift).arg(worst)));
}

void TestParameterServer::shardedTablesEqualOneTable() {
  const ps::PsResult one = train(smallConfig({"parameter_server.server_num=1"}));
  const ps::PsResult three = train(smallConfig({"parameter_server.server_num=3"}));
  QCOMPARE(three.servers.size(), std::size_t{3});
  std::int64_t held = 0;
  for (const ps::ServerLoad& s : three.servers) {
    QVERIFY(s.rowsHeld > 0);
    held += s.rowsHeld;
  }
  QCOMPARE(held, one.servers.front().rowsHeld);
  QCOMPARE(largestDifference(three, one), 0.0);  // bit for bit
  QCOMPARE(three.finalLoss, one.finalLoss);
}

void TestParameterServer::pullsFetchExactlyTheRowsABatchTouches() {
  const PsConfig c = smallConfig({"parameter_server.worker_num=3"});
  const ps::PsResult r = train(c);
  const ps::Word2VecCorpus corpus(c);
  ps::Word2VecBatch batch;
  ps::RowSet rows;
  std::int64_t touchedAll = 0;
  for (int w = 0; w < c.ps.workers; ++w) {
    std::int64_t touched = 0, occurrences = 0;
    for (int t = 0; t < c.trainIters; ++t) {
      corpus.batch(Split::Train, t, std::int64_t{w} * c.microBatch, c.microBatch, batch);
      ps::distinctRows(batch.inputRows, rows);
      touched += static_cast<std::int64_t>(rows.rows.size());
      occurrences += static_cast<std::int64_t>(batch.inputRows.size());
    }
    QCOMPARE(r.workers[w].rowsPulled, touched);
    QVERIFY(touched < occurrences);  // a row two centres share is pulled once
    touchedAll += touched;
  }
  // The servers answered those, and worker 0's evaluation (its validation batches and the
  // vocabulary's rows for the neighbours) besides.
  QVERIFY(r.servers.front().rowsPulled > touchedAll);
  std::int64_t pushed = 0;
  for (const ps::ServerLoad& s : r.servers) pushed += s.rowsPushed;
  QCOMPARE(pushed, touchedAll);
}

// Async workers see rows some pushes old; on word2vec the loss still ends near sync's.
void TestParameterServer::asyncConvergesNearSync() {
  const std::vector<std::string> longer = {"train_iters=120", "eval_iters=4"};
  auto with = [&](const std::string& mode) {
    std::vector<std::string> o = longer;
    o.push_back("parameter_server.mode=" + mode);
    return smallConfig(o);
  };
  const ps::PsResult sync = train(with("sync"));
  const ps::PsResult async = train(with("async"));
  const double start = 4 * std::log(2.0);  // (1 + negatives) log 2: every score zero
  QVERIFY2(sync.validationLoss < start - 0.2, qPrintable(QString::number(sync.validationLoss)));
  QVERIFY2(
      std::abs(async.validationLoss - sync.validationLoss) < 0.1,
      qPrintable(QString("async %1, sync %2").arg(async.validationLoss).arg(sync.validationLoss)));
  for (const ps::WorkerLoad& w : async.workers) QVERIFY(w.stalenessMax >= 0);
}

void TestParameterServer::rowsStartAlikeOnEveryServer() {
  TableSpec spec;
  spec.initialRange = 0.5;
  ps::RowTable a(8, spec, 11, ps::kSparseTable), b(8, spec, 11, ps::kSparseTable);
  const std::vector<std::int64_t> forward = {5, 1 << 20, 77}, backward = {77, 1 << 20, 5};
  std::vector<float> x(24), y(24);
  a.pull(forward, x.data());
  b.pull(backward, y.data());
  for (int i = 0; i < 8; ++i) {
    QCOMPARE(x[i], y[16 + i]);
    QCOMPARE(x[16 + i], y[i]);
    QVERIFY(std::abs(x[i]) <= 0.5f);
  }
  QVERIFY(x[0] != x[16]);
}

// analyze's parameter-server tables, from the trace alone, give what the ranks counted.
void TestParameterServer::theTraceTellsEachRanksLoad_data() {
  QTest::addColumn<QString>("mode");
  QTest::addColumn<int>("pushes");  // per worker, in 20 steps
  QTest::newRow("sync") << "sync" << 20;
  QTest::newRow("async") << "async" << 20;
  QTest::newRow("geo k_steps 3") << "geo" << 7;
}

void TestParameterServer::theTraceTellsEachRanksLoad() {
  QFETCH(QString, mode);
  QFETCH(int, pushes);
  std::vector<std::string> o = {"parameter_server.mode=" + mode.toStdString(),
                                "parameter_server.server_num=2", "train_iters=20"};
  if (mode == "geo") o.emplace_back("parameter_server.k_steps=3");
  const PsConfig c = smallConfig(o);
  profiler::Tracer tracer;
  tracer.install();
  const ps::PsResult r = ps::runPsThreads(c, {});
  tracer.uninstall();
  const profiler::TraceData trace = tracer.collect();
  const profiler::PsActivity a = profiler::computePsActivity(trace);
  // The communication matrix of the sends counts each transfer once: a server sends its
  // replies, each a 40-byte header and the payload its load counts.
  const profiler::CommVolume volume = profiler::commVolumeOf(trace, "send");
  for (const ps::ServerLoad& s : r.servers) {
    std::int64_t sent = 0;
    for (const ps::WorkerLoad& w : r.workers) sent += volume.matrix.at(s.rank, w.rank);
    QCOMPARE(sent, s.bytesOut + 40 * s.pulls);
  }
  // A server's request spans wrap those transfers: they are not counted again.
  for (const profiler::OpTotal& op : profiler::computeCommVolume(trace).ops) {
    QVERIFY2(op.name != "serve_pull" && op.name != "receive_push", op.name.c_str());
  }
  QCOMPARE(a.servers.size(), r.servers.size());
  for (std::size_t i = 0; i < a.servers.size(); ++i) {
    const ps::ServerLoad& s = r.servers[i];
    const profiler::PsServerActivity& t = a.servers[i];
    QCOMPARE(t.rank, s.rank);
    QCOMPARE(t.pulls, s.pulls);
    QCOMPARE(t.pushes, s.pushes);
    QCOMPARE(t.rowsHeld, s.rowsHeld);
    QCOMPARE(t.rowsPulled, s.rowsPulled);
    QCOMPARE(t.rowsPushed, s.rowsPushed);
    QCOMPARE(t.bytesOut, s.bytesOut);
    QCOMPARE(t.bytesIn, s.bytesIn);
    QVERIFY(t.busyNs > 0 && t.waitNs > 0);
  }
  QCOMPARE(a.workers.size(), r.workers.size());
  for (std::size_t i = 0; i < a.workers.size(); ++i) {
    QCOMPARE(a.workers[i].rank, r.workers[i].rank);
    QCOMPARE(a.workers[i].pulls, r.workers[i].pulls);
    QCOMPARE(a.workers[i].pushes, std::int64_t{pushes});
    const bool async = mode == "async";
    QCOMPARE(a.workers[i].stalePushes, async ? std::int64_t{c.trainIters} * c.ps.servers : 0);
    QCOMPARE(a.workers[i].stalenessMax, r.workers[i].stalenessMax);
    QCOMPARE(a.workers[i].stalenessMean, r.workers[i].stalenessMean);
  }
}

// A server that fails after 10 requests: every worker, waiting on it or about to, fails at once
// with its reason (not at the communication timeout), and the run reports the server's.
void TestParameterServer::aFailingServerEndsEveryWorkerWithItsReason() {
  for (const char* mode : {"sync", "async", "geo"}) {
    std::vector<std::string> o = {std::string("parameter_server.mode=") + mode,
                                  "parameter_server.server_num=2", "train_iters=50"};
    if (std::string(mode) == "geo") o.emplace_back("parameter_server.k_steps=2");
    ps::RunOptions options;
    options.progress = [](int rank, std::int64_t handled) {
      if (rank == 1 && handled == 10) throw std::runtime_error("server disk on fire");
    };
    QElapsedTimer clock;
    clock.start();
    try {
      (void)ps::runPsThreads(smallConfig(o), options);
      QFAIL("the run ended without the failure");
    } catch (const std::exception& e) {
      QCOMPARE(QString(e.what()), QString("server disk on fire"));
    }
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString::number(clock.elapsed())));
  }
}

void TestParameterServer::aFailingWorkerEndsTheRunByDefault() {
  ps::RunOptions options;
  options.progress = [](int rank, std::int64_t step) {
    if (rank == 2 && step == 3) throw std::runtime_error("worker out of data");
  };
  try {
    (void)ps::runPsThreads(smallConfig({"parameter_server.mode=async"}), options);
    QFAIL("the run ended without the failure");
  } catch (const std::exception& e) {
    QCOMPARE(QString(e.what()), QString("worker out of data"));
  }
}

// worker_failure "continue": worker 1 fails in its 4th step; worker 0 trains on to the end and
// the report names the failure.
void TestParameterServer::anAsyncRunGoesOnWithoutAFailedWorker() {
  const PsConfig c =
      smallConfig({"parameter_server.mode=async", "parameter_server.worker_failure=continue"});
  ps::RunOptions options;
  options.progress = [](int rank, std::int64_t step) {
    if (rank == 2 && step == 3) throw std::runtime_error("worker out of data");
  };
  const ps::PsResult r = ps::runPsThreads(c, options);
  QCOMPARE(r.failures.size(), std::size_t{1});
  QCOMPARE(r.failures[0].rank, 2);
  QCOMPARE(r.failures[0].step, 3);
  QCOMPARE(r.failures[0].reason, std::string("worker out of data"));
  QCOMPARE(r.workers[0].steps, c.trainIters);
  QCOMPARE(r.workers[1].steps, 3);
  QCOMPARE(r.targets, std::int64_t{c.trainIters + 3} * c.microBatch);
  QVERIFY(r.validationLoss > 0);
}

// Saved after 6 steps by two servers, continued by three to 12: the same tables, bit for bit,
// as one server training 12 steps straight (sync: the servers' state is the whole state).
void TestParameterServer::savedTablesContinueUnderAnotherServerCount() {
  const fs::path dir = scratch("continue");
  ps::RunOptions save;
  save.save = dir.string();
  const ps::PsResult first =
      ps::runPsThreads(smallConfig({"parameter_server.server_num=2", "train_iters=6"}), save);
  QCOMPARE(QString::fromStdString(first.checkpoint),
           QString::fromStdString((dir / "step-00000006").string()));
  ps::RunOptions load;
  load.load = dir.string();
  load.gatherTables = true;
  const ps::PsResult continued =
      ps::runPsThreads(smallConfig({"parameter_server.server_num=3", "train_iters=12"}), load);
  QCOMPARE(continued.targets, std::int64_t{6} * 64 * 2);  // this run's steps
  const ps::PsResult straight =
      train(smallConfig({"parameter_server.server_num=1", "train_iters=12"}));
  QCOMPARE(largestDifference(continued, straight), 0.0);
  QCOMPARE(continued.finalLoss, straight.finalLoss);
  QCOMPARE(continued.validationLoss, straight.validationLoss);
  fs::remove_all(dir);
}

void TestParameterServer::damagedCheckpointsAreRefused() {
  const fs::path dir = scratch("damaged");
  ps::RunOptions save;
  save.save = dir.string();
  (void)ps::runPsThreads(smallConfig({"train_iters=4"}), save);
  const fs::path step = dir / "step-00000004";
  auto refusal = [&](const std::vector<std::string>& overrides) -> QString {
    ps::RunOptions load;
    load.load = dir.string();
    try {
      ps::checkCheckpointOptions(smallConfig(overrides), load);
    } catch (const UserError& e) {
      return e.what();
    }
    return "accepted";
  };
  QCOMPARE(refusal({"train_iters=8"}), QString("accepted"));
  QCOMPARE(refusal({"train_iters=4"}),
           QString::fromStdString("--load " + step.string() +
                                  ": saved at step 4, and train_iters = 4 counts the saved steps "
                                  "too: nothing is left to train; raise train_iters"));
  QCOMPARE(refusal({"train_iters=8", "model.embedding_dim=8"}),
           QString::fromStdString("--load " + step.string() +
                                  ": its tables have model.embedding_dim = 16, this config 8; load "
                                  "it with the config it was saved with "
                                  "(parameter_server.server_num may differ)"));
  QCOMPARE(refusal({"train_iters=8", "parameter_server.sparse_table.optimizer=sgd"}),
           QString::fromStdString("--load " + step.string() +
                                  ": its sparse table was trained with optimizer \"adam\", this "
                                  "config's parameter_server.sparse_table.optimizer is \"sgd\"; "
                                  "the rule's state would not carry over"));
  QCOMPARE(refusal({"train_iters=8", "parameter_server.mode=collective",
                    "parameter_server.server_num=0"}),
           QString("--save and --load keep the servers' tables; mode \"collective\" has no "
                   "servers (its tables are the workers')"));
  // The model checkpoints' reader names what this is.
  try {
    (void)CheckpointReader(dir.string());
    QFAIL("a model's reader took the tables");
  } catch (const UserError& e) {
    QVERIFY2(QString(e.what()).contains("a parameter-server checkpoint"), e.what());
  }
  // One byte flipped in a shard, then the shard cut short, then the manifest edited.
  const fs::path shard = step / "rank-00000.safetensors";
  std::string bytes;
  {
    std::ifstream in(shard, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto rewrite = [](const fs::path& p, const std::string& content) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  };
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x10;
  rewrite(shard, flipped);
  QVERIFY(refusal({"train_iters=8"})
              .endsWith("rank-00000.safetensors: its CRC-32 differs from "
                        "the manifest's (truncated or corrupted)"));
  rewrite(shard, bytes.substr(0, bytes.size() - 8));
  QVERIFY(refusal({"train_iters=8"}).contains("bytes, the manifest says"));
  rewrite(shard, bytes);
  QCOMPARE(refusal({"train_iters=8"}), QString("accepted"));
  const fs::path manifest = step / "manifest.json";
  std::string text;
  {
    std::ifstream in(manifest);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = text.find("\"step\": 4");
  QVERIFY(at != std::string::npos);
  rewrite(manifest, text.replace(at, 9, "\"step\": 3"));
  const QString edited = refusal({"train_iters=8"});
  QVERIFY2(edited.endsWith("manifest.json: the manifest's checksum does not match its contents "
                           "(edited or corrupted)"),
           qPrintable(edited));
  fs::remove_all(dir);
}

void TestParameterServer::badConfigsAreOneLine_data() {
  QTest::addColumn<QStringList>("overrides");
  QTest::addColumn<int>("worldSize");
  QTest::addColumn<QString>("message");
  QTest::newRow("k_steps without geo")
      << QStringList{"parameter_server.k_steps=4"} << 0
      << "config: parameter_server.k_steps applies to mode \"geo\" only (pushes every k steps); "
         "mode is \"sync\"";
  QTest::newRow("servers in collective mode")
      << QStringList{"parameter_server.mode=collective", "parameter_server.server_num=2"} << 0
      << "config: parameter_server.server_num = 2, but mode \"collective\" has no servers (set it "
         "to 0, or remove it)";
  QTest::newRow("no servers in sync mode")
      << QStringList{"parameter_server.server_num=0"} << 0
      << "config: parameter_server.server_num = 0 leaves mode \"sync\" without servers; give 1 or "
         "more (0 is for mode \"collective\")";
  QTest::newRow("more servers than ranks")
      << QStringList{"parameter_server.server_num=4"} << 3
      << "config: parameter_server.server_num (4) + worker_num (2) = 6 ranks, but mpirun "
         "started 3";
  QTest::newRow("no rows for pairs")
      << QStringList{"parameter_server.sparse_table.rows=2000"} << 0
      << "config: parameter_server.sparse_table.rows = 2000 leaves no room for hashed word "
         "pairs: it must exceed model.max_vocab_size (2000)";
  QTest::newRow("adam key on adagrad")
      << QStringList{"parameter_server.dense_table.optimizer=adagrad",
                     "parameter_server.dense_table.beta1=0.8"}
      << 0
      << "config: parameter_server.dense_table.beta1 applies to optimizer \"adam\", not "
         "\"adagrad\"";
  QTest::newRow("unknown mode")
      << QStringList{"parameter_server.mode=hogwild"} << 0
      << "config: parameter_server.mode = \"hogwild\" is not supported; allowed: sync, async, "
         "geo, collective";
  QTest::newRow("geo longer than the run")
      << QStringList{"parameter_server.mode=geo", "parameter_server.k_steps=50"} << 0
      << "config: parameter_server.k_steps = 50 exceeds train_iters (12): no push would ever "
         "reach the servers";
  QTest::newRow("too many threads")
      << QStringList{"parameter_server.server_num=200", "parameter_server.worker_num=100"} << 0
      << "config: parameter_server.server_num + worker_num = 300 ranks; the threads backend runs "
         "at most 256";
  QTest::newRow("continue in sync mode")
      << QStringList{"parameter_server.worker_failure=continue"} << 0
      << "config: parameter_server.worker_failure = \"continue\" needs mode \"async\" (in mode "
         "\"sync\" every step waits for every worker); mode is \"sync\"";
  QTest::newRow("continue with one worker")
      << QStringList{"parameter_server.worker_failure=continue", "parameter_server.mode=async",
                     "parameter_server.worker_num=1"}
      << 0
      << "config: parameter_server.worker_failure = \"continue\" needs worker_num >= 2 (worker 0 "
         "reports the run: its failure always ends it)";
  QTest::newRow("image data") << QStringList{"data.type=idx"} << 0
                              << "config: model.type \"word2vec\" needs data.type \"text\"";
}

void TestParameterServer::badConfigsAreOneLine() {
  QFETCH(QStringList, overrides);
  QFETCH(int, worldSize);
  QFETCH(QString, message);
  std::vector<std::string> o;
  for (const QString& s : overrides) o.push_back(s.toStdString());
  try {
    (void)parsePsConfig(smallDocument(o), worldSize);
    QFAIL("accepted");
  } catch (const UserError& e) {
    QCOMPARE(QString::fromStdString(e.what()), message);
  }
}

void TestParameterServer::tooBigATableIsRefusedBeforeTheRun() {
  const PsConfig c =
      smallConfig({"parameter_server.sparse_table.rows=4000000000", "model.embedding_dim=256"});
  try {
    ps::checkTableMemory(c, 8.0 * (1 << 30), c.ps.ranks());
    QFAIL("accepted");
  } catch (const UserError& e) {
    QCOMPARE(QString(e.what()),
             QString("parameter_server: with every row touched the tables need up to 11.4 TiB "
                     "per server (its share of 4000000000 rows x 256 values with their adam "
                     "state) and 3.9 MiB per worker, 11.4 TiB for the 3 ranks on this machine, "
                     "more than the 8.0 GiB available; lower parameter_server.sparse_table.rows "
                     "or model.embedding_dim, or run servers on other machines (mpirun)"));
  }
  ps::checkTableMemory(smallConfig({}), 8.0 * (1 << 30), 3);  // the small one fits
}

QTEST_GUILESS_MAIN(TestParameterServer)
#include "test_parameter_server.moc"
