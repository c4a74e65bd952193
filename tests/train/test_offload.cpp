// ZeRO-Infinity's offload to a disk (zero_optimization.offload_optimizer / offload_param device
// nvme): training with the optimizer's shard, ZeRO-3's parameter shard or both swapped to a
// directory equals training with them in memory bit for bit (losses, reduced gradients, final
// parameters) under ZeRO 1-3, data, tensor and pipeline parallelism and mixed precision, with one
// buffer or several and sub-groups that cut parameters apart; the optimizer state and the
// parameters in memory are the swap buffers, as the memory estimate says to the byte; switching
// offload on and off mid-run changes nothing; a run killed in a step resumes from its checkpoint as
// if never killed; the swap files are gone when the run ends, however it ends; each bad setting or
// directory is one message naming the key.
#include <QtTest>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/offload/aio_file.h"
#include "core/plan/memory_estimate.h"
#include "core/session/session.h"
#include "core/tensor/allocator.h"
#include "dp_harness.h"
#include "tests/input_probes.h"

using namespace parascope;
namespace fs = std::filesystem;

namespace {

fs::path swapDirectory() {
  return fs::temp_directory_path() / ("parascope-offload-" + std::to_string(getpid()));
}

std::vector<std::string> split(const QString& list) {
  std::vector<std::string> out;
  for (const QString& s : list.split(' ', Qt::SkipEmptyParts)) out.push_back(s.toStdString());
  return out;
}

// The optimizer's state swapped to `dir`, then `settings` (later keys win; PARAMS: ZeRO-3's
// parameters swapped there too).
std::vector<std::string> offloadTo(const fs::path& dir, const QString& settings) {
  std::vector<std::string> o = {"zero_optimization.offload_optimizer.device=nvme",
                                "zero_optimization.offload_optimizer.nvme_path=" + dir.string()};
  for (const std::string& s : split(settings)) {
    if (s == "PARAMS") {
      o.push_back("zero_optimization.offload_param.device=nvme");
      o.push_back("zero_optimization.offload_param.nvme_path=" + dir.string());
    } else {
      o.push_back(s);
    }
  }
  return o;
}

// How a session of `config` ends: "trained N steps", or the reason it failed.
QString outcomeOf(const TrainConfig& config) {
  Session session(config, {});
  try {
    const FinishedReport f = session.run();
    if (session.error()) return QString::fromStdString(session.error()->reason);
    return QString("trained %1 steps").arg(f.steps);
  } catch (const UserError& e) {
    return e.what();
  }
}

// Memory apart from the host allocator's, as a GPU's is, that the CPU's kernels still reach: a
// run on it takes ZeRO-Offload's path (core/train/sharded_optimizer.h) with the CPU's
// arithmetic. An asynchronous copy reads its source when it is issued and lands only when it is
// finished, so a step that copied gradients before they were final, or read the host's
// gradients or gathered the device's values before finishing their copy, would train on stale
// numbers.
class ApartMemory final : public DeviceMemory {
 public:
  Device device() const override { return Device::cpu(); }
  void* allocate(std::size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void release(void* p, std::size_t) noexcept override { std::free(p); }
  void zero(void* p, std::size_t bytes) override { std::memset(p, 0, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  std::shared_ptr<void> copyAsync(void* dst, const void* src, std::size_t bytes) override {
    ++copies;
    const auto* from = static_cast<const std::byte*>(src);
    return std::make_shared<std::function<void()>>(
        [dst, read = std::vector<std::byte>(from, from + bytes)] {
          std::memcpy(dst, read.data(), read.size());
        });
  }
  void finish(const std::shared_ptr<void>& handle) override {
    if (!handle) return;
    auto& land = *static_cast<std::function<void()>*>(handle.get());
    if (land) land();
    land = nullptr;
  }
  // Page-locking works on whole pages: a range that shared one with another would be refused.
  void pin(void* p, std::size_t bytes) override {
    ++pins;
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    if (reinterpret_cast<std::uintptr_t>(p) % page != 0 || bytes % page != 0) ++partPages;
  }
  void unpin(void*) noexcept override { --pins; }
  static inline std::atomic<long> copies{0}, pins{0}, partPages{0};
};

// Rank 0's record of `steps` steps of `config` on its world of in-process ranks (a pipeline's
// last stage holds the loss: every rank's parameters are merged); `apart`: each rank's memory an
// ApartMemory.
dptest::RunRecord trainAll(const TrainConfig& config, int steps, bool apart = false) {
  std::mutex mutex;
  dptest::RunRecord all;
  runInProcess(config.parallel.worldSize(), [&](Communicator& world) {
    std::optional<Allocator> memory;
    if (apart) memory.emplace(std::make_shared<ApartMemory>());
    const dptest::RunRecord r = dptest::train(config, steps, world, memory ? &*memory : nullptr);
    std::lock_guard lock(mutex);
    if (world.rank() == 0) {
      all.losses = r.losses;
      all.gradients = r.gradients;
    }
    for (const auto& [name, values] : r.parameters) all.parameters[name] = values;
  });
  return all;
}

}  // namespace

class TestOffload : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { fs::create_directories(swapDirectory()); }
  void cleanupTestCase() {
    fs::remove_all(swapDirectory());
    fs::remove(dptest::textFixture());
  }

  void offloadEqualsMemory_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("offload");
    // sub_group_size 1000 cuts the tiny GPT's shards (about 17,000 elements over two data
    // ranks) into 18 sub-groups, most of them across parameter boundaries.
    const QString small = "zero_optimization.sub_group_size=1000";
    QTest::newRow("D1 zero1") << "zero_optimization.stage=1" << small;
    QTest::newRow("D2 zero1, one buffer")
        << "data_parallel_size=2 zero_optimization.stage=1"
        << small + " zero_optimization.offload_optimizer.buffer_count=1";
    QTest::newRow("D2 zero2, two buffers")
        << "data_parallel_size=2 zero_optimization.stage=2"
        << small + " zero_optimization.offload_optimizer.buffer_count=2";
    QTest::newRow("D2 zero3") << "data_parallel_size=2 zero_optimization.stage=3" << small;
    QTest::newRow("D2 zero2, one sub-group")
        << "data_parallel_size=2 zero_optimization.stage=2" << QString();
    QTest::newRow("T2 D2 zero2")
        << "tensor_model_parallel_size=2 data_parallel_size=2 zero_optimization.stage=2"
        << small + " aio.block_size=4096 aio.queue_depth=2";
    QTest::newRow("D2 zero2, three submission queues of depth 2")
        << "data_parallel_size=2 zero_optimization.stage=2"
        << small + " aio.thread_count=3 aio.queue_depth=2 aio.block_size=4096";
    QTest::newRow("P2 D2 zero1 1f1b")
        << "pipeline_model_parallel_size=2 data_parallel_size=2 zero_optimization.stage=1 "
           "gradient_accumulation_steps=4"
        << small + " aio.single_submit=true aio.overlap_events=false";
    QTest::newRow("D2 zero2 bf16")
        << "data_parallel_size=2 zero_optimization.stage=2 bf16.enabled=true" << small;
    QTest::newRow("D2 zero3 fp16 pinned")
        << "data_parallel_size=2 zero_optimization.stage=3 fp16.enabled=true"
        << small + " zero_optimization.offload_optimizer.pin_memory=true";
    // ZeRO-3's parameters swapped too (PARAMS), or alone: read a layer's parts before its
    // gathers, swept at the update; with one buffer nothing overlaps, with two the prefetch of
    // the next layer waits for a free one.
    QTest::newRow("D2 zero3, parameters too")
        << "data_parallel_size=2 zero_optimization.stage=3" << small + " PARAMS";
    QTest::newRow("D2 zero3, parameters alone, one buffer")
        << "data_parallel_size=2 zero_optimization.stage=3"
        << "PARAMS zero_optimization.offload_optimizer.device=none "
           "zero_optimization.offload_param.buffer_count=1";
    QTest::newRow("D2 zero3 bf16, parameters, two buffers")
        << "data_parallel_size=2 zero_optimization.stage=3 bf16.enabled=true"
        << small + " PARAMS zero_optimization.offload_param.buffer_count=2";
    QTest::newRow("D2 zero3 fp16, parameters alone, no prefetch")
        << "data_parallel_size=2 zero_optimization.stage=3 fp16.enabled=true "
           "zero_optimization.stage3_prefetch_bucket_size=0"
        << "PARAMS zero_optimization.offload_optimizer.device=none";
    QTest::newRow("T2 D2 zero3, parameters")
        << "tensor_model_parallel_size=2 data_parallel_size=2 zero_optimization.stage=3"
        << small + " PARAMS aio.block_size=4096 aio.queue_depth=2";
    QTest::newRow("P2 D2 zero3 1f1b, parameters")
        << "pipeline_model_parallel_size=2 data_parallel_size=2 zero_optimization.stage=3 "
           "gradient_accumulation_steps=4"
        << small + " PARAMS";
  }

