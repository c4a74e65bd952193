// Live strategy switches: the switch matrix of in-process layouts, each "A for k steps, switch to
// B, continue" against "A for k steps, save a checkpoint, load it under B, continue" bit for bit
// (losses of every step and the final weights), and in fp32 against one rank over the same steps
// within the equivalence tolerance; bad targets refused with the validator's words while the run
// goes on unchanged; a switch while paused; bitwise save/load round trips under one layout.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/common/stop_signal.h"
#include "core/io/safetensors.h"
#include "core/kernels/precision.h"
#include "core/session/run_summary.h"
#include "core/session/session.h"
#include "core/state/checkpoint.h"
#include "core/state/reshard.h"
#include "tests/train/dp_harness.h"

using namespace parascope;
namespace fs = std::filesystem;

class TestSwitch : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void cleanupTestCase();
  void switchEqualsSaveAndLoad_data();
  void switchEqualsSaveAndLoad();
  void roundTripUnderOneLayout_data();
  void roundTripUnderOneLayout();
  void invalidTargetIsRefused();
  void switchWhilePaused();
  void failureLeavesTheLastCheckpoint();
  void stopDuringASaveLeavesNoStagingCopy();
  void reshardOverTheCommunicator_data();
  void reshardOverTheCommunicator();
  void initialWeightsUnderAnotherLayout();
  void initialWeightsOfAnotherModelAreRefused();
  void stopSignalWhilePaused();
};

namespace {

fs::path scratch() {
  return fs::temp_directory_path() / ("parascope-switch-" + std::to_string(::getpid()));
}

std::vector<std::string> split(const QString& list) {
  std::vector<std::string> out;
  for (const QString& s : list.split(' ', Qt::SkipEmptyParts)) out.push_back(s.toStdString());
  return out;
}

constexpr int kSteps = 6;

// The state bytes a switch writes into the new layout (SwitchReport::bytesMoved): copyState
// fills every slice of every new rank, replicas included (Trainer::state()). Per element of a
// rank's parameters: without ZeRO the f32 value and AdamW's two moments, 12 B, plus 2 B for the
// stored 16-bit copy under bf16/fp16; ZeRO-1/2 keeps the moments of the rank's shard but the
// whole f32 value (12 x shard + 4 x the rest: 8 P + 4 D P over D data ranks); ZeRO-3 only the
// shard (12 P over the group). Parameter counts of the tiny GPT (V 256, T 16, C 32, F 4C = 128,
// docs/weights.md): wte 8192, wpe 512, ln_f 64, and per block 12704, of which 12512 are split
// by tensor parallelism (c_attn, attn.c_proj.weight, c_fc, mlp.c_proj.weight) and 192 are whole
// (layernorms, row-parallel biases).
constexpr std::int64_t kWte = 256 * 32;
constexpr std::int64_t kModel = kWte + 512 + 2 * 12704 + 64;   // 34176, 2 layers
constexpr std::int64_t kModel4 = kWte + 512 + 4 * 12704 + 64;  // 59584, 4 layers
// Over two tensor-parallel ranks the split elements once, the whole ones (wpe, 2 x 192, ln_f)
// twice: 35136. Over two pipeline stages every parameter once, and the tied wte on the first
// stage (embedding) and the last (head) twice: 42368, with 4 layers 67776.
constexpr std::int64_t kTensorPair = kModel + 512 + 2 * 192 + 64;
constexpr std::int64_t kPipeline = kModel + kWte;
constexpr std::int64_t kPipeline4 = kModel4 + kWte;

// The tiny GPT for kSteps steps, without evaluation, writing its final weights to `weights`.
TrainConfig config(const QString& strategy, const std::string& weights) {
  std::vector<std::string> o = split(strategy);
  o.insert(o.begin(),
           {"train_iters=" + std::to_string(kSteps), "eval_interval=0", "save_weights=" + weights});
  return dptest::tinyConfig(o);
}

// A rank's state copied out of its trainer, so that it outlives the session that held it: the
// slices point into `bytes`, which hold the trainer's values or zeros.
struct OwnedState {
  RankState state;
  std::vector<std::vector<std::byte>> bytes;
  OwnedState() = default;
  OwnedState(const RankState& of, bool values) : state(of) {
    for (StateSlice& slice : state.slices) {
      const auto n = static_cast<std::size_t>(slice.count) * dtypeSize(slice.dtype);
      std::vector<std::byte>& b = bytes.emplace_back(n);
      if (values) std::memcpy(b.data(), slice.data, n);
      slice.data = b.data();
    }
  }
};

struct Outcome {
  std::vector<double> losses;  // per step, 1-based step i at i - 1
  std::vector<SwitchReport> switches;
  std::vector<CheckpointReport> checkpoints;
  FinishedReport finished;
  std::optional<ErrorReport> error;
  std::map<std::string, std::vector<float>> weights;
};

// Records losses and reports, and asks for the next switch once its step is reported.
class Driver : public SessionObserver {
 public:
  Driver(Session& s, std::vector<std::pair<int, TrainConfig>> switches)
      : session_(s), switches_(std::move(switches)) {}
  void onStep(const StepReport& r) override {
    std::lock_guard lock(mutex_);
    out.losses.push_back(r.loss);
    if (next_ < switches_.size() && switches_[next_].first == r.step) {
      session_.switchStrategy(switches_[next_++].second);
    }
  }
  void onSwitch(const SwitchReport& r) override {
    std::lock_guard lock(mutex_);
    out.switches.push_back(r);
  }
  void onCheckpoint(const CheckpointReport& r) override {
    std::lock_guard lock(mutex_);
    out.checkpoints.push_back(r);
  }
  Outcome out;

