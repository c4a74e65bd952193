// Issue 16's probes as a user runs them: parascope-cli with hostile configs, overrides, outputs
// and signals. Each must end with one line on stderr and exit 2 (or 130 / 143 on a signal),
// leave no file behind and never replace a special file.
#include <QProcess>
#include <QtTest>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_run.h"
#include "tests/input_probes.h"

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class TestCliInput : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void cleanupTestCase();
  void refusedWithOneLine_data();
  void refusedWithOneLine();
  void outputsToSpecialFilesAreRefusedUntouched();
  void outputsNeverReplaceInputs();
  void benchmarkRemovesOnlyItsOwnScratch();
  void stopSignalEndsTrainingCleanly_data();
  void stopSignalEndsTrainingCleanly();
  void nonUtf8PathsWithJsonAreRefusedFirst();
  void benchmarksStopOnSignals();

 private:
  using Result = parascope::test::CliResult;
  static Result run(const QStringList& args) {
    return parascope::test::runCli(args, 120000, PARASCOPE_SOURCE_DIR);
  }
  QString path(const char* name) { return QString::fromStdString((dir_ / name).string()); }
  // The files in the scratch directory other than the inputs written by initTestCase.
  QStringList leftovers() {
    QStringList out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (!inputs_.contains(QString::fromStdString(name))) out << QString::fromStdString(name);
    }
    return out;
  }
  fs::path dir_;
  QStringList inputs_;
};

// A path whose bytes are not UTF-8 reached JSON output after the work and failed there with a
// JSON library's internal error; refused first now (argv passed raw, as a shell passes it).
void TestCliInput::nonUtf8PathsWithJsonAreRefusedFirst() {
  const parascope::test::RawRun r = parascope::test::runRaw(
      PARASCOPE_CLI, {"convert", "/tmp/\xff.json", "-o", "/tmp/unused.json", "--json"},
      STDERR_FILENO);
  QVERIFY(WIFEXITED(r.status));
  QCOMPARE(WEXITSTATUS(r.status), 2);
  QCOMPARE(r.output, std::string("error: argument 2 ('/tmp/\xff.json') is not valid UTF-8, which "
                                 "--json output cannot carry; rename the file, or leave out "
                                 "--json\n"));
}

// A benchmark stopped by SIGTERM exited 1 (its session's failure) or, with many seconds per
// point, ran on; it now ends at once with 143 and says so.
void TestCliInput::benchmarksStopOnSignals() {
  QProcess p;
  p.setWorkingDirectory(PARASCOPE_SOURCE_DIR);
  p.start(PARASCOPE_CLI,
          {"bench", "comm", "--backend", "threads", "--seconds-per-point", "10", "--json"});
  QVERIFY(p.waitForStarted());
  QTest::qWait(1500);  // inside its first point: one point alone takes 10 s
  QCOMPARE(p.state(), QProcess::Running);
  ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
  QVERIFY(p.waitForFinished(10000));
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QCOMPARE(p.exitCode(), 143);
  QCOMPARE(QString(p.readAllStandardError()), QString("stopped: terminated (SIGTERM)\n"));
}