  void offloadEqualsMemory() {
    QFETCH(QString, strategy);
    QFETCH(QString, offload);
    const TrainConfig memory = dptest::tinyConfig(split(strategy));
    std::vector<std::string> o = split(strategy);
    for (const std::string& s : offloadTo(swapDirectory(), offload)) o.push_back(s);
    const TrainConfig swapped = dptest::tinyConfig(o);
    QVERIFY(swapped.parallel.swapsOptimizer() || swapped.parallel.swapsParameters());
    const dptest::RunRecord want = trainAll(memory, 3);
    const dptest::RunRecord got = trainAll(swapped, 3);
    const std::string diff = dptest::compare(want, got, 0.0, 0.0);
    QVERIFY2(diff.empty(), diff.c_str());
    // Every rank's swap file was unlinked when it was opened: nothing is left.
    QVERIFY(fs::is_empty(swapDirectory()));
  }

  // The optimizer state in memory is the swap buffers, which the estimate counts exactly: two
  // sub-groups' buffers of 3 arrays (bf16: master and moments), each 1000 floats padded to
  // 4 KiB, and the page that aligns them.
  void optimizerStateIsTheBuffers() {
    std::vector<std::string> o = {"data_parallel_size=2", "zero_optimization.stage=2",
                                  "bf16.enabled=true"};
    for (const std::string& s : offloadTo(swapDirectory(),
                                          "zero_optimization.sub_group_size=1000 "
                                          "zero_optimization.offload_optimizer.buffer_count=2"))
      o.push_back(s);
    const TrainConfig config = dptest::tinyConfig(o);
    const dptest::ModelState measured = dptest::measureModelState(config);
    const std::int64_t buffers = 2 * 3 * 4096 + 4096;
    const std::vector<MemoryEstimate> estimate =
        estimateRankMemory(config, 0, config.parallel.worldSize());
    QCOMPARE(estimate.front()
                 .items[static_cast<std::size_t>(MemoryCategory::OptimizerState)]
                 .residentBytes,
             static_cast<double>(buffers));
    for (const dptest::StateBytes& rank : measured.ranks) QCOMPARE(rank.optim, buffers);
    // On the disk: every sub-group's record (18 of 3 x 4 KiB for a shard of 17,088 elements).
    QCOMPARE(estimate.front().swapBytes, 18.0 * 3 * 4096);
  }

