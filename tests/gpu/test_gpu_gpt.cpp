// The GPT on one GPU against the same GPT on the CPU: one forward and backward from the same
// initial values and batch, through the model's layers with the CUDA kernels and cuBLAS products
// (fp32, TF32 off), and training steps of the trainer. The GPU's sums run in other orders, so the
// loss agrees within 1e-5 relative, every gradient within 1e-4 of its parameter's largest CPU
// gradient, and the losses of three steps within 1e-4. Skips with one line where no device is
// visible; the checks of what is refused before any work run anywhere.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "core/common/error.h"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/device.h"
#include "core/cuda/device_memory.h"
#include "core/model/gpt.h"
#include "core/model/model.h"
#include "core/session/session.h"
#include "core/session/switch_plan.h"
#include "core/train/trainer.h"
#include "profiler/io/chrome_import.h"
#include "profiler/run_trace.h"
#include "profiler/trace_recording.h"
#include "tests/gpu/require_device.h"

using namespace parascope;

namespace {

Batch randomBatch(const GptConfig& c, int B, unsigned seed) {
  const int T = c.contextLength;
  Batch batch;
  batch.inputs = Tensor::empty({B, T}, DType::I32, MemoryCategory::Workspace);
  batch.targets = Tensor::empty({B, T}, DType::I32, MemoryCategory::Workspace);
  std::mt19937 gen(seed);
  for (int i = 0; i < B * T; ++i) {
    batch.inputs.data<std::int32_t>()[i] = static_cast<std::int32_t>(gen() % c.vocabSize);
    batch.targets.data<std::int32_t>()[i] = static_cast<std::int32_t>(gen() % c.vocabSize);
  }
  batch.lossWeight = 1.0f / static_cast<float>(B * T);
  return batch;
}

// A device that is the host's memory, to reach the trainer's checks without a GPU.
class HostAsDevice final : public DeviceMemory {
 public:
  Device device() const override { return {Device::Kind::Cuda, 0}; }
  void* allocate(std::size_t bytes) override { return std::malloc(bytes); }
  void release(void* p, std::size_t) noexcept override { std::free(p); }
  void zero(void* p, std::size_t bytes) override { std::memset(p, 0, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
};

TrainConfig smallGpt(const nlohmann::json& extra = {}) {
  nlohmann::json doc = {{"model",
                         {{"type", "gpt"},
                          {"vocab_size", 256},
                          {"context_length", 32},
                          {"hidden_size", 64},
                          {"num_attention_heads", 4},
                          {"num_layers", 2}}},
                        {"data", {{"type", "text"}, {"path", "/usr/share/games/fortunes"}}},
                        {"train_micro_batch_size_per_gpu", 4},
                        {"gradient_accumulation_steps", 2},
                        {"train_iters", 3}};
  doc.merge_patch(extra);
  return parseTrainConfig(doc);
}

// Each step's loss of a session of smallGpt(doc), without evaluation; throws its failure.
std::vector<double> losses(const nlohmann::json& doc) {
  struct Steps final : SessionObserver {
    std::vector<double> losses;
    void onStep(const StepReport& r) override { losses.push_back(r.loss); }
  } steps;
  SessionOptions options;
  options.evaluate = false;
  Session session(smallGpt(doc), std::move(options));
  session.addObserver(steps);
  session.run();
  if (const auto failure = session.error()) throw std::runtime_error(failure->reason);
  return steps.losses;
}

}  // namespace

class TestGpuGpt : public QObject {
  Q_OBJECT
 private slots:
  void forwardBackwardMatchesTheCpu();
  void uploadRefusesTokensOutsideTheVocabulary();
  void trainerMatchesTheCpu();
  void mixedPrecisionMatchesTheCpu_data();
  void mixedPrecisionMatchesTheCpu();
  void strategiesOnOneGpuMatchOneRank_data();
  void strategiesOnOneGpuMatchOneRank();
  void checkpointsAndSwitchesOnTheGpu();
  void trainerRefusesWhatAGpuDoesNotRunYet();
  void tracedStepLinksEveryKernelToItsLaunch();
  void ranksRunOnComputeStreamsOfTheirOwn();
  void zeroOffloadMatchesTheGpuBitForBit();
};

void TestGpuGpt::forwardBackwardMatchesTheCpu() {
  REQUIRE_DEVICE("the GPU GPT is built");
  GptConfig c;  // GPT-mini: 4 layers, width 256, 4 heads, context 128, vocab 256
  const Batch batch = randomBatch(c, 8, 3);

  Model cpu;
  buildGpt(cpu, c);
  cpu.initialize(11);
  const MicroBatchResult expected = cpu.forwardBackward(batch);

  Allocator memory(cuda::deviceMemory(0));
  Model gpu(memory);
  gpu.setOps(cuda::cudaOps(0, cuda::GemmPrecision::F32));
  buildGpt(gpu, c);
  gpu.initialize(11);
  const MicroBatchResult got = gpu.forwardBackward(uploadBatch(batch, c, memory));

  QCOMPARE(got.targets, expected.targets);
  QVERIFY2(std::fabs(got.lossSum - expected.lossSum) <= 1e-5 * std::fabs(expected.lossSum),
           (std::to_string(got.lossSum) + " vs " + std::to_string(expected.lossSum)).c_str());
  int checked = 0;
  for (const Parameter& p : cpu.parameters()) {
    const Tensor g = gpu.find(p.name)->grad.onHost();
    const float* a = g.data<float>();
    const float* b = p.grad.data<float>();
    float largest = 0, worst = 0;
    for (std::int64_t i = 0; i < p.grad.numel(); ++i) {
      largest = std::max(largest, std::fabs(b[i]));
      worst = std::max(worst, std::fabs(a[i] - b[i]));
    }
    QVERIFY2(largest > 0, p.name.c_str());
    QVERIFY2(worst <= 1e-4f * largest,
             (p.name + ": " + std::to_string(worst) + " of " + std::to_string(largest)).c_str());
    ++checked;
  }
  QCOMPARE(checked, 4 + 12 * c.numLayers);
  // The steady state of the device's memory: a second step takes no new blocks.
  const std::int64_t fresh = memory.freshBlocks();
  gpu.zeroGrad();
  gpu.forwardBackward(uploadBatch(batch, c, memory));
  QCOMPARE(memory.freshBlocks(), fresh);
}

// Tokens are checked on the host before they go to a device, with the message the CPU model
// gives, and targets too (the device's kernels index rows with them); nothing is copied.
void TestGpuGpt::uploadRefusesTokensOutsideTheVocabulary() {
  GptConfig c;
  Batch batch = randomBatch(c, 2, 4);
  Allocator target;
  auto refusal = [&] {
    try {
      uploadBatch(batch, c, target);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("uploaded");
  };
  batch.inputs.data<std::int32_t>()[70] = 256;
  QCOMPARE(refusal(),
           std::string("token id 256 at position 70 is outside the vocabulary [0, 256)"));
  batch.inputs.data<std::int32_t>()[70] = 3;
  batch.targets.data<std::int32_t>()[5] = -1;
  QCOMPARE(refusal(), std::string("target id -1 at position 5 is outside the vocabulary [0, 256)"));
  QCOMPARE(target.peakTotal(), 0);
}

// Three steps of the trainer (two micro-batches each, clipping and AdamW) on the GPU and on the
// CPU from the same seed: the same losses within 1e-4 relative; from the second step on the
// device's memory takes no new blocks.
void TestGpuGpt::trainerMatchesTheCpu() {
  REQUIRE_DEVICE("the GPU trainer is built");
  const TrainConfig c = smallGpt();
  Trainer cpu(c);
  Allocator memory(cuda::deviceMemory(0));
  Trainer gpu(c, memory);
  std::int64_t fresh = -1;
  for (int step = 0; step < 3; ++step) {
    const StepReport a = cpu.step(), b = gpu.step();
    QVERIFY2(std::fabs(b.loss - a.loss) <= 1e-4 * std::fabs(a.loss),
             (std::to_string(b.loss) + " vs " + std::to_string(a.loss)).c_str());
    QVERIFY2(std::fabs(b.gradNorm - a.gradNorm) <= 1e-4 * a.gradNorm,
             (std::to_string(b.gradNorm) + " vs " + std::to_string(a.gradNorm)).c_str());
    if (step == 1) fresh = memory.freshBlocks();
  }
  QCOMPARE(memory.freshBlocks(), fresh);
  const EvalReport a = cpu.evaluate(), b = gpu.evaluate();
  QVERIFY(std::fabs(b.loss - a.loss) <= 1e-4 * std::fabs(a.loss));
  // The state as host copies: a second GPU trainer given it continues as the first does.
  Trainer next(c, memory, Communicator(), false);
  const RankState from = gpu.state(), to = next.state();
  QCOMPARE(to.slices.size(), from.slices.size());
  for (std::size_t i = 0; i < from.slices.size(); ++i) {
    QCOMPARE(to.slices[i].count, from.slices[i].count);
    std::memcpy(to.slices[i].data, from.slices[i].data,
                static_cast<std::size_t>(from.slices[i].count) * dtypeSize(from.slices[i].dtype));
  }
  next.stateWritten();
  gpu.releaseState();
  next.restoreCounters(from.counters);
  const StepReport x = gpu.step(), y = next.step();
  QVERIFY2(std::fabs(x.loss - y.loss) <= 1e-6 * std::fabs(x.loss),
           (std::to_string(x.loss) + " vs " + std::to_string(y.loss)).c_str());
}

void TestGpuGpt::mixedPrecisionMatchesTheCpu_data() {
  QTest::addColumn<QString>("precision");
  QTest::newRow("bf16") << "bf16";
  QTest::newRow("fp16") << "fp16";
}

// Mixed precision on the GPU as on the CPU: 16-bit parameters and gradients with f32 working
// copies, activations rounded to the compute type, AdamW on f32 masters, fp16's loss scale.
// The same three steps' losses and gradient norms within bf16's 1.6e-2 relative, and the same
// steps skipped.
void TestGpuGpt::mixedPrecisionMatchesTheCpu() {
  QFETCH(QString, precision);
  REQUIRE_DEVICE("GPU mixed precision is built");
  const TrainConfig c = smallGpt({{precision.toStdString(), {{"enabled", true}}}});
  Trainer cpu(c);
  Allocator memory(cuda::deviceMemory(0));
  Trainer gpu(c, memory);
  for (int step = 0; step < 3; ++step) {
    const StepReport a = cpu.step(), b = gpu.step();
    QCOMPARE(b.skipped, a.skipped);
    QVERIFY2(std::fabs(b.loss - a.loss) <= 1.6e-2 * std::fabs(a.loss),
             (std::to_string(b.loss) + " vs " + std::to_string(a.loss)).c_str());
    if (!a.skipped)
      QVERIFY2(std::fabs(b.gradNorm - a.gradNorm) <= 1.6e-2 * a.gradNorm,
               (std::to_string(b.gradNorm) + " vs " + std::to_string(a.gradNorm)).c_str());
  }
}

void TestGpuGpt::strategiesOnOneGpuMatchOneRank_data() {
  QTest::addColumn<QString>("strategy");
  QTest::newRow("D2") << R"({"data_parallel_size": 2, "gradient_accumulation_steps": 2})";
  QTest::newRow("P2 1f1b") << R"({"pipeline_model_parallel_size": 2})";
  QTest::newRow("P2 zb-h1")
      << R"({"pipeline_model_parallel_size": 2, "pipeline_schedule": "zb-h1"})";
  QTest::newRow("T2") << R"({"tensor_model_parallel_size": 2})";
  QTest::newRow("T2 sequence-parallel")
      << R"({"tensor_model_parallel_size": 2, "sequence_parallel": true})";
  QTest::newRow("D2 T2 P2") << R"({"data_parallel_size": 2, "tensor_model_parallel_size": 2,
                                   "pipeline_model_parallel_size": 2,
                                   "gradient_accumulation_steps": 2})";
  QTest::newRow("D2 ZeRO-1") << R"({"data_parallel_size": 2, "gradient_accumulation_steps": 2,
                                   "zero_optimization": {"stage": 1}})";
  QTest::newRow("D2 ZeRO-2 bf16") << R"({"data_parallel_size": 2, "gradient_accumulation_steps": 2,
                                        "zero_optimization": {"stage": 2}, "bf16": {"enabled": true}})";
  QTest::newRow("D2 ZeRO-3") << R"({"data_parallel_size": 2, "gradient_accumulation_steps": 2,
                                   "zero_optimization": {"stage": 3}})";
  QTest::newRow("D2 P2 bf16") << R"({"data_parallel_size": 2, "pipeline_model_parallel_size": 2,
                                     "gradient_accumulation_steps": 2, "bf16": {"enabled": true}})";
}