 private:
  Session& session_;
  std::vector<std::pair<int, TrainConfig>> switches_;
  std::size_t next_ = 0;
  std::mutex mutex_;
};

std::map<std::string, std::vector<float>> readWeights(const std::string& path) {
  std::map<std::string, std::vector<float>> out;
  const SafetensorsFile f = readSafetensors(path);
  for (const auto& [name, t] : f.tensors) {
    out[name] = std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  }
  return out;
}

Outcome run(const TrainConfig& first, std::vector<std::pair<int, TrainConfig>> switches,
            SessionOptions options = {}) {
  Session session(first, std::move(options));
  Driver driver(session, std::move(switches));
  session.addObserver(driver);
  driver.out.finished = session.run();
  driver.out.error = session.error();
  if (!driver.out.error) driver.out.weights = readWeights(first.saveWeights);
  return std::move(driver.out);
}

// Where two runs first differ bit for bit, or empty.
std::string bitDifference(const Outcome& a, const Outcome& b, int fromStep) {
  if (a.losses.size() != b.losses.size()) return "different step counts";
  for (std::size_t i = static_cast<std::size_t>(fromStep); i < a.losses.size(); ++i) {
    if (std::bit_cast<std::uint64_t>(a.losses[i]) != std::bit_cast<std::uint64_t>(b.losses[i])) {
      return "loss of step " + std::to_string(i + 1) + ": " + std::to_string(a.losses[i]) + " vs " +
             std::to_string(b.losses[i]);
    }
  }
  if (a.weights.size() != b.weights.size()) return "different weight sets";
  for (const auto& [name, values] : a.weights) {
    auto found = b.weights.find(name);
    if (found == b.weights.end()) return "no weight " + name;
    if (std::memcmp(values.data(), found->second.data(), values.size() * sizeof(float)) != 0) {
      return "weight " + name + " differs";
    }
  }
  return {};
}

}  // namespace

void TestSwitch::initTestCase() {
  fs::create_directories(scratch());
}

void TestSwitch::cleanupTestCase() {
  fs::remove_all(scratch());
  fs::remove(dptest::textFixture());
}

