// Hostile input against the engine's mechanisms (issue 16): bounded JSON (depth, size,
// duplicates, numbers, echoed values), the config document, safetensors headers, output files
// (special targets, full disk, stop signals), data headers, the memory estimate, the thread
// limit and configuration agreement between ranks. Each case names the probe it stands for.
#include <QtTest>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/comm/launch.h"
#include "core/common/bounded_json.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/stop_signal.h"
#include "core/config/config.h"
#include "core/config/config_agreement.h"
#include "core/config/memory_estimate.h"
#include "core/data/idx_dataset.h"
#include "core/data/text_dataset.h"
#include "core/io/safetensors.h"

using namespace parascope;
namespace fs = std::filesystem;

namespace {

template <class F>
QString userErrorOf(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return QString::fromStdString(e.what());
  }
  return "(no UserError)";
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// A safetensors file with the given header text and `data` bytes after it.
void writeSafetensorsRaw(const fs::path& p, const std::string& header, std::size_t data) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  write(p, bytes + header + std::string(data, '\0'));
}

std::size_t filesIn(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

}  // namespace

class TestHostileInput : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void cleanupTestCase();
  void deepValuesAreRefusedWithoutRecursion();
  void duplicateKeysAndNumbersOutOfRangeNameTheKey();
  void configMustBeAnObjectAndAFile();
  void echoedValuesAreCut();
  void safetensorsHeadersAreBounded();
  void outputsNeverReplaceSpecialFiles();
  void outputsLeaveNothingBehindOnFailure();
  void idxHeadersDoNotDriveAllocation();
  void textCorpusUnderProcIsAUserError();
  void memoryEstimateRefusesWhatCannotFit();
  void threadRanksAreLimited();
  void ranksThatDisagreeAreRefusedByKey();

 private:
  fs::path dir_;
};

void TestHostileInput::initTestCase() {
  dir_ = fs::temp_directory_path() / ("parascope-test-hostile-" + std::to_string(::getpid()));
  fs::create_directories(dir_);
}

void TestHostileInput::cleanupTestCase() {
  fs::remove_all(dir_);
}

// Probe 3: a value nested 60k levels on the command line or in the file.
void TestHostileInput::deepValuesAreRefusedWithoutRecursion() {
  nlohmann::json doc = nlohmann::json::object();
  QCOMPARE(userErrorOf([&] { applyOverride(doc, "train_iters=" + nested(60000)); }),
           QString("config: nested deeper than 32 levels at 'train_iters[0][0][0][0][0][0][0][0]"
                   "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]'"));
  write(dir_ / "deep.json", "{\"train_iters\": " + nested(60000) + "}");
  QVERIFY(userErrorOf([&] { readJsonFile((dir_ / "deep.json").string()); })
              .endsWith(": nested deeper than 32 levels at 'train_iters[0][0][0][0][0][0][0][0]"
                        "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]'"));
  // Unbalanced and deep: refused as deep before it is found unbalanced.
  QVERIFY(userErrorOf([&] {
            applyOverride(doc, "train_iters=" + std::string(60000, '['));
          }).startsWith("config: nested deeper than 32 levels at 'train_iters[0]"));
  // Not JSON: a string, refused by type with a short echo.
  applyOverride(doc, "train_iters=" + std::string(20, '[') + std::string(1000, 'x'));
  const QString message = userErrorOf([&] { parseTrainConfig(doc); });
  QCOMPARE(message, "config: train_iters must be an integer in 1..1073741824, got a string (\"" +
                        QString(20, '[') + QString(43, 'x') + "...)");
  QVERIFY2(message.size() < 200, qPrintable(message));
  // Describing any value costs its prefix only, however deep.
  nlohmann::json deep = nlohmann::json::array();
  nlohmann::json* at = &deep;
  for (int i = 0; i < 100000; ++i) at = &at->emplace_back(nlohmann::json::array());
  QCOMPARE(QString::fromStdString(describeJson(deep, 8)), QString("[[[[[[[[..."));
}