// Ranks sharing one GPU in-process, each with its own device memory and kernels, copying and
// reducing each other's buffers through the GPU (core/cuda/device_buffers.h). Three steps match
// one GPU rank accumulating the same global batch (16 sequences), and the same strategy on the
// CPU, within 1e-4 (bf16: within 1.6e-2).
void TestGpuGpt::strategiesOnOneGpuMatchOneRank() {
  QFETCH(QString, strategy);
  REQUIRE_DEVICE("strategies on a GPU are built");
  nlohmann::json layout = nlohmann::json::parse(strategy.toStdString());
  if (!layout.contains("gradient_accumulation_steps")) layout["gradient_accumulation_steps"] = 4;
  const bool bf16 = layout.contains("bf16");
  nlohmann::json one = {{"device", "cuda"}, {"gradient_accumulation_steps", 4}};
  if (bf16) one["bf16"] = layout["bf16"];
  const std::vector<double> cpu = losses(layout);
  layout["device"] = "cuda";
  const std::vector<double> gpu = losses(layout), single = losses(one);
  const double tolerance = bf16 ? 1.6e-2 : 1e-4;
  QCOMPARE(gpu.size(), std::size_t{3});
  QCOMPARE(single.size(), gpu.size());
  QCOMPARE(cpu.size(), gpu.size());
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    QVERIFY2(std::fabs(gpu[i] - single[i]) <= tolerance * std::fabs(single[i]),
             (std::to_string(gpu[i]) + " vs one rank's " + std::to_string(single[i])).c_str());
    QVERIFY2(std::fabs(gpu[i] - cpu[i]) <= tolerance * std::fabs(cpu[i]),
             (std::to_string(gpu[i]) + " vs the CPU's " + std::to_string(cpu[i])).c_str());
  }
}