void TestSwitch::switchEqualsSaveAndLoad_data() {
  QTest::addColumn<QStringList>("layouts");  // the run's layouts in order
  QTest::addColumn<bool>("fp32");            // compared with one rank too
  QTest::addColumn<QString>("model");        // overrides of every layout and of the one rank
  QTest::addColumn<QList<qint64>>("bytes");  // each switch's bytesMoved, by the sizes above
  const QString m4 = "gradient_accumulation_steps=4";
  QTest::newRow("D2 -> T2") << QStringList{"data_parallel_size=2", "tensor_model_parallel_size=2"}
                            << true << "" << QList<qint64>{12 * kTensorPair};
  QTest::newRow("T2xP2 -> D4")
      << QStringList{"tensor_model_parallel_size=2 pipeline_model_parallel_size=2 " + m4,
                     "data_parallel_size=4"}
      << true << "" << QList<qint64>{4 * 12 * kModel};
  QTest::newRow("D4 ZeRO-3 -> D2 ZeRO-1")
      << QStringList{"data_parallel_size=4 zero_optimization.stage=3",
                     "data_parallel_size=2 zero_optimization.stage=1"}
      << true << "" << QList<qint64>{8 * kModel + 4 * 2 * kModel};
  QTest::newRow("P2 1F1B -> P2 interleaved")
      << QStringList{"pipeline_model_parallel_size=2 " + m4,
                     "pipeline_model_parallel_size=2 pipeline_schedule=interleaved "
                     "virtual_pipeline_model_parallel_size=2 " +
                         m4}
      << true << "model.num_layers=4" << QList<qint64>{12 * kPipeline4};
  QTest::newRow("P2 ZB-H1 -> T2 SP")
      << QStringList{"pipeline_model_parallel_size=2 pipeline_schedule=zb-h1 " + m4,
                     "tensor_model_parallel_size=2 sequence_parallel=true"}
      << true << "" << QList<qint64>{12 * kTensorPair};
  QTest::newRow("fp32 -> bf16 -> fp32")
      << QStringList{"data_parallel_size=2", "data_parallel_size=2 bf16.enabled=true",
                     "data_parallel_size=2"}
      << false << "" << QList<qint64>{2 * 14 * kModel, 2 * 12 * kModel};
  QTest::newRow("2 ranks -> 4 ranks -> 1 rank")
      << QStringList{"data_parallel_size=2 zero_optimization.stage=2",
                     "tensor_model_parallel_size=2 data_parallel_size=2", ""}
      << true << "" << QList<qint64>{2 * 12 * kTensorPair, 12 * kModel};
  QTest::newRow("D4 ZeRO-3 -> P2xD2 ZeRO-3 -> P2xD2 ZeRO-2")
      << QStringList{"data_parallel_size=4 zero_optimization.stage=3",
                     "pipeline_model_parallel_size=2 data_parallel_size=2 "
                     "zero_optimization.stage=3 " +
                         m4,
                     "pipeline_model_parallel_size=2 data_parallel_size=2 "
                     "zero_optimization.stage=2 pipeline_schedule=zb-h1 " +
                         m4}
      << true << "" << QList<qint64>{12 * kPipeline, 8 * kPipeline + 4 * 2 * kPipeline};
  QTest::newRow("fp16 D2 -> fp16 P2 ZeRO-1")
      << QStringList{"fp16.enabled=true data_parallel_size=2",
                     "fp16.enabled=true pipeline_model_parallel_size=2 " + m4}
      << false << "" << QList<qint64>{14 * kPipeline};
}

