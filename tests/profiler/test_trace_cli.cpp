// `parascope-cli train --trace` end to end with in-process ranks: the file appears complete
// (no temporary left behind), `analyze` reads it back and finds both ranks' steps, the
// communication between them and their memory; a path that cannot be written fails before
// training, with exit code 2 and the path named.
#include <QtTest>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/cli_run.h"

namespace fs = std::filesystem;

class TestTraceCli : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void cleanupTestCase();
  void trainTraceIsReadByAnalyze();
  void unwritableTracePathFailsFirst();

 private:
  using Result = parascope::test::CliResult;
  static Result run(const QStringList& args) {
    return parascope::test::runCli(args, 170000, PARASCOPE_SOURCE_DIR);
  }
  static QStringList tinyRun() {
    return {"train_iters=2",
            "model.num_layers=1",
            "model.hidden_size=32",
            "model.context_length=16",
            "train_micro_batch_size_per_gpu=4",
            "eval_iters=1",
            "data_parallel_size=2"};
  }
  fs::path dir_;
};

void TestTraceCli::initTestCase() {
  dir_ = fs::temp_directory_path() / ("parascope-test-trace-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir_);
}

void TestTraceCli::cleanupTestCase() {
  fs::remove_all(dir_);
}

void TestTraceCli::trainTraceIsReadByAnalyze() {
  const QString trace = QString::fromStdString((dir_ / "run.json").string());
  const Result train = run(QStringList{"train", "--json", "--trace", trace} + tinyRun());
  QVERIFY2(train.code == 0, qPrintable(train.err));
  QVERIFY(train.out.contains("{\"event\":\"trace\",\"path\":\"" + trace + "\"}"));
  QCOMPARE(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);

  const Result analyze = run({"analyze", trace, "--json"});
  QVERIFY2(analyze.code == 0, qPrintable(analyze.err));
  std::map<std::string, int> sections;
  std::map<std::pair<int, int>, std::int64_t> matrix;
  std::map<int, std::int64_t> parameterPeak;
  std::set<std::pair<int, int>> steps;  // (rank, step) breakdowns
  for (const QString& line : analyze.out.split('\n', Qt::SkipEmptyParts)) {
    const auto j = nlohmann::json::parse(line.toStdString());
    const std::string section = j.at("section");
    ++sections[section];
    if (section == "trace") {
      QCOMPARE(j.at("ranks").get<int>(), 2);
      QCOMPARE(j.at("world_size").get<int>(), 2);
      QCOMPARE(j.at("clock_residual_ns").get<std::int64_t>(), std::int64_t{0});  // one clock
    } else if (section == "comm_matrix") {
      matrix[std::pair{j.at("src").get<int>(), j.at("dst").get<int>()}] = j.at("bytes");
    } else if (section == "memory_peak" && j.at("name") == "parameter") {
      parameterPeak[j.at("rank").get<int>()] = j.at("peak_bytes");
    } else if (section == "breakdown") {
      steps.insert(std::pair{j.at("rank").get<int>(), j.at("step").get<int>()});
    }
  }
  // The GPT of tinyRun has P = 21472 parameters: wte 256 x 32, wpe 16 x 32, one block (two
  // layernorms 2 x 64, qkv 32 x 96 + 96, projection 32 x 32 + 32, MLP 32 x 128 + 128 and
  // 128 x 32 + 32) and ln_f 64. Per step each replica all-reduces its 4 P gradient bytes (one
  // 25 MB bucket; over 32 KiB the threads backend reduces in two chunks, each rank sending its
  // peer 4 P / 2 twice) and the 4-byte loss; evaluation adds the 16-byte counts and 4-byte loss.
  const std::int64_t P = 21472;
  const std::int64_t bytes = 2 * (4 * P + 4) + 16 + 4;
  QCOMPARE(matrix[std::pair(0, 1)], bytes);
  QCOMPARE(matrix[std::pair(1, 0)], bytes);
  QCOMPARE(matrix.size(), std::size_t{2});
  QCOMPARE(parameterPeak[0], 4 * P);  // fp32 parameters, ZeRO 0: the whole model per replica
  QCOMPARE(parameterPeak[1], parameterPeak[0]);  // replicas hold the same parameters
  for (int rank : {0, 1}) {
    for (int step : {1, 2}) QVERIFY(steps.count(std::pair{rank, step}) == 1);
  }
}

void TestTraceCli::unwritableTracePathFailsFirst() {
  const QString trace = QString::fromStdString((dir_ / "missing" / "run.json").string());
  const Result r = run(QStringList{"train", "--trace", trace} + tinyRun());
  QCOMPARE(r.code, 2);
  QVERIFY2(r.err.contains(trace), qPrintable(r.err));
  QVERIFY2(!r.out.contains("step"), qPrintable(r.out));  // failed before training
}

QTEST_GUILESS_MAIN(TestTraceCli)
#include "test_trace_cli.moc"