// Minor probes: duplicate keys, 1e400, seed 2^64-1.
void TestHostileInput::duplicateKeysAndNumbersOutOfRangeNameTheKey() {
  write(dir_ / "dup.json", R"({"model": {"num_layers": 2, "num_layers": 3}})");
  QCOMPARE(
      userErrorOf([&] { readJsonFile((dir_ / "dup.json").string()); }),
      QString::fromStdString((dir_ / "dup.json").string()) + ": duplicate key 'model.num_layers'");
  write(dir_ / "huge.json", R"({"optimizer": {"params": {"lr": 1e400}}})");
  QCOMPARE(userErrorOf([&] { readJsonFile((dir_ / "huge.json").string()); }),
           QString::fromStdString((dir_ / "huge.json").string()) +
               ": number out of range (beyond +-1.8e308) at 'optimizer.params.lr'");
  nlohmann::json doc = nlohmann::json::object();
  QCOMPARE(userErrorOf([&] { applyOverride(doc, "gradient_clipping=1e400"); }),
           QString("config: number out of range (beyond +-1.8e308) at 'gradient_clipping'"));
  applyOverride(doc, "seed=18446744073709551615");
  QCOMPARE(userErrorOf([&] { parseTrainConfig(doc); }),
           QString("config: seed = 18446744073709551615 is out of range; allowed "
                   "0..9223372036854775807"));
}

// Probes 5 and 7: /dev/zero, a directory, a JSON array or null as the config.
void TestHostileInput::configMustBeAnObjectAndAFile() {
  QCOMPARE(userErrorOf([] { readJsonFile("/dev/zero"); }),
           QString("/dev/zero: not a regular file (a device, FIFO or socket), not a config file"));
  QCOMPARE(userErrorOf([&] { readJsonFile(dir_.string()); }),
           QString::fromStdString(dir_.string()) + ": is a directory, not a config file");
  write(dir_ / "big.json", "{\"a\": \"" + std::string(2 << 20, 'x') + "\"}");
  QCOMPARE(userErrorOf([&] { readJsonFile((dir_ / "big.json").string()); }),
           QString::fromStdString((dir_ / "big.json").string()) +
               ": 2097161 bytes, more than the 1048576-byte limit for a config file");
  write(dir_ / "array.json", "[1, 2]");
  QCOMPARE(userErrorOf([&] { readJsonFile((dir_ / "array.json").string()); }),
           QString("config: the file must be a JSON object, got an array"));
  write(dir_ / "null.json", "null");
  QCOMPARE(userErrorOf([&] { readJsonFile((dir_ / "null.json").string()); }),
           QString("config: the file must be a JSON object, got null"));
  const fs::path fifo = dir_ / "fifo.json";
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  QCOMPARE(userErrorOf([&] { readJsonFile(fifo.string()); }),  // never blocks for a writer
           QString::fromStdString(fifo.string()) +
               ": not a regular file (a device, FIFO or socket), not a config file");
  fs::remove(fifo);
}

// Probe 7: a 50 MB value echoed in full.
void TestHostileInput::echoedValuesAreCut() {
  nlohmann::json doc = nlohmann::json::object();
  applyOverride(doc, "data.type=\"" + std::string(1000, 'q') + "\"");
  const QString message = userErrorOf([&] { parseTrainConfig(doc); });
  QCOMPARE(message, "config: data.type = \"" + QString(64, 'q') +
                        "... (1000 bytes)\" is not supported; allowed: text, idx");
  nlohmann::json big = nlohmann::json::object();
  big["model"] = nlohmann::json::object();
  big["model"]["num_layers"] = std::vector<int>(5'000'000, 7);
  QVERIFY(userErrorOf([&] { parseTrainConfig(big); }).size() < 200);
}