// Switch at steps 2, 4, ... of kSteps; the reference saves at each switch step, ends, and the
// next run loads under the next layout.
void TestSwitch::switchEqualsSaveAndLoad() {
  QFETCH(QStringList, layouts);
  QFETCH(bool, fp32);
  QFETCH(QString, model);
  QFETCH(QList<qint64>, bytes);
  for (QString& l : layouts) l = model + " " + l;
  const std::string weights = (scratch() / "switched.safetensors").string();
  std::vector<std::pair<int, TrainConfig>> switches;
  for (int i = 1; i < layouts.size(); ++i) {
    switches.emplace_back(2 * i, config(layouts[i], weights));
  }
  const Outcome switched = run(config(layouts[0], weights), switches);
  QVERIFY2(!switched.error, switched.error ? switched.error->reason.c_str() : "");
  QCOMPARE(switched.losses.size(), static_cast<std::size_t>(kSteps));
  QCOMPARE(switched.switches.size(), switches.size());
  for (std::size_t i = 0; i < switches.size(); ++i) {
    const SwitchReport& r = switched.switches[i];
    QCOMPARE(r.step, switches[i].first);
    QCOMPARE(r.worldAfter, switches[i].second.parallel.worldSize());
    QCOMPARE(r.bytesMoved, static_cast<std::int64_t>(bytes[static_cast<qsizetype>(i)]));
    QCOMPARE(r.after, describeStrategy(switches[i].second));
  }

  // The same run through checkpoints: each layout's segment ends in a save that the next loads.
  Outcome reference;
  const fs::path dir = scratch() / "checkpoints";
  fs::remove_all(dir);
  for (int i = 0; i < layouts.size(); ++i) {
    const std::string w = (scratch() / "reference.safetensors").string();
    TrainConfig c = config(layouts[i], w);
    const bool last = i + 1 == layouts.size();
    if (!last) c.trainIters = 2 * (i + 1);
    SessionOptions o;
    o.saveDir = dir.string();
    if (i > 0) o.load = dir.string();
    Outcome part = run(c, {}, o);
    QVERIFY2(!part.error, part.error ? part.error->reason.c_str() : "");
    reference.losses.insert(reference.losses.end(), part.losses.begin(), part.losses.end());
    reference.weights = part.weights;
  }
  const std::string diff = bitDifference(switched, reference, 0);
  QVERIFY2(diff.empty(), diff.c_str());

  if (fp32) {  // the same steps on one rank, within the equivalence tolerance
    const Outcome one = run(config(model, weights), {});
    for (int i = 0; i < kSteps; ++i) {
      const double a = one.losses[static_cast<std::size_t>(i)];
      const double b = switched.losses[static_cast<std::size_t>(i)];
      QVERIFY2(std::abs(a - b) <= 4e-5 + 1e-5 * std::abs(a),
               qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(a).arg(b)));
    }
    for (const auto& [name, values] : one.weights) {
      const std::vector<float>& got = switched.weights.at(name);
      for (std::size_t e = 0; e < values.size(); ++e) {
        QVERIFY2(std::abs(values[e] - got[e]) <= 4e-5 + 1e-5 * std::abs(values[e]),
                 qPrintable(QString::fromStdString(name) + " element " + QString::number(e)));
      }
    }
  }
}

void TestSwitch::roundTripUnderOneLayout_data() {
  QTest::addColumn<QString>("layout");
  QTest::newRow("one rank") << "";
  QTest::newRow("D2 ZeRO-3 bf16")
      << "data_parallel_size=2 zero_optimization.stage=3 bf16.enabled=true";
  QTest::newRow("T2 P2") << "tensor_model_parallel_size=2 pipeline_model_parallel_size=2 "
                            "gradient_accumulation_steps=2";
  // The checkpoint is written from the swapped state staged into memory, and the loaded state
  // goes back to the swap file at the first step (docs/offload.md).
  QTest::newRow("D2 ZeRO-2 bf16, optimizer state swapped")
      << "data_parallel_size=2 zero_optimization.stage=2 bf16.enabled=true "
         "zero_optimization.sub_group_size=1000 zero_optimization.offload_optimizer.device=nvme "
         "zero_optimization.offload_optimizer.nvme_path=" +
             QString::fromStdString(scratch().string());
}