  // With ZeRO-3's parameters swapped the rank's parameter memory between steps is the swap's
  // buffers, which the estimate counts exactly: two of the largest record (a rank's bf16 part of
  // one layer's bucket, padded to 4 KiB) and the page that aligns them; on the disk, every
  // bucket's record beside the optimizer's sub-groups, the nvme counter's bytes.
  void parametersAreTheBuffers() {
    std::vector<std::string> o = {"data_parallel_size=2", "zero_optimization.stage=3",
                                  "bf16.enabled=true"};
    for (const std::string& s : offloadTo(swapDirectory(),
                                          "PARAMS zero_optimization.offload_param.buffer_count=2 "
                                          "zero_optimization.offload_optimizer.device=none"))
      o.push_back(s);
    const TrainConfig config = dptest::tinyConfig(o);
    const dptest::ModelState measured = dptest::measureModelState(config);
    const std::vector<MemoryEstimate> estimate =
        estimateRankMemory(config, 0, config.parallel.worldSize());
    const MemoryEstimate& e = estimate.front();
    QVERIFY(e.largestParameterPart > 0);
    const std::int64_t record = AioFile::aligned(e.largestParameterPart * 2);
    const std::int64_t buffers = 2 * record + 4096;
    QCOMPARE(e.items[static_cast<std::size_t>(MemoryCategory::Parameter)].residentBytes,
             static_cast<double>(buffers));
    for (const dptest::StateBytes& rank : measured.ranks) QCOMPARE(rank.param, buffers);
    QVERIFY(e.parameterSwapBytes >= static_cast<double>(record));
    QCOMPARE(e.swapBytes, e.parameterSwapBytes);
    QVERIFY(fs::is_empty(swapDirectory()));
  }