void TestCliInput::initTestCase() {
  dir_ = fs::temp_directory_path() / ("parascope-test-hostile-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir_ / "outdir");
  std::ofstream(dir_ / "array.json") << "[1, 2]";
  std::ofstream(dir_ / "null.json") << "null";
  std::ofstream(dir_ / "huge-number.json") << R"({"train_iters": 1e400})";
  std::ofstream(dir_ / "dup.json") << R"({"train_iters": 3, "train_iters": 4})";
  std::ofstream(dir_ / "big-model.json") << R"({"model": {"hidden_size": 8192, "num_layers": 64}})";
  std::ofstream(dir_ / "deep.json")
      << "{\"train_iters\": " << std::string(60000, '[') << std::string(60000, ']') << "}";
  std::ofstream(dir_ / "weights.safetensors") << "";
  std::ofstream(dir_ / "tokens.bin") << "";
  QCOMPARE(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  // Hardware descriptions (core/plan/system.h) with one key missing and one negative.
  nlohmann::json link = {{"latency_us", 5}, {"bandwidth_GBps", 10}};
  nlohmann::json matmul = {{"peak_TFLOPs", 0.1},
                           {"backward_peak_TFLOPs", 0.1},
                           {"half_efficiency_dimension", 16},
                           {"cast_ns_per_element", 0}};
  nlohmann::json system = {{"name", "test"},
                           {"device",
                            {{"kind", "cpu"},
                             {"memory_GiB", 8},
                             {"matmul", {{"fp32", matmul}, {"bf16", matmul}, {"fp16", matmul}}},
                             {"elementwise_bandwidth_GBps", 10},
                             {"optimizer_bandwidth_GBps", 10},
                             {"instruction_overhead_us", 10}}},
                           {"devices_per_node", 2},
                           {"links",
                            {{"in_process", {{"ring", link}, {"tree", link}}},
                             {"node", {{"ring", link}, {"tree", link}}},
                             {"network", {{"ring", link}, {"tree", link}}}}},
                           {"step_overhead_us", 0}};
  std::ofstream(dir_ / "system-no-cores.json") << system.dump();
  system["device"]["cores"] = 2;
  system["links"]["network"]["tree"]["bandwidth_GBps"] = -3;
  std::ofstream(dir_ / "system-negative.json") << system.dump();
  inputs_ = {"outdir",
             "array.json",
             "null.json",
             "huge-number.json",
             "dup.json",
             "big-model.json",
             "deep.json",
             "weights.safetensors",
             "tokens.bin",
             "fifo",
             "system-no-cores.json",
             "system-negative.json"};
}

void TestCliInput::cleanupTestCase() {
  fs::remove_all(dir_);
}

void TestCliInput::refusedWithOneLine_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QString>("message");
  const QString C = "resources/configs/default.json";
  // Probe 5: a config that never ends.
  QTest::newRow("config /dev/zero")
      << QStringList{"train", "--config", "/dev/zero"}
      << "error: /dev/zero: not a regular file (a device, FIFO or socket), not a config file\n";
  QTest::newRow("config FIFO") << QStringList{"train", "--config", path("fifo")}
                               << "error: " + path("fifo") +
                                      ": not a regular file (a device, FIFO or socket), not a "
                                      "config file\n";
  // Probe 3: 60k levels on the command line and in the file.
  QTest::newRow("deep override")
      << QStringList{"train", "train_iters=" + QString(60000, '[') + QString(60000, ']')}
      << "error: config: nested deeper than 32 levels at 'train_iters[0][0][0][0][0][0][0][0][0]"
         "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]'\n";
  QTest::newRow("deep file") << QStringList{"train", "--config", path("deep.json")}
                             << "error: " + path("deep.json") +
                                    ": nested deeper than 32 levels at 'train_iters[0][0][0][0][0]"
                                    "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
                                    "[0][0][0][0][0][0]'\n";
  // Probe 7: numbers out of range, non-object configs, /proc, argument errors.
  QTest::newRow("1e400 in file") << QStringList{"train", "--config", path("huge-number.json")}
                                 << "error: " + path("huge-number.json") +
                                        ": number out of range (beyond +-1.8e308) at "
                                        "'train_iters'\n";
  QTest::newRow("1e400 override")
      << QStringList{"train", "--config", C, "optimizer.params.lr=1e400"}
      << "error: config: number out of range (beyond +-1.8e308) at 'optimizer.params.lr'\n";
  QTest::newRow("array config") << QStringList{"train", "--config", path("array.json")}
                                << "error: config: the file must be a JSON object, got an array\n";
  QTest::newRow("null config") << QStringList{"train", "--config", path("null.json")}
                               << "error: config: the file must be a JSON object, got null\n";
  QTest::newRow("duplicate key") << QStringList{"train", "--config", path("dup.json")}
                                 << "error: " + path("dup.json") +
                                        ": duplicate key 'train_iters'\n";
  QTest::newRow("seed 2^64-1") << QStringList{"train", "--config", C, "seed=18446744073709551615"}
                               << "error: config: seed = 18446744073709551615 is out of range; "
                                  "allowed 0..9223372036854775807\n";
  QTest::newRow("long echo") << QStringList{"train", "--config", C,
                                            "data.type=" + QString(100000, 'x')}
                             << "error: config: data.type = \"" + QString(64, 'x') +
                                    "... (100000 bytes)\" is not supported; allowed: text, idx\n";
  QTest::newRow("unknown option")
      << QStringList{"train", "--bogus"}
      << "error: The following argument was not expected: --bogus (see " PARASCOPE_CLI " --help)\n";
  // Control characters in what a message quotes reach the terminal escaped (C0 and C1 alike).
  QTest::newRow("escape in a key")
      << QStringList{"train", "--config", C, QString::fromUtf8("model.\x1b[31mfoo=1")}
      << "^error: config: unknown key 'model.\\x1b[31mfoo'; allowed here: ";
  QTest::newRow("C1 control in a key")
      << QStringList{"train", "--config", C,
                     QString::fromUtf8("model.\xc2\x9b"
                                       "foo=1")}
      << "^error: config: unknown key 'model.\\xc2\\x9bfoo'; allowed here: ";
  // A FIFO as a weights file is refused before it is opened (opening waits for a writer).
  QTest::newRow("grad --weights FIFO")
      << QStringList{"grad",
                     "--config",
                     C,
                     "--weights",
                     path("fifo"),
                     "--tokens",
                     path("tokens.bin"),
                     "--out",
                     path("outdir/g.safetensors")}
      << "error: " + path("fifo") + ": is a device, FIFO or socket, not a safetensors file\n";
  // An empty value is refused, never taken for the option's absence.
  for (const char* option : {"--save", "--load", "--resume", "--trace", "--config"}) {
    QTest::newRow(qPrintable(QString("empty ") + option))
        << QStringList{"train", option, ""}
        << QString("error: ") + option +
               ": the value is empty; give one (see " PARASCOPE_CLI " --help)\n";
  }
  QTest::newRow("empty grad --out")
      << QStringList{"grad", "--config", C, "--weights", "w", "--tokens", "t", "--out", ""}
      << "error: --out: the value is empty; give one (see " PARASCOPE_CLI " --help)\n";
  // Probe 5: 4096 in-process ranks.
  QTest::newRow("4096 threads")
      << QStringList{"train", "--config", C, "data_parallel_size=4096"}
      << "error: config: tensor_model_parallel_size x data_parallel_size x "
         "pipeline_model_parallel_size = 4096 ranks, more than the 256 in-process ranks the "
         "threads backend runs; valid: at most 256, or more processes under mpirun\n";
  // Predictions read the same keys as train and a strictly checked hardware description.
  QTest::newRow("simulate strategy that does not divide")
      << QStringList{"simulate", "--config", C, "tensor_model_parallel_size=3"}
      << "error: config: model.num_attention_heads (4) must be divisible by "
         "tensor_model_parallel_size (3)\n";
  QTest::newRow("simulate system key missing")
      << QStringList{"simulate", "--system", path("system-no-cores.json")}
      << "error: system " + path("system-no-cores.json") + ": device.cores: is missing\n";
  QTest::newRow("simulate system key negative")
      << QStringList{"simulate", "--system", path("system-negative.json")}
      << "error: system " + path("system-negative.json") +
             ": links.network.tree.bandwidth_GBps: must be a non-negative number, not -3\n";
  // The search: an unknown system, degrees that cannot divide the GPUs, a model that fits
  // nowhere, a missing GPU count.
  QTest::newRow("plan unknown system")
      << QStringList{"plan", "--config", C, "--system", "a100", "--gpus", "8"}
      << "error: --system 'a100' is neither a preset nor a description file; valid: "
         "a100-80gb, h100-80gb, this-machine, or a JSON file in the schema of "
         "docs/planner.md\n";
  QTest::newRow("plan degrees that do not divide")
      << QStringList{"plan",      "--config", C,   "--system",
                     "a100-80gb", "--gpus",   "6", "tensor_model_parallel_size=4"}
      << "error: plan: no strategy for 6 GPUs: tensor x context x pipeline size must divide the "
         "GPUs, and the data-parallel size the global batch of 8 (fixed: "
         "tensor_model_parallel_size=4)\n";
  QTest::newRow("plan model that fits nowhere") << QStringList{"plan",
                                                               "--config",
                                                               C,
                                                               "--system",
                                                               "a100-80gb",
                                                               "--gpus",
                                                               "1",
                                                               "model.hidden_size=16384",
                                                               "model.num_layers=64",
                                                               "model.num_attention_heads=128"}
                                                << "^error: plan: none of the ";
  QTest::newRow("plan without --gpus")
      << QStringList{"plan", "--config", C, "--system", "a100-80gb"}
      << "error: plan: --gpus is required: the GPUs to plan for, 1 or more\n";
  // Shapes the planner models and the engine does not train: refused by name before a run.
  QTest::newRow("train SwiGLU")
      << QStringList{"train", "--config", C, "model.gated_linear_unit=true"}
      << "error: config: model.gated_linear_unit = true (SwiGLU) is modeled by the planner "
         "(parascope-cli plan and simulate) but not trained by this engine; valid for training: "
         "false\n";
  QTest::newRow("train context parallelism")
      << QStringList{"train", "--config", C, "context_parallel_size=2"}
      << "error: config: context_parallel_size = 2 (context parallelism) is modeled by the "
         "planner (parascope-cli plan and simulate) but not trained by this engine; valid for "
         "training: unset, or 1\n";
  QTest::newRow("train ffn_hidden_size")
      << QStringList{"train", "--config", C, "model.ffn_hidden_size=700"}
      << "error: config: model.ffn_hidden_size = 700 (an MLP width other than model.mlp_ratio x "
         "model.hidden_size) is modeled by the planner (parascope-cli plan and simulate) but not "
         "trained by this engine; valid for training: unset, or 1024\n";
  // Probe 5: a model that cannot fit, refused with the estimate before allocating (grad).
  QTest::newRow("grad big model")
      << QStringList{"grad",
                     "--config",
                     path("big-model.json"),
                     "--weights",
                     path("weights.safetensors"),
                     "--tokens",
                     path("tokens.bin"),
                     "--out",
                     path("outdir/g.safetensors")}
      << "^error: memory: the run needs about 800.6 GiB (one rank: parameters 192.0 GiB, "
         "gradients 192.0 GiB, optimizer state 384.1 GiB, activations 32.4 GiB, communication "
         "buffers 0 bytes, workspace 8.0 KiB, data 0 bytes; largest: optimizer state), more "
         "than the ";
  QTest::newRow("train big model")
      << QStringList{"train", "--config", C, "model.hidden_size=8192", "model.num_layers=64"}
      << "^error: memory: the run needs about ";
  QTest::newRow("data.path /proc/self")
      << QStringList{"train", "--config", C, "data.path=/proc/self"}
      << "^error: data.path: '/proc/self' ";
  // Probes 4, 6 and 9: outputs that are directories, devices, missing directories, refused
  // before training.
  QTest::newRow("train --trace /dev/null")
      << QStringList{"train", "--config", C, "train_iters=2", "--trace", "/dev/null"}
      << "error: --trace '/dev/null': is a device, FIFO or socket, not a regular file; name a "
         "regular file\n";
  QTest::newRow("train --trace directory")
      << QStringList{"train", "--config", C, "train_iters=2", "--trace", path("outdir")}
      << "error: --trace '" + path("outdir") + "': is a directory; name a file inside it\n";
  QTest::newRow("save_weights missing dir")
      << QStringList{"train", "--config", C, "train_iters=2",
                     "save_weights=" + path("nope/w.safetensors")}
      << "error: save_weights '" + path("nope/w.safetensors") + "': directory '" + path("nope") +
             "' does not exist; create it first\n";
  QTest::newRow("grad --out directory")
      << QStringList{"grad",
                     "--config",
                     C,
                     "--weights",
                     path("weights.safetensors"),
                     "--tokens",
                     path("tokens.bin"),
                     "--out",
                     path("outdir")}
      << "error: --out '" + path("outdir") + "': is a directory; name a file inside it\n";
  QTest::newRow("grad --out missing dir")
      << QStringList{"grad",
                     "--config",
                     C,
                     "--weights",
                     path("weights.safetensors"),
                     "--tokens",
                     path("tokens.bin"),
                     "--out",
                     path("nope/g.safetensors")}
      << "error: --out '" + path("nope/g.safetensors") + "': directory '" + path("nope") +
             "' does not exist; create it first\n";
  QTest::newRow("convert -o directory")
      << QStringList{"convert", path("missing-trace.json"), "-o", path("outdir")}
      << "error: -o '" + path("outdir") + "': is a directory; name a file inside it\n";
}

void TestCliInput::refusedWithOneLine() {
  QFETCH(QStringList, args);
  QFETCH(QString, message);
  const Result r = run(args);
  QCOMPARE(r.code, 2);
  QCOMPARE(r.err.count('\n'), 1);
  if (message.startsWith('^')) {  // a prefix: the rest depends on this machine or its files
    QVERIFY2(r.err.startsWith(message.mid(1)), qPrintable(r.err));
  } else {
    QCOMPARE(r.err, message);
  }
  QVERIFY2(!r.out.contains("step"), qPrintable(r.out));  // refused before training
  QCOMPARE(leftovers(), QStringList());
  QVERIFY(fs::is_empty(dir_ / "outdir"));
}

// Probe 4: --out /dev/null or a FIFO is refused; the node stays what it was.
void TestCliInput::outputsToSpecialFilesAreRefusedUntouched() {
  for (const QString& target : {QString("/dev/null"), path("fifo")}) {
    const Result r =
        run({"grad", "--config", "resources/configs/default.json", "--weights",
             path("weights.safetensors"), "--tokens", path("tokens.bin"), "--out", target});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "error: --out '" + target +
                        "': is a device, FIFO or socket, not a regular file; name a regular "
                        "file\n");
  }
  QVERIFY(fs::is_character_file("/dev/null"));
  QVERIFY(fs::is_fifo(dir_ / "fifo"));
  QCOMPARE(leftovers(), QStringList());
}