// Save after 3 steps, load under the same layout: the next steps are the uninterrupted run's.
void TestSwitch::roundTripUnderOneLayout() {
  QFETCH(QString, layout);
  const std::string weights = (scratch() / "whole.safetensors").string();
  const Outcome whole = run(config(layout, weights), {});
  QVERIFY(!whole.error);
  const fs::path dir = scratch() / "round-trip";
  fs::remove_all(dir);
  TrainConfig first = config(layout, (scratch() / "first.safetensors").string());
  first.trainIters = 3;
  SessionOptions save;
  save.saveDir = dir.string();
  const Outcome a = run(first, {}, save);
  QVERIFY(!a.error);
  QCOMPARE(a.checkpoints.size(), std::size_t{1});
  CheckpointReader(dir.string()).verifyChecksums();
  SessionOptions load;
  load.load = dir.string();
  Outcome b = run(config(layout, (scratch() / "second.safetensors").string()), {}, load);
  QVERIFY2(!b.error, b.error ? b.error->reason.c_str() : "");
  QCOMPARE(b.losses.size(), std::size_t{kSteps - 3});
  Outcome joined = a;
  joined.losses.insert(joined.losses.end(), b.losses.begin(), b.losses.end());
  joined.weights = b.weights;
  const std::string diff = bitDifference(whole, joined, 0);
  QVERIFY2(diff.empty(), diff.c_str());
}

void TestSwitch::invalidTargetIsRefused() {
  const std::string weights = (scratch() / "refused.safetensors").string();
  const TrainConfig a = config("data_parallel_size=2", weights);
  Session session(a);
  session.start(/*paused=*/true);
  // Another model, another global batch: refused before anything is touched.
  TrainConfig wider = config("data_parallel_size=2 model.hidden_size=64", weights);
  try {
    session.switchStrategy(wider);
    QFAIL("a switch to another model was accepted");
  } catch (const UserError& e) {
    QCOMPARE(QString(e.what()),
             QString("switch: model differs from the running session's; a switch changes only "
                     "how the run is spread (parallel degrees, schedule, micro-batches, ZeRO, "
                     "precision, buckets)"));
  }
  TrainConfig batch = config("data_parallel_size=2 train_batch_size=32", weights);
  try {
    session.switchStrategy(batch);
    QFAIL("a switch of the global batch was accepted");
  } catch (const UserError& e) {
    QVERIFY2(QString(e.what()).startsWith("switch: the global batch would change from 16 to 32"),
             e.what());
  }
  // An invalid layout never becomes a TrainConfig: the validator's message is the refusal.
  try {
    config("data_parallel_size=2 tensor_model_parallel_size=3", weights);
    QFAIL("heads not divisible by the tensor degree were accepted");
  } catch (const UserError& e) {
    QVERIFY2(QString(e.what()).contains("tensor_model_parallel_size"), e.what());
  }
  session.resume();
  const FinishedReport f = session.wait();
  QVERIFY(!f.failed);
  QCOMPARE(f.steps, kSteps);
  QCOMPARE(session.config().parallel.data, 2);  // unchanged
}

void TestSwitch::switchWhilePaused() {
  const std::string weights = (scratch() / "paused.safetensors").string();
  Session session(config("data_parallel_size=2", weights));
  std::mutex mutex;
  std::vector<SwitchReport> seen;
  struct Watch : SessionObserver {
    std::mutex* m;
    std::vector<SwitchReport>* s;
    void onSwitch(const SwitchReport& r) override {
      std::lock_guard lock(*m);
      s->push_back(r);
    }
  } watch;
  watch.m = &mutex;
  watch.s = &seen;
  session.addObserver(watch);
  session.start(/*paused=*/true);
  session.switchStrategy(config("tensor_model_parallel_size=2 data_parallel_size=2", weights));
  // The switch happens at the boundary the paused session is held at; it stays paused.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (!seen.empty()) break;
    }
    QVERIFY(std::chrono::steady_clock::now() < until);
    QTest::qWait(5);
  }
  QCOMPARE(seen.front().step, 0);
  QCOMPARE(seen.front().worldAfter, 4);
  QCOMPARE(seen.front().bytesMoved, 2 * 12 * kTensorPair);  // two tensor pairs, no ZeRO
  QCOMPARE(session.config().parallel.worldSize(), 4);
  session.resume();
  const FinishedReport f = session.wait();
  QVERIFY(!f.failed);
  QCOMPARE(f.steps, kSteps);
}