// Probes 3 and minor: a shape nested 100k levels, duplicate names, overlapping offsets, a shape
// whose product overflows.
void TestHostileInput::safetensorsHeadersAreBounded() {
  const fs::path f = dir_ / "w.safetensors";
  writeSafetensorsRaw(
      f, R"({"a": {"dtype": "F32", "shape": )" + nested(100000) + R"(, "data_offsets": [0, 4]}})",
      4);
  QCOMPARE(userErrorOf([&] { readSafetensors(f.string()); }),
           QString::fromStdString(f.string()) +
               ": header: nested deeper than 8 levels at 'a.shape[0][0][0][0][0][0]'");
  writeSafetensorsRaw(f,
                      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                      R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                      8);
  QCOMPARE(userErrorOf([&] { readSafetensors(f.string()); }),
           QString::fromStdString(f.string()) + ": header: duplicate key 'a'");
  writeSafetensorsRaw(f,
                      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                      R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                      12);
  QCOMPARE(userErrorOf([&] { readSafetensors(f.string()); }),
           QString::fromStdString(f.string()) +
               ": tensors 'a' and 'b' overlap in the data section (data_offsets [0, 8) and [4, "
               "12))");
  writeSafetensorsRaw(
      f, R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})",
      4);
  QCOMPARE(userErrorOf([&] { readSafetensors(f.string()); }),
           QString::fromStdString(f.string()) + ": tensor 'a' is too large");
  bool refused = false;
  try {
    shapeNumel({std::int64_t{1} << 32, std::int64_t{1} << 32});
  } catch (const std::length_error&) {
    refused = true;
  }
  QVERIFY(refused);
}

// Probes 4 and 9: a device node, a directory, a FIFO, a symbolic link, a missing directory.
void TestHostileInput::outputsNeverReplaceSpecialFiles() {
  const fs::path dir = dir_ / "special";
  fs::create_directories(dir);
  QCOMPARE(userErrorOf([] { checkOutputPath("/dev/null", "--trace"); }),
           QString("--trace '/dev/null': is a device, FIFO or socket, not a regular file; name a "
                   "regular file"));
  QCOMPARE(
      userErrorOf([&] { checkOutputPath(dir_.string(), "-o"); }),
      "-o '" + QString::fromStdString(dir_.string()) + "': is a directory; name a file inside it");
  const fs::path fifo = dir / "out.fifo";
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  QVERIFY(userErrorOf([&] {
            OutputFile f(fifo.string(), "--out");
          }).endsWith("not a regular file; name a regular file"));
  QVERIFY(fs::is_fifo(fifo));
  fs::remove(fifo);
  write(dir / "target", "x");
  fs::create_symlink(dir / "target", dir / "link");
  QVERIFY(userErrorOf([&] {
            checkOutputPath((dir / "link").string(), "save_weights");
          }).endsWith("is a symbolic link; name the file it points to"));
  fs::remove(dir / "link");
  fs::remove(dir / "target");
  QCOMPARE(userErrorOf([&] {
             checkOutputPath((dir / "missing" / "w.safetensors").string(), "save_weights");
           }),
           "save_weights '" + QString::fromStdString((dir / "missing" / "w.safetensors").string()) +
               "': directory '" + QString::fromStdString((dir / "missing").string()) +
               "' does not exist; create it first");
  QCOMPARE(filesIn(dir), std::size_t{0});
}