  // memory_limit_bytes between what a rank needs with its optimizer state in memory and what it
  // needs with the state swapped in sub-groups of 1000: the run in memory is refused before it
  // starts, naming the offload and sub-group size that fit (10,000 would not: 4 buffers of a
  // quarter of the shard each hold more than the shard); the swapped run trains under the limit,
  // which every rank's allocator enforces; a limit below even that is refused, saying so.
  void memoryLimitHoldsWithOffload() {
    const std::vector<std::string> base = {"zero_optimization.stage=1", "train_iters=3",
                                           "eval_interval=0"};
    std::vector<std::string> o = base;
    for (const std::string& s : offloadTo(swapDirectory(), "zero_optimization.sub_group_size=1000"))
      o.push_back(s);
    const double inMemory = estimateMemory(dptest::tinyConfig(base), 0, 1).trackedBytes();
    const double swapped = estimateMemory(dptest::tinyConfig(o), 0, 1).trackedBytes();
    QVERIFY(swapped < inMemory);
    const auto limit = static_cast<std::int64_t>((inMemory + swapped) / 2);
    auto withLimit = [](std::vector<std::string> keys, std::int64_t bytes) {
      keys.push_back("memory_limit_bytes=" + std::to_string(bytes));
      return dptest::tinyConfig(keys);
    };
    const QString refused = outcomeOf(withLimit(base, limit));
    QVERIFY2(refused.startsWith("memory_limit_bytes: a rank of this run needs about " +
                                QString::fromStdString(formatBytes(inMemory))),
             qPrintable(refused));
    QVERIFY2(refused.endsWith("over its limit of " +
                              QString::fromStdString(formatBytes(static_cast<double>(limit))) +
                              "; with zero_optimization.offload_optimizer.device=nvme (with its "
                              "nvme_path) and zero_optimization.sub_group_size=1000 it needs " +
                              QString::fromStdString(formatBytes(swapped)) + ", which fits"),
             qPrintable(refused));
    QCOMPARE(outcomeOf(withLimit(o, limit)), QString("trained 3 steps"));
    const QString tooSmall = outcomeOf(withLimit(o, static_cast<std::int64_t>(swapped / 2)));
    QVERIFY2(tooSmall.endsWith("; raise the limit, or use more ranks, a higher ZeRO stage, a "
                               "smaller micro-batch or recompute"),
             qPrintable(tooSmall));
    // The limit is the allocator's: live bytes never pass it.
    Allocator a;
    a.setLimit(1000);
    void* p = a.allocate(600, MemoryCategory::Workspace);
    QVERIFY_THROWS_EXCEPTION(std::bad_alloc, a.allocate(600, MemoryCategory::Workspace));
    a.deallocate(p, 600, MemoryCategory::Workspace);
    a.deallocate(a.allocate(1000, MemoryCategory::Workspace), 1000, MemoryCategory::Workspace);
    QVERIFY(fs::is_empty(swapDirectory()));
  }