// A rank that fails during a run with checkpoints leaves the last one complete; resumed under
// another strategy, the run goes on as a live switch at that step would have.
void TestSwitch::failureLeavesTheLastCheckpoint() {
  const std::string weights = (scratch() / "failing.safetensors").string();
  const fs::path dir = scratch() / "failing";
  fs::remove_all(dir);
  struct Saboteur : SessionObserver {
    void onRankStep(const StepReport& r) override {
      if (r.rank == 1 && r.step == 5) throw std::runtime_error("rank 1 lost its disk");
    }
  } saboteur;
  SessionOptions save;
  save.saveDir = dir.string();
  save.saveInterval = 2;
  Session failing(config("data_parallel_size=2", weights), save);
  failing.addObserver(saboteur);
  const FinishedReport f = failing.run();
  QVERIFY(f.failed);
  QCOMPARE(failing.error()->reason, std::string("rank 1 lost its disk"));
  QCOMPARE(QString::fromStdString(f.checkpoint),
           QString::fromStdString((dir / "step-00000004").string()));
  const CheckpointReader latest(dir.string());
  latest.verifyChecksums();
  QCOMPARE(latest.manifest().counters.step, 4);

  const TrainConfig t2 = config("tensor_model_parallel_size=2", weights);
  const Outcome switched = run(config("data_parallel_size=2", weights), {{4, t2}});
  SessionOptions resume;
  resume.load = dir.string();
  const Outcome resumed = run(t2, {}, resume);
  QVERIFY2(!resumed.error, resumed.error ? resumed.error->reason.c_str() : "");
  Outcome joined = switched;
  joined.losses.resize(4);
  joined.losses.insert(joined.losses.end(), resumed.losses.begin(), resumed.losses.end());
  joined.weights = resumed.weights;
  const std::string diff = bitDifference(switched, joined, 0);
  QVERIFY2(diff.empty(), diff.c_str());
}

// SIGTERM while the ranks write a checkpoint: the save is abandoned and its staging directory
// removed when the run ends (it would stay, a complete-looking copy, until the next save); the
// previous checkpoint stays the latest.
void TestSwitch::stopDuringASaveLeavesNoStagingCopy() {
  const std::string weights = (scratch() / "stopped.safetensors").string();
  const fs::path dir = scratch() / "stopped";
  fs::remove_all(dir);
  struct Signaller : SessionObserver {
    void onStep(const StepReport& r) override {
      if (r.step == 4) setPendingStopSignal(SIGTERM);  // rank 0, just before it saves step 4
    }
  } signaller;
  SessionOptions save;
  save.saveDir = dir.string();
  save.saveInterval = 2;
  Session stopped(config("data_parallel_size=2", weights), save);
  stopped.addObserver(signaller);
  const FinishedReport f = stopped.run();
  setPendingStopSignal(0);
  QVERIFY(f.failed);
  QCOMPARE(stopped.error()->reason, std::string("terminated (SIGTERM)"));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  QCOMPARE(names, (std::vector<std::string>{".parascope-lock", "latest", "step-00000002"}));
  QCOMPARE(CheckpointReader(dir.string()).manifest().counters.step, 2);
}