// Probe 6: a full disk, a target that became a directory during the run, a stop signal.
void TestHostileInput::outputsLeaveNothingBehindOnFailure() {
  const fs::path dir = dir_ / "failing";
  fs::create_directories(dir);
  const fs::path out = dir / "grads.safetensors";
  {
    // RLIMIT_FSIZE makes write() fail with EFBIG as a full disk fails with ENOSPC.
    signal(SIGXFSZ, SIG_IGN);
    rlimit old{};
    getrlimit(RLIMIT_FSIZE, &old);
    rlimit small = old;
    small.rlim_cur = 4096;
    setrlimit(RLIMIT_FSIZE, &small);
    const QString message = userErrorOf([&] {
      OutputFile f(out.string(), "--out");
      const std::string block(10000, 'x');
      f.write(block.data(), block.size());
      f.commit();
    });
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_DFL);
    QCOMPARE(message,
             "--out '" + QString::fromStdString(out.string()) + "': write failed: File too large");
    QCOMPARE(filesIn(dir), std::size_t{0});
  }
  {
    OutputFile f(out.string(), "--out");
    f.write("abc", 3);
    fs::create_directory(out);  // appears while the file is written
    QCOMPARE(userErrorOf([&] { f.commit(); }), "--out '" + QString::fromStdString(out.string()) +
                                                   "': is a directory; name a file inside it");
    fs::remove(out);
    QCOMPARE(filesIn(dir), std::size_t{0});
  }
  {
    bool interrupted = false;
    try {
      OutputFile f(out.string(), "--out");
      f.write("abc", 3);
      setPendingStopSignal(SIGTERM);
      f.write("def", 3);
    } catch (const Interrupted& e) {
      interrupted = e.exitCode() == 143;
    }
    setPendingStopSignal(0);
    QVERIFY(interrupted);
    QCOMPARE(filesIn(dir), std::size_t{0});
  }
  {
    // A real SIGINT is recorded, not fatal; the next write stops.
    installStopSignalHandlers();
    ::raise(SIGINT);
    QCOMPARE(pendingStopSignal(), SIGINT);
    bool stopped = false;
    try {
      OutputFile f(out.string(), "--out");
      f.write("abc", 3);
    } catch (const Interrupted& e) {
      stopped = e.exitCode() == 130;
    }
    setPendingStopSignal(0);
    signal(SIGINT, SIG_DFL);
    QVERIFY(stopped);
    QCOMPARE(filesIn(dir), std::size_t{0});
  }
  OutputFile ok(out.string(), "--out");
  ok.write("abc", 3);
  ok.commit();
  QCOMPARE(fs::file_size(out), std::uintmax_t{3});
  QCOMPARE(filesIn(dir), std::size_t{1});
  fs::remove(out);
}

// Probe 5: an IDX header claiming 2^26 images of 10 x 10 (6.7 GB) in a 1 KB file.
void TestHostileInput::idxHeadersDoNotDriveAllocation() {
  const fs::path f = dir_ / "claims-idx3-ubyte";
  std::string bytes = {0, 0, 8, 3, 4, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 10};
  write(f, bytes + std::string(1000, '\1'));
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  QCOMPARE(userErrorOf([&] { readIdx(f.string(), 3); }),
           QString::fromStdString(f.string()) + ": truncated: the file ends inside the data");
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  QVERIFY2(after.ru_maxrss - before.ru_maxrss < 200 * 1024,
           qPrintable(QString::number(after.ru_maxrss - before.ru_maxrss) + " KiB"));
  fs::remove(f);
}

// Probe 7: data.path=/proc/self.
void TestHostileInput::textCorpusUnderProcIsAUserError() {
  const QString message = userErrorOf([] { TextDataset("/proc/self", 16, 0.1, 1); });
  QVERIFY2(message.startsWith("data.path: '/proc/self'"), qPrintable(message));
}