// A GPU run saved at step 2 and resumed there on the GPU, and one switched from D2 to P2 after
// step 2, both take the straight run's losses (within 1e-5 and 1e-4: the resumed run is the same
// arithmetic, the switched one sums in other orders).
void TestGpuGpt::checkpointsAndSwitchesOnTheGpu() {
  REQUIRE_DEVICE("a GPU run's checkpoints and switches are built");
  struct Steps final : SessionObserver {
    std::vector<double> losses;
    void onStep(const StepReport& r) override { losses.push_back(r.loss); }
  };
  const auto run = [](const TrainConfig& c, SessionOptions options,
                      std::vector<PlannedSwitch> switches = {}) {
    Steps steps;
    options.evaluate = false;
    Session session(c, std::move(options));
    session.addObserver(steps);
    Switcher switcher(session, std::move(switches));
    session.addObserver(switcher);
    const FinishedReport finished = session.run();
    if (const auto failure = session.error()) throw std::runtime_error(failure->reason);
    return std::pair(steps.losses, finished.checkpoint);
  };
  const nlohmann::json gpu = {{"device", "cuda"},
                              {"train_iters", 4},
                              {"data_parallel_size", 2},
                              {"gradient_accumulation_steps", 2}};
  const std::vector<double> straight = run(smallGpt(gpu), {}).first;
  QCOMPARE(straight.size(), std::size_t{4});

  QTemporaryDir dir;
  SessionOptions save;
  save.saveDir = dir.path().toStdString();
  nlohmann::json half = gpu;
  half["train_iters"] = 2;
  const std::string checkpoint = run(smallGpt(half), save).second;
  QVERIFY(!checkpoint.empty());
  SessionOptions load;
  load.load = checkpoint;
  const std::vector<double> resumed = run(smallGpt(gpu), load).first;
  QCOMPARE(resumed.size(), std::size_t{2});
  for (std::size_t i = 0; i < resumed.size(); ++i)
    QVERIFY2(std::fabs(resumed[i] - straight[i + 2]) <= 1e-5 * std::fabs(straight[i + 2]),
             (std::to_string(resumed[i]) + " vs " + std::to_string(straight[i + 2])).c_str());

  const TrainConfig start = smallGpt(gpu);
  const std::vector<double> switched =
      run(start, {},
          planSwitches({"2:data_parallel_size=1,pipeline_model_parallel_size=2"}, start, 0))
          .first;
  QCOMPARE(switched.size(), straight.size());
  for (std::size_t i = 0; i < switched.size(); ++i)
    QVERIFY2(std::fabs(switched[i] - straight[i]) <= 1e-4 * std::fabs(straight[i]),
             (std::to_string(switched[i]) + " vs " + std::to_string(straight[i])).c_str());
}