void TestSwitch::reshardOverTheCommunicator_data() {
  QTest::addColumn<QString>("before");
  QTest::addColumn<QString>("after");
  const QString m4 = "gradient_accumulation_steps=4";
  QTest::newRow("D4 ZeRO-3 -> T2xP2")
      << "data_parallel_size=4 zero_optimization.stage=3"
      << "tensor_model_parallel_size=2 pipeline_model_parallel_size=2 " + m4;
  QTest::newRow("T2xP2 -> D4 bf16")
      << "tensor_model_parallel_size=2 pipeline_model_parallel_size=2 " + m4
      << "data_parallel_size=4 bf16.enabled=true";
  QTest::newRow("P2xD2 ZeRO-3 -> T2xD2 ZeRO-2")
      << "pipeline_model_parallel_size=2 data_parallel_size=2 zero_optimization.stage=3 " + m4
      << "tensor_model_parallel_size=2 data_parallel_size=2 zero_optimization.stage=2";
  QTest::newRow("D2xT2 ZeRO-2 -> D4 ZeRO-1")
      << "data_parallel_size=2 tensor_model_parallel_size=2 zero_optimization.stage=2"
      << "data_parallel_size=4 zero_optimization.stage=1";
}

// The transfers MPI processes use, run by in-process ranks: the new layout's state equals the
// direct in-process copy byte for byte, and the only memory the reshard takes is its two
// transfer buffers (small here, so that copies split across many messages).
void TestSwitch::reshardOverTheCommunicator() {
  QFETCH(QString, before);
  QFETCH(QString, after);
  const std::string weights = (scratch() / "reshard.safetensors").string();
  const TrainConfig a = config(before, weights);
  const TrainConfig b = config(after, weights);
  constexpr int kRanks = 4;
  constexpr std::size_t kBuffer = 4096;
  std::vector<RankState> old(kRanks);
  std::unique_ptr<StateIndex> index;
  std::vector<std::string> problems(kRanks);
  runInProcess(kRanks, [&](Communicator& world) {
    const auto r = static_cast<std::size_t>(world.rank());
    // The old layout after a step (so that AdamW's moments are not zero); the new layout's
    // slices, twice, zero-filled, from a session stopped before its first step.
    OwnedState from, moved, reference;
    dptest::RunOptions first{.world = world};
    first.finished = [&](Trainer& t) { from = OwnedState(t.state(), true); };
    dptest::train(a, 1, first);
    dptest::RunOptions second{.world = world};
    second.built = [&](Trainer& t) {
      moved = OwnedState(t.state(), false);
      reference = OwnedState(t.state(), false);
    };
    dptest::train(b, 0, second);
    Allocator scratchMemory;
    old[r] = from.state;
    int token = 0;
    world.allReduce(&token, &token, 1, DType::I32, ReduceOp::Sum);
    if (r == 0) {
      std::vector<const RankState*> views;
      for (const RankState& s : old) views.push_back(&s);
      index = std::make_unique<StateIndex>(views);
    }
    world.allReduce(&token, &token, 1, DType::I32, ReduceOp::Sum);
    const RankState& want = reference.state;
    const std::int64_t copied = copyState(*index, want);
    const RankState& got = moved.state;
    const std::int64_t written = reshardOver(world, from.state, got, scratchMemory, kBuffer);
    std::string& problem = problems[r];
    if (written != copied) problem = "bytes written " + std::to_string(written);
    for (std::size_t i = 0; i < got.slices.size() && problem.empty(); ++i) {
      const StateSlice& g = got.slices[i];
      const StateSlice& w = want.slices[i];
      const auto bytes = static_cast<std::size_t>(g.count) * dtypeSize(g.dtype);
      if (std::memcmp(g.data, w.data, bytes) != 0) {
        problem = g.tensor + " (" + stateFieldName(g.field) + ") differs";
      }
    }
    const std::int64_t peak = scratchMemory.peakBytes(MemoryCategory::CommBuffer);
    if (problem.empty() && (peak != 2 * static_cast<std::int64_t>(kBuffer) ||
                            scratchMemory.peakTotal() != peak || scratchMemory.liveTotal() != 0)) {
      problem = "transfer memory peak " + std::to_string(scratchMemory.peakTotal()) + ", live " +
                std::to_string(scratchMemory.liveTotal());
    }
    world.allReduce(&token, &token, 1, DType::I32, ReduceOp::Sum);  // `old` is read until here
  });
  for (int r = 0; r < kRanks; ++r) {
    QVERIFY2(problems[static_cast<std::size_t>(r)].empty(),
             ("rank " + std::to_string(r) + ": " + problems[static_cast<std::size_t>(r)]).c_str());
  }
}