  // Under ZeRO-3, a limit that swapping the optimizer's state alone cannot meet at any sub-group
  // size, and swapping the parameters too meets at sub-groups of 1000: the refusal names both
  // offloads and the size, and with them the run trains under the limit (one parameter buffer,
  // so that the parameters in memory are less than the shard).
  void memoryLimitNamesParameterOffloadUnderZero3() {
    const std::vector<std::string> base = {"data_parallel_size=2", "zero_optimization.stage=3",
                                           "train_iters=3", "eval_interval=0",
                                           "zero_optimization.offload_param.buffer_count=1"};
    auto with = [&](const QString& offload) {
      std::vector<std::string> o = base;
      for (const std::string& s : offloadTo(swapDirectory(), offload)) o.push_back(s);
      return o;
    };
    const auto need = [](const std::vector<std::string>& keys) {
      return estimateMemory(dptest::tinyConfig(keys), 0, 2).trackedBytes();
    };
    const double both = need(with("PARAMS zero_optimization.sub_group_size=1000"));
    QVERIFY(need(with("zero_optimization.sub_group_size=1000")) > both);
    QVERIFY(need(with("PARAMS zero_optimization.sub_group_size=10000")) > both);
    const auto limit = static_cast<std::int64_t>(both);
    std::vector<std::string> refused = base;
    refused.push_back("memory_limit_bytes=" + std::to_string(limit));
    const QString got = outcomeOf(dptest::tinyConfig(refused));
    QVERIFY2(got.endsWith("; with zero_optimization.offload_optimizer.device=nvme (with its "
                          "nvme_path), zero_optimization.offload_param.device=nvme (with its "
                          "nvme_path) and zero_optimization.sub_group_size=1000 it needs " +
                          QString::fromStdString(formatBytes(both)) + ", which fits"),
             qPrintable(got));
    std::vector<std::string> fitted = with("PARAMS zero_optimization.sub_group_size=1000");
    fitted.push_back("memory_limit_bytes=" + std::to_string(limit));
    QCOMPARE(outcomeOf(dptest::tinyConfig(fitted)), QString("trained 3 steps"));
    QVERIFY(fs::is_empty(swapDirectory()));
  }