// Probe 5: hidden_size 8192 x 64 layers is refused with the estimate before allocating.
void TestHostileInput::memoryEstimateRefusesWhatCannotFit() {
  nlohmann::json doc = nlohmann::json::object();
  applyOverride(doc, "model.hidden_size=8192");
  applyOverride(doc, "model.num_layers=64");
  const TrainConfig big = parseTrainConfig(doc);
  const MemoryEstimate e = estimateMemory(big, 0, 1);
  QCOMPARE(QString::fromStdString(e.largest().name), QString("optimizer state"));
  QCOMPARE(userErrorOf([&] { checkMemory(e, 16.0 * (1 << 30)); }),
           QString("memory: the run needs about 802.5 GiB (one rank: parameters 192.0 GiB, "
                   "gradients 192.0 GiB, optimizer state 384.1 GiB, activations 34.3 GiB, data "
                   "0 bytes; largest: optimizer state), more than the 16.0 GiB available; use a "
                   "smaller model or micro-batch, more ranks, a higher ZeRO stage or recompute"));
  // ZeRO-3 over 8 ranks shards the optimizer state; parameters and gradients are a shard plus
  // the whole buckets around the running layer (two 8192-wide blocks of 805M parameters each,
  // and two buckets past them, four for gradients: 6.5M elements, which a bucket can exceed by
  // its last parameter, at most the MLP's 268M).
  nlohmann::json sharded = doc;
  applyOverride(sharded, "data_parallel_size=8");
  applyOverride(sharded, "zero_optimization.stage=3");
  const MemoryEstimate z = estimateMemory(parseTrainConfig(sharded), 0, 8);
  QCOMPARE(z.items[2].bytes * 8, e.items[2].bytes);
  const double C = 8192, block = 12 * C * C + 13 * C, bucket = 6553600 + 4 * C * C;
  QCOMPARE(z.items[0].bytes, e.items[0].bytes / 8 + 4 * (2 * block + 2 * bucket));
  QCOMPARE(z.items[1].bytes, e.items[1].bytes / 8 + 4 * (2 * block + 4 * bucket));
  // In pipeline programs ZeRO-2 / 3 also hold the stage's whole gradients until the step's one
  // reduce-scatter: the shard plus the full size.
  nlohmann::json piped = sharded;
  applyOverride(piped, "pipeline_schedule=1f1b");
  const MemoryEstimate pz = estimateMemory(parseTrainConfig(piped), 0, 8);
  QCOMPARE(pz.items[1].bytes, e.items[1].bytes + e.items[1].bytes / 8);
  // The shipped config fits anywhere this suite runs.
  const TrainConfig small = parseTrainConfig(
      readJsonFile(std::string(PARASCOPE_SOURCE_DIR) + "/resources/configs/default.json"));
  QVERIFY(estimateMemory(small, 1e6, 1).totalBytes() < 256.0 * (1 << 20));
  checkMemory(estimateMemory(small, 1e6, 1), availableMemoryBytes());
}

// Probe 5: data_parallel_size=4096 on threads.
void TestHostileInput::threadRanksAreLimited() {
  nlohmann::json doc = nlohmann::json::object();
  applyOverride(doc, "data_parallel_size=4096");
  QCOMPARE(userErrorOf([&] { parseTrainConfig(doc); }),
           QString("config: tensor_model_parallel_size x data_parallel_size x "
                   "pipeline_model_parallel_size = 4096 ranks, more than the 256 in-process "
                   "ranks the threads backend runs; valid: at most 256, or more processes under "
                   "mpirun"));
  QCOMPARE(parseTrainConfig(doc, 4096).parallel.data, 4096);  // a world from mpirun may be large
}

// Probe 2 on in-process ranks: rank 1 has another train_iters; every rank refuses by name.
void TestHostileInput::ranksThatDisagreeAreRefusedByKey() {
  const nlohmann::json base =
      nlohmann::json::parse(R"({"train_iters": 3, "model": {"num_layers": 2}})");
  std::vector<QString> messages(3);
  bool threw = false;
  try {
    runInProcess(3, [&](Communicator& world) {
      nlohmann::json doc = base;
      if (world.rank() == 1) doc["train_iters"] = 5;
      messages[static_cast<std::size_t>(world.rank())] =
          userErrorOf([&] { agreeOnSettings(world, canonicalSettings(doc)); });
    });
  } catch (const std::exception&) {
    threw = true;
  }
  QVERIFY(!threw);
  for (const QString& m : messages) {
    QCOMPARE(m, QString("config: ranks disagree on 'train_iters': rank 0 has 3, rank 1 has 5; "
                        "every rank must run the same configuration (same file, overrides and "
                        "options)"));
  }
  // Agreeing ranks pass; a key only one rank has is named too.
  runInProcess(2, [&](Communicator& world) { agreeOnSettings(world, canonicalSettings(base)); });
  runInProcess(2, [&](Communicator& world) {
    nlohmann::json doc = base;
    if (world.rank() == 1) doc["model"]["num_layerz"] = 3;
    messages[static_cast<std::size_t>(world.rank())] =
        userErrorOf([&] { agreeOnSettings(world, canonicalSettings(doc)); });
  });
  for (std::size_t r = 0; r < 2; ++r) {
    QCOMPARE(messages[r],
             QString("config: ranks disagree on 'model.num_layerz': rank 0 has unset, rank 1 has "
                     "3; every rank must run the same configuration (same file, overrides and "
                     "options)"));
  }
}

QTEST_GUILESS_MAIN(TestHostileInput)
#include "test_hostile_input.moc"