// No output may be one of the command's inputs, by any name (a hard link included), or lie
// inside a checkpoint it reads; refused before any work, the input untouched.
void TestCliInput::outputsNeverReplaceInputs() {
  const QString weights = path("weights.safetensors");
  const QString C = "resources/configs/default.json";
  fs::create_hard_link(dir_ / "weights.safetensors", dir_ / "outdir" / "weights-link");
  Result r = run({"grad", "--config", C, "--weights", weights, "--tokens", path("tokens.bin"),
                  "--out", path("outdir/weights-link")});
  QCOMPARE(r.code, 2);
  QCOMPARE(r.err, "error: --out '" + path("outdir/weights-link") + "': is --weights '" + weights +
                      "', which this command reads; name another file\n");
  fs::remove(dir_ / "outdir" / "weights-link");

  r = run(
      {"checkpoint", "export", path("outdir"), "--out", path("outdir/../outdir/w.safetensors")});
  QCOMPARE(r.code, 2);
  QCOMPARE(r.err, "error: --out '" + path("outdir/../outdir/w.safetensors") +
                      "': is inside the checkpoint '" + path("outdir") +
                      "', which this command reads; write it elsewhere\n");

  r = run({"convert", path("array.json"), "-o", path("array.json")});
  QCOMPARE(r.code, 2);
  QCOMPARE(r.err, "error: -o '" + path("array.json") + "': is the input trace '" +
                      path("array.json") + "', which this command reads; name another file\n");
  QCOMPARE(QString::fromStdString(std::string(
               std::istreambuf_iterator<char>(std::ifstream(dir_ / "array.json").rdbuf()), {})),
           QString("[1, 2]"));
  QCOMPARE(leftovers(), QStringList());
  QVERIFY(fs::is_empty(dir_ / "outdir"));
}