  // ZeRO-Offload from a device's memory: the state and the AdamW step on the host, the
  // gradients' parts copied there when the step begins (into pinned memory, as each becomes
  // final) and the updated parts back, equals the optimizer in the device's memory bit for bit,
  // also where fp16 overflows in the first step (2^18: both ranks skip it, and its copies are
  // superseded); every pinned buffer is unpinned.
  void zeroOffloadFromADeviceEqualsTheDevice_data() {
    QTest::addColumn<QString>("strategy");
    QTest::newRow("D2 ZeRO-1") << "data_parallel_size=2 zero_optimization.stage=1";
    QTest::newRow("D2 ZeRO-2 bf16")
        << "data_parallel_size=2 zero_optimization.stage=2 bf16.enabled=true";
    QTest::newRow("D4 ZeRO-2 fp16, pinned")
        << "data_parallel_size=4 zero_optimization.stage=2 fp16.enabled=true "
           "zero_optimization.offload_optimizer.pin_memory=true";
    QTest::newRow("D2 ZeRO-1 fp16, a step overflowing, pinned")  // its copies superseded
        << "data_parallel_size=2 zero_optimization.stage=1 fp16.enabled=true "
           "fp16.initial_scale_power=18 fp16.hysteresis=1 "
           "zero_optimization.offload_optimizer.pin_memory=true";
    QTest::newRow("D2 ZeRO-3 bf16, pinned")
        << "data_parallel_size=2 zero_optimization.stage=3 bf16.enabled=true "
           "zero_optimization.offload_optimizer.pin_memory=true";
    QTest::newRow("D2 T2 ZeRO-1 bf16")
        << "data_parallel_size=2 tensor_model_parallel_size=2 zero_optimization.stage=1 "
           "bf16.enabled=true";
    QTest::newRow("D2 P2 ZeRO-2") << "data_parallel_size=2 pipeline_model_parallel_size=2 "
                                     "zero_optimization.stage=2";
    QTest::newRow("D2 P2 ZeRO-2, pinned")
        << "data_parallel_size=2 pipeline_model_parallel_size=2 zero_optimization.stage=2 "
           "zero_optimization.offload_optimizer.pin_memory=true";
  }
  void zeroOffloadFromADeviceEqualsTheDevice() {
    QFETCH(QString, strategy);
    const TrainConfig device = dptest::tinyConfig(split(strategy));
    std::vector<std::string> o = split(strategy);
    o.push_back("zero_optimization.offload_optimizer.device=cpu");
    const TrainConfig offloaded = dptest::tinyConfig(o);
    dptest::RunRecord want = trainAll(device, 3, true);
    QCOMPARE(ApartMemory::copies.load(), 0L);
    dptest::RunRecord got = trainAll(offloaded, 3, true);
    // The reduced gradients are the device's in both runs (an overflowing step's are not
    // numbers); the offload changes the updates: the later losses and the final parameters.
    for (dptest::RunRecord* r : {&want, &got})
      for (dptest::Values& step : r->gradients) step.clear();
    QVERIFY(ApartMemory::copies.exchange(0) > 0);
    QCOMPARE(ApartMemory::pins.load(), 0L);
    QCOMPARE(ApartMemory::partPages.load(), 0L);
    const std::string diff = dptest::compare(want, got, 0.0, 0.0);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // From a GPU, ZeRO-Offload's state is the host's memory, not the device's: the estimate counts
  // it (and the host's bf16 copies of the shard's values and gradients) apart; on the CPU the
  // state stays in the rank's memory. The D2 ZeRO-2 shard is 17,088 elements.
  void zeroOffloadFromAGpuIsHostMemoryInTheEstimate() {
    TrainConfig c =
        dptest::tinyConfig({"data_parallel_size=2", "zero_optimization.stage=2",
                            "bf16.enabled=true", "zero_optimization.offload_optimizer.device=cpu"});
    const auto state = static_cast<std::size_t>(MemoryCategory::OptimizerState);
    const MemoryEstimate cpu = estimateRankMemory(c, 0, 2).front();
    QCOMPARE(cpu.items[state].residentBytes, 17088.0 * 12);
    QCOMPARE(cpu.hostBytes, 0.0);
    c.device = Device{Device::Kind::Cuda, 0};
    const MemoryEstimate gpu = estimateRankMemory(c, 0, 2).front();
    QCOMPARE(gpu.items[state].residentBytes, 0.0);
    QCOMPARE(gpu.hostBytes, 17088.0 * (12 + 2 + 2));
  }

  // Offload switched on after step 2 and off after step 4 of a run: the same losses and
  // weights, bit for bit, as the run that never swapped.
  void switchingOffloadChangesNothing_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("offload");
    QTest::newRow("optimizer, zero2") << "data_parallel_size=2 zero_optimization.stage=2"
                                      << "zero_optimization.sub_group_size=999";
    QTest::newRow("optimizer and parameters, zero3")
        << "data_parallel_size=2 zero_optimization.stage=3"
        << "zero_optimization.sub_group_size=999 PARAMS";
  }

