// Hostile input against the config (issue 16's probes): bounded JSON (depth, size, duplicates,
// numbers, echoed values), the config document, the memory estimate, the thread limit and
// configuration agreement between ranks. Each case names the probe it stands for.
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
#include "core/config/config.h"
#include "core/config/config_agreement.h"
#include "core/plan/memory_estimate.h"
#include "core/tensor/allocator.h"
#include "tests/input_probes.h"

using namespace parascope;
using parascope::test::nested;
using parascope::test::userErrorOf;
using parascope::test::write;
namespace fs = std::filesystem;

class TestConfigInput : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void cleanupTestCase();
  void deepValuesAreRefusedWithoutRecursion();
  void duplicateKeysAndNumbersOutOfRangeNameTheKey();
  void configMustBeAnObjectAndAFile();
  void echoedValuesAreCut();
  void memoryEstimateRefusesWhatCannotFit();
  void threadRanksAreLimited();
  void ranksThatDisagreeAreRefusedByKey();

 private:
  fs::path dir_;
};

void TestConfigInput::initTestCase() {
  dir_ = fs::temp_directory_path() / ("parascope-test-config-input-" + std::to_string(::getpid()));
  fs::create_directories(dir_);
}

void TestConfigInput::cleanupTestCase() {
  fs::remove_all(dir_);
}