// A benchmark's --dir is where it makes a directory of its own; at the end that directory is
// gone and everything else in --dir is as it was (a link named like its files included).
void TestCliInput::benchmarkRemovesOnlyItsOwnScratch() {
  const fs::path bench = dir_ / "outdir" / "bench";
  fs::create_directories(bench);
  std::ofstream(bench / "keep.txt") << "mine";
  std::ofstream(dir_ / "outdir" / "victim") << "precious";
  fs::create_symlink(dir_ / "outdir" / "victim", bench / "plain.bin");
  const Result r =
      run({"bench", "switch", "--rounds", "1", "--dir", QString::fromStdString(bench.string()),
           "model.num_layers=2", "model.hidden_size=32", "model.num_attention_heads=2",
           "model.context_length=16"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(bench)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  QCOMPARE(names, (std::vector<std::string>{"keep.txt", "plain.bin"}));
  QVERIFY(fs::is_symlink(bench / "plain.bin"));
  std::string victim;
  std::getline(std::ifstream(dir_ / "outdir" / "victim"), victim);
  QCOMPARE(victim, std::string("precious"));
  fs::remove_all(bench);
  fs::remove(dir_ / "outdir" / "victim");
}

void TestCliInput::stopSignalEndsTrainingCleanly_data() {
  QTest::addColumn<int>("signal");
  QTest::addColumn<int>("status");
  QTest::newRow("SIGINT") << SIGINT << 130;
  QTest::newRow("SIGTERM") << SIGTERM << 143;
}

// Probe 6: SIGINT / SIGTERM during a traced run: exit 130 / 143, no trace, no temporary.
void TestCliInput::stopSignalEndsTrainingCleanly() {
  QFETCH(int, signal);
  QFETCH(int, status);
  QProcess p;
  p.setWorkingDirectory(PARASCOPE_SOURCE_DIR);
  p.start(PARASCOPE_CLI,
          {"train", "--config", "resources/configs/default.json", "train_iters=100000",
           "eval_interval=0", "model.num_layers=1", "--trace", path("outdir/run.json.gz")});
  QVERIFY(p.waitForStarted());
  // Once training has printed its first step the run is inside its loop (QTRY evaluates the
  // condition once more after it holds, hence the accumulated output). A run that ends before
  // (its data missing, say) fails the test at once with its message.
  QByteArray out;
  QTRY_VERIFY_WITH_TIMEOUT(
      // NOLINTNEXTLINE(bugprone-assignment-in-if-condition): QTRY re-reads the output each try
      (out += p.readAllStandardOutput()).contains("/100000  loss") ||
          p.state() == QProcess::NotRunning,
      60000);
  QVERIFY2(out.contains("/100000  loss"), p.readAllStandardError().constData());
  ::kill(static_cast<pid_t>(p.processId()), signal);
  QVERIFY(p.waitForFinished(30000));
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QCOMPARE(p.exitCode(), status);
  QVERIFY(fs::is_empty(dir_ / "outdir"));
}

QTEST_GUILESS_MAIN(TestCliInput)
#include "test_cli_input.moc"