  void switchingOffloadChangesNothing() {
    QFETCH(QString, strategy);
    QFETCH(QString, offload);
    std::vector<std::string> base = split(strategy);
    base.emplace_back("train_iters=6");
    base.emplace_back("eval_interval=0");
    const TrainConfig plain = dptest::tinyConfig(base);
    std::vector<std::string> o = base;
    for (const std::string& s : offloadTo(swapDirectory(), offload)) o.push_back(s);
    const TrainConfig swapped = dptest::tinyConfig(o);

    struct Losses : SessionObserver {
      Session* session = nullptr;
      std::vector<std::pair<int, TrainConfig>> switches;
      std::vector<double> losses;
      std::mutex mutex;
      void onStep(const StepReport& r) override {
        std::lock_guard lock(mutex);
        losses.push_back(r.loss);
        if (!switches.empty() && switches.front().first == r.step) {
          session->switchStrategy(switches.front().second);
          switches.erase(switches.begin());
        }
      }
    };
    auto run = [](const TrainConfig& first, std::vector<std::pair<int, TrainConfig>> switches) {
      Session session(first, {});
      Losses observer;
      observer.session = &session;
      observer.switches = std::move(switches);
      session.addObserver(observer);
      session.run();
      if (session.error()) throw std::runtime_error(session.error()->reason);
      return observer.losses;
    };
    const std::vector<double> want = run(plain, {});
    const std::vector<double> got = run(plain, {{2, swapped}, {4, plain}});
    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      QVERIFY2(std::memcmp(&want[i], &got[i], sizeof(double)) == 0,
               qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(want[i]).arg(got[i])));
    QVERIFY(fs::is_empty(swapDirectory()));
  }

  void badSettingsNameTheKey_data() {
    QTest::addColumn<QStringList>("overrides");
    QTest::addColumn<QString>("message");
    QTest::newRow("stage 0") << QStringList{"zero_optimization.offload_optimizer.device=cpu"}
                             << "config: zero_optimization.offload_optimizer.device = cpu "
                                "offloads ZeRO's optimizer shard, and stage 0 has none; valid: "
                                "stage 1, 2 or 3, or device none";
    QTest::newRow("no path") << QStringList{"zero_optimization.stage=1",
                                            "zero_optimization.offload_optimizer.device=nvme"}
                             << "config: zero_optimization.offload_optimizer.nvme_path is not "
                                "set; device nvme swaps to files in that directory; valid: an "
                                "existing, writable directory on a local disk";
    QTest::newRow("param offload below stage 3")
        << QStringList{"zero_optimization.stage=2", "zero_optimization.offload_param.device=cpu"}
        << "config: zero_optimization.offload_param.device = cpu offloads ZeRO-3's parameter "
           "shard; valid: stage 3, or device none";
    QTest::newRow("param offload without a path")
        << QStringList{"zero_optimization.stage=3", "zero_optimization.offload_param.device=nvme"}
        << "config: zero_optimization.offload_param.nvme_path is not set; device nvme swaps to "
           "files in that directory; valid: an existing, writable directory on a local disk";
    QTest::newRow("block size") << QStringList{"aio.block_size=5000"}
                                << "config: aio.block_size = 5000 is not a multiple of 4096, the "
                                   "alignment direct I/O needs; valid: 4096, 8192, ... (default "
                                   "1048576)";
    QTest::newRow("threads") << QStringList{"aio.thread_count=100"}
                             << "config: aio.thread_count = 100 is out of range; allowed 1..64";
    QTest::newRow("unknown device")
        << QStringList{"zero_optimization.offload_optimizer.device=disk"}
        << "config: zero_optimization.offload_optimizer.device = \"disk\" is not supported; "
           "allowed: none, cpu, nvme";
  }

  void badSettingsNameTheKey() {
    QFETCH(QStringList, overrides);
    QFETCH(QString, message);
    std::vector<std::string> o;
    for (const QString& s : overrides) o.push_back(s.toStdString());
    QCOMPARE(test::userErrorOf([&] { (void)dptest::tinyConfig(o); }), message);
  }