// A run started from a weights file (init_weights) under a layout that slices every tensor
// differently holds exactly the file's weights: with a zero learning rate its saved weights are
// the file's, bit for bit (under bf16, the file's rounded to bf16: the values it computes with,
// which save_weights writes as f32).
void TestSwitch::initialWeightsUnderAnotherLayout() {
  const std::string trained = (scratch() / "trained.safetensors").string();
  const Outcome source = run(config("data_parallel_size=2", trained), {});
  QVERIFY(!source.error);
  const QString from = " optimizer.params.lr=0 init_weights=" + QString::fromStdString(trained);
  const std::string again = (scratch() / "again.safetensors").string();
  const Outcome restarted =
      run(config("tensor_model_parallel_size=2 pipeline_model_parallel_size=2 "
                 "gradient_accumulation_steps=4" +
                     from,
                 again),
          {});
  QVERIFY2(!restarted.error, restarted.error ? restarted.error->reason.c_str() : "");
  QCOMPARE(restarted.weights.size(), source.weights.size());
  for (const auto& [name, values] : source.weights) {
    QVERIFY2(restarted.weights.at(name) == values, name.c_str());
  }

  const std::string half = (scratch() / "half.safetensors").string();
  Session bf16(config("data_parallel_size=2 bf16.enabled=true" + from, half));
  QVERIFY(!bf16.run().failed);
  const SafetensorsFile stored = readSafetensors(half);
  for (const auto& [name, values] : source.weights) {
    const Tensor& t = stored.tensors.at(name);
    const auto n = static_cast<std::int64_t>(values.size());
    std::vector<std::uint16_t> low(values.size());
    std::vector<float> rounded(values.size());
    kernels::narrow(values.data(), low.data(), n, DType::BF16);
    kernels::widen(low.data(), rounded.data(), n, DType::BF16);
    QCOMPARE(t.dtype(), DType::F32);
    QVERIFY2(std::memcmp(t.raw(), rounded.data(), rounded.size() * sizeof(float)) == 0,
             name.c_str());
  }
}

void TestSwitch::initialWeightsOfAnotherModelAreRefused() {
  const std::string wide = (scratch() / "wide.safetensors").string();
  const Outcome other = run(config("model.hidden_size=64", wide), {});
  QVERIFY(!other.error);
  const std::string out = (scratch() / "unused.safetensors").string();
  Session session(config("init_weights=" + QString::fromStdString(wide), out));
  const FinishedReport f = session.run();
  QVERIFY(f.failed);
  const std::string reason = session.error()->reason;
  QVERIFY2(reason.find(wide + ": tensor '") == 0 && reason.find("expected a floating type of "
                                                                "shape") != std::string::npos,
           reason.c_str());
  QVERIFY(session.error()->userError);
}

// SIGINT or SIGTERM while the session is paused ends it, as at any other step boundary.
void TestSwitch::stopSignalWhilePaused() {
  const std::string weights = (scratch() / "signalled.safetensors").string();
  Session session(config("data_parallel_size=2", weights));
  session.start(/*paused=*/true);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (session.state() != SessionState::Paused) {
    QVERIFY(std::chrono::steady_clock::now() < until);
    QTest::qWait(5);
  }
  setPendingStopSignal(SIGINT);
  const FinishedReport f = session.wait();  // a paused wait that missed the signal hangs here
  setPendingStopSignal(0);
  QVERIFY(f.failed);
  QCOMPARE(f.steps, 0);
  QCOMPARE(session.error()->reason, std::string(Interrupted(SIGINT).what()));
  QVERIFY(!fs::exists(weights));
}

QTEST_GUILESS_MAIN(TestSwitch)
#include "test_switch.moc"