// What a GPU does not run yet is refused before the model is built, all of it in one line; a
// run it does train, with no device visible, names the missing device.
void TestGpuGpt::trainerRefusesWhatAGpuDoesNotRunYet() {
  Allocator device(std::make_shared<HostAsDevice>());
  auto message = [&](const TrainConfig& c) {
    try {
      Trainer t(c, device);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  QCOMPARE(message(smallGpt(
               {{"bf16", {{"enabled", true}}},
                {"data_parallel_size", 9},
                {"zero_optimization", {{"stage", 3}, {"offload_param", {{"device", "cpu"}}}}},
                {"communication_data_type", "fp16"}})),
           std::string("config: device \"cuda\" runs the GPT with any parallel strategy, ZeRO and "
                       "precision, but not yet: 9 ranks (at most 8 share a GPU), "
                       "communication_data_type \"fp16\", zero_optimization.offload_param.device "
                       "\"cpu\""));
  QCOMPARE(
      message(smallGpt(
          {{"zero_optimization",
            {{"stage", 2}, {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", "/tmp"}}}}}})),
      std::string("config: device \"cuda\" runs the GPT with any parallel strategy, ZeRO and "
                  "precision, but not yet: zero_optimization.offload_optimizer.device "
                  "\"nvme\""));
  QCOMPARE(device.peakTotal(), 0);
  if (cuda::deviceCount() == 0) {
    QCOMPARE(message(smallGpt()), std::string("kernels: CUDA device 0 does not exist (0 visible)"));
    QCOMPARE(device.peakTotal(), 0);
  }
}

// A traced training step on the GPU, recorded as `train --trace` records one: every kernel, copy
// and memset CUPTI saw is in the file once, linked to the host span that launched it and
// starting after it (50 us allowed for the clocks' offset), and every launching span launched
// something.
void TestGpuGpt::tracedStepLinksEveryKernelToItsLaunch() {
#ifndef PARASCOPE_HAVE_CUPTI
  QSKIP("built without CUPTI");
#else
  REQUIRE_DEVICE("GPU tracing is built");
  const TrainConfig c = smallGpt();
  Allocator memory(cuda::deviceMemory(0));
  Trainer gpu(c, memory);
  gpu.step();  // plans and blocks made before the traced step
  QTemporaryDir dir;
  const std::string path = dir.filePath("step.json").toStdString();
  {
    profiler::TraceRecording recording(path, 1, profiler::makeCuptiActivitySource(), 0);
    gpu.step();
    recording.finish();
  }
  const profiler::TraceData t = profiler::importChromeTrace(path);
  using trace::Category;
  namespace lane = trace::lane;
  std::map<std::uint64_t, const trace::Event*> launches;
  for (const trace::Event& e : t.events) {
    if ((e.flags & trace::flag::kFlowSource) && !lane::isGpu(e.lane) && e.lane != lane::kRuntime)
      launches.emplace(e.correlation, &e);
  }
  QVERIFY(!launches.empty());
  std::set<std::uint64_t> launched;
  std::set<std::tuple<std::string, std::int64_t, std::int64_t, std::int32_t> > seen;
  for (const trace::Event& e : t.events) {
    if (!lane::isGpu(e.lane) || e.kind != trace::EventKind::Span) continue;
    if (e.category != Category::Compute && e.category != Category::Memcpy &&
        e.category != Category::Memset)
      continue;
    const auto it = launches.find(e.correlation);
    QVERIFY2(it != launches.end(), (std::string(e.name) + " has no launching span").c_str());
    QVERIFY2(e.startNs >= it->second->startNs - 50'000,
             (std::string(e.name) + " starts before " + it->second->name).c_str());
    QVERIFY2(seen.emplace(e.name, e.startNs, e.endNs, e.lane).second,
             (std::string(e.name) + " is in the trace twice").c_str());
    launched.insert(e.correlation);
  }
  for (const auto& [id, span] : launches)
    QVERIFY2(launched.count(id) == 1, (std::string(span->name) + " launched nothing").c_str());
  QCOMPARE(t.gpuDevices.at(0), 0);
#endif
}

// Two data-parallel ranks sharing the GPU, traced as `train --trace` traces them: each rank's
// model kernels run on one stream of its own, and the buckets' reductions on streams that are
// neither rank's compute stream (core/cuda/stream.h), so they can overlap the backward pass;
// both ranks' reductions are attributed to the rank that ran them.
void TestGpuGpt::ranksRunOnComputeStreamsOfTheirOwn() {
#ifndef PARASCOPE_HAVE_CUPTI
  QSKIP("built without CUPTI");
#else
  REQUIRE_DEVICE("GPU streams are built");
  QTemporaryDir dir;
  const std::string path = dir.filePath("d2.json").toStdString();
  SessionOptions options;
  options.evaluate = false;
  options.recorder = std::make_shared<profiler::RunTrace>(path);
  Session session(smallGpt({{"device", "cuda"}, {"data_parallel_size", 2}, {"train_iters", 2}}),
                  std::move(options));
  session.run();
  if (const auto failure = session.error()) QFAIL(failure->reason.c_str());
  const profiler::TraceData t = profiler::importChromeTrace(path);
  std::map<std::int32_t, std::set<std::int32_t> > computeLanes;  // rank -> lanes
  std::set<std::int32_t> reductionLanes, reducingRanks;
  for (const trace::Event& e : t.events) {
    if (!trace::lane::isGpu(e.lane) || e.kind != trace::EventKind::Span ||
        e.category != trace::Category::Compute)
      continue;
    if (std::string(e.name).find("reduceKernel") != std::string::npos) {
      reductionLanes.insert(e.lane);
      reducingRanks.insert(e.rank);
    } else {
      computeLanes[e.rank].insert(e.lane);
    }
  }
  QCOMPARE(computeLanes.size(), std::size_t{2});
  QCOMPARE(computeLanes[0].size(), std::size_t{1});
  QCOMPARE(computeLanes[1].size(), std::size_t{1});
  QVERIFY(*computeLanes[0].begin() != *computeLanes[1].begin());
  QVERIFY(!reductionLanes.empty());
  // Each rank reduces its chunk on its communication thread, and the kernels are its own.
  QCOMPARE(reducingRanks, (std::set<std::int32_t>{0, 1}));
  for (const auto& [rank, lanes] : computeLanes)
    QVERIFY2(!reductionLanes.count(*lanes.begin()),
             ("rank " + std::to_string(rank) + " reduces on its compute stream").c_str());
#endif
}

// ZeRO-Offload from the GPU (offload_optimizer cpu): the CPU's AdamW computes the GPU kernel's
// bits (test_gpu_kernels), so three steps of D2 with ZeRO 1, 2 and 3, bf16, pinned or not,
// take the losses of the same run with the optimizer on the GPU, exactly.
void TestGpuGpt::zeroOffloadMatchesTheGpuBitForBit() {
  REQUIRE_DEVICE("ZeRO-Offload is built");
  for (const int stage : {1, 2, 3}) {
    for (const bool pinned : {false, true}) {
      nlohmann::json doc = {{"device", "cuda"},
                            {"data_parallel_size", 2},
                            {"bf16", {{"enabled", true}}},
                            {"zero_optimization", {{"stage", stage}}}};
      const std::vector<double> onGpu = losses(doc);
      doc["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", pinned}};
      const std::vector<double> offloaded = losses(doc);
      QCOMPARE(offloaded.size(), std::size_t{3});
      QCOMPARE(offloaded, onGpu);
    }
  }
}

QTEST_GUILESS_MAIN(TestGpuGpt)
#include "test_gpu_gpt.moc"