// Probe 3: a value nested 60k levels on the command line or in the file.
void TestConfigInput::deepValuesAreRefusedWithoutRecursion() {
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
void TestConfigInput::duplicateKeysAndNumbersOutOfRangeNameTheKey() {
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
void TestConfigInput::configMustBeAnObjectAndAFile() {
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
void TestConfigInput::echoedValuesAreCut() {
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

// Probe 5: hidden_size 8192 x 64 layers is refused with the estimate before allocating.
void TestConfigInput::memoryEstimateRefusesWhatCannotFit() {
  nlohmann::json doc = nlohmann::json::object();
  applyOverride(doc, "model.hidden_size=8192");
  applyOverride(doc, "model.num_layers=64");
  const TrainConfig big = parseTrainConfig(doc);
  const MemoryEstimate e = estimateMemory(big, 0, 1);
  QCOMPARE(QString::fromStdString(e.largest().name), QString("optimizer state"));
  QCOMPARE(userErrorOf([&] { checkMemory(e, 16.0 * (1 << 30)); }),
           QString("memory: the run needs about 800.6 GiB (one rank: parameters 192.0 GiB, "
                   "gradients 192.0 GiB, optimizer state 384.1 GiB, activations 32.4 GiB, "
                   "communication buffers 0 bytes, workspace 8.0 KiB, data 0 bytes; largest: "
                   "optimizer state), more than the 16.0 GiB available; use a smaller model or "
                   "micro-batch, more ranks, a higher ZeRO stage or recompute"));
  // ZeRO-3 over 8 ranks shards the optimizer state (every bucket a multiple of 8: no padding);
  // parameters and gradients are a shard plus whole buckets of 8192-wide blocks (805M parameters
  // each, in buckets that end with each block). Gathered: the running block alone, since the
  // default stage3_prefetch_bucket_size (5e7 elements) is smaller than the next one, but the
  // head (ln_f and the tied wte, 256 + 128 + 2 rows of C with the embeddings' bucket), which is
  // prefetched while the last block runs. Gradients: the running layer's and of one bucket still
  // reducing, less.
  nlohmann::json sharded = doc;
  applyOverride(sharded, "data_parallel_size=8");
  applyOverride(sharded, "zero_optimization.stage=3");
  const MemoryEstimate z = estimateMemory(parseTrainConfig(sharded), 0, 8);
  const auto item = [](const MemoryEstimate& m, MemoryCategory c) {
    return m.items[static_cast<std::size_t>(c)].bytes;
  };
  QCOMPARE(item(z, MemoryCategory::OptimizerState) * 8, item(e, MemoryCategory::OptimizerState));
  const double shard = item(e, MemoryCategory::Parameter) / 8;
  const double C = 8192, block = 4 * (12 * C * C + 13 * C);
  QCOMPARE(item(z, MemoryCategory::Parameter), shard + block + 4 * (256 + 128 + 2) * C);
  QVERIFY(item(z, MemoryCategory::Gradient) > shard + block);
  QVERIFY(item(z, MemoryCategory::Gradient) < shard + 2 * block);
  // In pipeline programs of several micro-batches ZeRO-2 / 3 also hold the stage's whole
  // gradients until the step's one reduce-scatter: the shard plus the full size.
  nlohmann::json piped = sharded;
  applyOverride(piped, "pipeline_schedule=1f1b");
  applyOverride(piped, "gradient_accumulation_steps=2");
  const MemoryEstimate pz = estimateMemory(parseTrainConfig(piped), 0, 8);
  QCOMPARE(item(pz, MemoryCategory::Gradient),
           item(e, MemoryCategory::Gradient) + item(e, MemoryCategory::Gradient) / 8);
  // The shipped config fits anywhere this suite runs.
  const TrainConfig small = parseTrainConfig(
      readJsonFile(std::string(PARASCOPE_SOURCE_DIR) + "/resources/configs/default.json"));
  QVERIFY(estimateMemory(small, 1e6, 1).totalBytes() < 256.0 * (1 << 20));
  checkMemory(estimateMemory(small, 1e6, 1), availableMemoryBytes());
  // Benchmarks sized by a count (bench trace --events, --bench-timeline --events): refused
  // before any work, saying how many would fit.
  QCOMPARE(userErrorOf([&] {
             checkCountFits("--events", 1e8, 560, 384.0 * (1 << 20), "memory", 20.0 * (1 << 30));
           }),
           QString("--events 100000000: the benchmark needs about 52.5 GiB of memory (560 bytes "
                   "each, plus 384.0 MiB), more than the 20.0 GiB available; at most 37628898 "
                   "fit"));
  checkCountFits("--events", 1e6, 560, 384.0 * (1 << 20), "memory", 20.0 * (1 << 30));
  checkCountFits("--events", 1e12, 128, 0, "disk space", -1);  // unknown: not judged
  // Under ulimit -v each in-process rank's thread reserves its stack, malloc arena and BLAS
  // buffer besides its tracked memory: 64 ranks of the default GPT need more than 4 GiB.
  MemoryEstimate many = estimateMemory(small, 1e6, 64);
  const double tracked = many.totalBytes();
  QCOMPARE(userErrorOf([&] { checkAddressSpace(many, 64, 4.0 * (1 << 30)); }),
           QString::fromStdString("address space: the run needs about " +
                                  formatBytes(tracked + 64 * addressSpacePerRankThread()) + " (" +
                                  formatBytes(tracked) + " of memory and " +
                                  formatBytes(64 * addressSpacePerRankThread()) +
                                  " for 64 rank threads' stacks, malloc "
                                  "arenas and BLAS buffers), more than the 4.0 GiB the "
                                  "address-space limit (ulimit -v) leaves; raise the limit, or "
                                  "use fewer in-process ranks or MPI processes"));
  checkAddressSpace(many, 64, 64.0 * (1 << 30));
  checkAddressSpace(many, 64, -1);  // no limit
  // ZeRO-Offload from GPUs keeps every rank's optimizer shard in the host's memory: 8 ranks of
  // the 8192-wide GPT under ZeRO-2 in bf16 hold 16 bytes per parameter there between them.
  nlohmann::json offloaded = sharded;
  applyOverride(offloaded, "zero_optimization.stage=2");
  applyOverride(offloaded, "bf16.enabled=true");
  applyOverride(offloaded, "zero_optimization.offload_optimizer.device=cpu");
  TrainConfig gpus = parseTrainConfig(offloaded);
  gpus.device = Device{Device::Kind::Cuda, 0};
  const MemoryEstimate host = estimateMemory(gpus, 0, 8);
  QCOMPARE(host.items[static_cast<std::size_t>(MemoryCategory::OptimizerState)].bytes, 0.0);
  QCOMPARE(host.hostBytes * 8, 16 * item(e, MemoryCategory::Parameter) / 4);
  QCOMPARE(
      userErrorOf([&] { checkHostMemory(host, 256.0 * (1 << 30)); }),
      QString::fromStdString(
          "memory: offload_optimizer device cpu keeps about " + formatBytes(host.hostBytes * 8) +
          " of optimizer state and its copies in host memory (8 ranks x " +
          formatBytes(host.hostBytes) +
          "), more than the 256.0 GiB available; use more data-parallel ranks or machines "
          "(each rank keeps its shard), or keep the optimizer on the GPU (offload_optimizer "
          "device none)"));
  checkHostMemory(host, 1024.0 * (1 << 30));
  checkHostMemory(e, 1.0);  // nothing offloaded: nothing in the host's memory to check
}

// Probe 5: data_parallel_size=4096 on threads.
void TestConfigInput::threadRanksAreLimited() {
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
void TestConfigInput::ranksThatDisagreeAreRefusedByKey() {
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

QTEST_GUILESS_MAIN(TestConfigInput)
#include "test_config_input.moc"