  // A directory that cannot hold the swap: refused before any rank starts, one message each,
  // nothing written.
  void badDirectoryIsRefusedUpFront_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("message");
    const QString missing = QString::fromStdString((swapDirectory() / "missing").string());
    QTest::newRow("missing") << missing
                             << "zero_optimization.offload_optimizer.nvme_path '" + missing +
                                    "' does not exist; valid: an existing, writable directory "
                                    "on a local disk";
    const QString file = QString::fromStdString(dptest::textFixture());
    QTest::newRow("a file") << file
                            << "zero_optimization.offload_optimizer.nvme_path '" + file +
                                   "' is not a directory; valid: an existing, writable "
                                   "directory on a local disk";
    // No one creates files in /proc, root included.
    QTest::newRow("not writable")
        << "/proc"
        << "zero_optimization.offload_optimizer.nvme_path '/proc' is not writable (No such file "
           "or directory); valid: a directory this user may create files in";
  }

  void badDirectoryIsRefusedUpFront() {
    QFETCH(QString, path);
    QFETCH(QString, message);
    const TrainConfig config = dptest::tinyConfig(
        {"zero_optimization.stage=1", "zero_optimization.offload_optimizer.device=nvme",
         "zero_optimization.offload_optimizer.nvme_path=" + path.toStdString()});
    QCOMPARE(outcomeOf(config), message);
  }

  // A parameter buffer smaller than a rank's part of a layer's bucket is refused before any
  // rank starts, with the size that would do; so is a parameter directory that cannot hold the
  // swap, named by its own key.
  void parameterBuffersAndDirectoryAreCheckedUpFront() {
    std::vector<std::string> o = {"data_parallel_size=2", "zero_optimization.stage=3"};
    for (const std::string& s : offloadTo(swapDirectory(), "PARAMS")) o.push_back(s);
    const MemoryEstimate e = estimateMemory(dptest::tinyConfig(o), 0, 2);
    const std::string part = std::to_string(e.largestParameterPart);
    o.push_back("zero_optimization.offload_param.buffer_size=1000");
    QCOMPARE(outcomeOf(dptest::tinyConfig(o)),
             QString::fromStdString("zero_optimization.offload_param.buffer_size = 1000 elements "
                                    "cannot hold a rank's part of ZeRO-3's largest bucket, " +
                                    part +
                                    " elements (a layer's parameters over the data-parallel "
                                    "ranks); valid: " +
                                    part + " or more"));
    o.back() = "zero_optimization.offload_param.buffer_size=" + part;
    const std::string missing = (swapDirectory() / "missing").string();
    o.push_back("zero_optimization.offload_param.nvme_path=" + missing);
    QCOMPARE(outcomeOf(dptest::tinyConfig(o)),
             QString::fromStdString("zero_optimization.offload_param.nvme_path '" + missing +
                                    "' does not exist; valid: an existing, writable directory "
                                    "on a local disk"));
    o.pop_back();
    o.emplace_back("train_iters=2");
    o.emplace_back("eval_interval=0");
    QCOMPARE(outcomeOf(dptest::tinyConfig(o)), QString("trained 2 steps"));
    QVERIFY(fs::is_empty(swapDirectory()));
  }

  // A file-size limit too small for the swap file (as a full disk): the rank's reservation
  // fails before its first step, with what it needed, and the limit is the reason given. The
  // tiny GPT's 34,176 elements on one rank, full precision, one sub-group: two arrays of
  // 136,704 bytes, each padded to 139,264.
  void swapThatDoesNotFitFailsBeforeTheFirstStep() {
    const TrainConfig config =
        dptest::tinyConfig(offloadTo(swapDirectory(), "zero_optimization.stage=1"));
    rlimit old{};
    QVERIFY(getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto previous = std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG
    rlimit small = old;
    small.rlim_cur = 64 * 1024;
    QVERIFY(setrlimit(RLIMIT_FSIZE, &small) == 0);
    const QString got = outcomeOf(config);
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, previous);
    QVERIFY2(got.contains("zero_optimization.offload_optimizer.nvme_path '" +
                          QString::fromStdString(swapDirectory().string()) +
                          "': cannot reserve 272.0 KiB for this rank's swap file (File too large); "
                          "free space there or choose a directory on a larger disk"),
             qPrintable(got));
    QVERIFY(fs::is_empty(swapDirectory()));
  }
};

QTEST_GUILESS_MAIN(TestOffload)
#include "test_offload.moc"
