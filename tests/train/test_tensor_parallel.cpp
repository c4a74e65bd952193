// Tensor and sequence parallelism (Megatron splits) on in-process ranks: how a parameter is cut
// and reassembled, one micro-batch's gradients of every split layer against the unsplit
// model's, N steps of training against one rank for tensor x data meshes up to 8 ranks, and the
// configurations that are refused.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <mutex>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/config/pipeline_config.h"
#include "core/data/text_dataset.h"
#include "core/model/gpt_layers.h"
#include "core/parallel/mesh.h"
#include "core/parallel/tensor_parallel.h"
#include "dp_harness.h"

using namespace parascope;

class TestTensorParallel : public QObject {
  Q_OBJECT
 private slots:
  void cleanupTestCase();
  void splitPartsAreMegatrons();
  void gradientsMatchUnsplitLayers_data();
  void gradientsMatchUnsplitLayers();
  void trainingMatchesOneRank_data();
  void trainingMatchesOneRank();
  void evaluationMatchesOneRank();
  void recomputeLowersActivationPeak();
  void zeroBubbleHalvesSplitTheBlock();
  void invalidSplitsAreRefused();
};

void TestTensorParallel::cleanupTestCase() {
  std::filesystem::remove(dptest::textFixture());
}

// A 4 x 6 tensor holding 0..23, cut in 2 parts: hand-written expected parts.
void TestTensorParallel::splitPartsAreMegatrons() {
  std::vector<float> full(24);
  for (int i = 0; i < 24; ++i) full[static_cast<std::size_t>(i)] = static_cast<float>(i);
  auto part = [&](TensorSplit s) {
    std::vector<float> local(12);
    copySplitPart(full.data(), local.data(), {4, 6}, s);
    std::vector<float> back(24, -1.0f);
    placeSplitPart(local.data(), back.data(), {4, 6}, s);
    return std::make_pair(local, back);
  };
  using V = std::vector<float>;
  // Column-parallel (output rows): rank 1 holds rows 2, 3.
  QCOMPARE(part({0, 2, 1, 1}).first, V({12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}));
  // Two stacked blocks (rows 0-1 | rows 2-3), each cut: rank 1 holds row 1 and row 3.
  QCOMPARE(part({0, 2, 1, 2}).first, V({6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23}));
  // Row-parallel (input columns): rank 0 holds columns 0-2 of every row.
  const auto [cols, back] = part({1, 2, 0, 1});
  QCOMPARE(cols, V({0, 1, 2, 6, 7, 8, 12, 13, 14, 18, 19, 20}));
  QCOMPARE(back[3], -1.0f);  // placed back only where the part came from
  QCOMPARE(back[20], 20.0f);
  QCOMPARE(TensorSplit({1, 3, 0, 1}).localShape({4, 6}), Shape({4, 2}));
}

namespace {

// The tiny GPT of `c` as one rank of `world` builds it, initialized, with its text: for tests
// that drive the layers themselves.
struct SplitGpt {
  DeviceMesh mesh;
  Model model;
  TextDataset data;
  SplitGpt(const TrainConfig& c, const Communicator& world, Allocator& a)
      : mesh(world, c.parallel),
        model(a),
        data(c.data.path, c.model.gpt.contextLength, c.data.validationFraction, c.seed) {
    buildGptTensorParallel(
        model, c.model.gpt,
        std::make_shared<TensorParallelRegion>(mesh.tensor(), c.parallel.sequenceParallel, a),
        pipelineRankLayers(c, world.rank()));
    model.initialize(c.seed);
  }
};

bool close(double want, double got) {
  return std::fabs(got - want) <= 4e-5 + 1e-5 * std::fabs(want);
}

}  // namespace

void TestTensorParallel::gradientsMatchUnsplitLayers_data() {
  QTest::addColumn<int>("tensor");
  QTest::addColumn<bool>("sequence");
  for (int t : {2, 4})
    for (bool sp : {false, true}) QTest::addRow("tp%d%s", t, sp ? "-sp" : "") << t << sp;
}

// The tensor-parallel model on t ranks and the single-rank model, same weights and batch (one
// micro-batch): every parameter's gradient (attention heads, MLP columns and rows, vocabulary
// rows, layernorms, biases) and the loss agree within rtol 1e-5 / atol 4e-5.
void TestTensorParallel::gradientsMatchUnsplitLayers() {
  QFETCH(int, tensor);
  QFETCH(bool, sequence);
  // 4 heads so that t = 4 splits them; a vocabulary and MLP width divisible by 4.
  const std::vector<std::string> model = {"model.num_attention_heads=4", "train_batch_size=4",
                                          "train_micro_batch_size_per_gpu=4"};
  const dptest::RunRecord want = dptest::train(dptest::tinyConfig(model), 1);
  std::vector<std::string> split = model;
  split.push_back("tensor_model_parallel_size=" + std::to_string(tensor));
  split.push_back(std::string("sequence_parallel=") + (sequence ? "true" : "false"));
  std::mutex mu;
  std::string failure;
  runInProcess(tensor, [&](Communicator& world) {
    const dptest::RunRecord got = dptest::train(dptest::tinyConfig(split, tensor), 1, world);
    const std::string diff = dptest::compare(want, got);
    std::lock_guard lock(mu);
    if (!diff.empty()) failure = "rank " + std::to_string(world.rank()) + ": " + diff;
  });
  QVERIFY2(failure.empty(), failure.c_str());
}

void TestTensorParallel::trainingMatchesOneRank_data() {
  QTest::addColumn<int>("tensor");
  QTest::addColumn<int>("data");
  QTest::addColumn<bool>("sequence");
  QTest::addColumn<QStringList>("extra");
  QTest::addRow("tp2") << 2 << 1 << false << QStringList();
  QTest::addRow("tp2-sp") << 2 << 1 << true << QStringList();
  QTest::addRow("tp4") << 4 << 1 << false << QStringList();
  QTest::addRow("tp4-sp-accum2") << 4 << 1 << true << QStringList{"gradient_accumulation_steps=2"};
  QTest::addRow("tp2-dp2") << 2 << 2 << false << QStringList();
  QTest::addRow("tp2-dp2-sp-zero1") << 2 << 2 << true << QStringList{"zero_optimization.stage=1"};
  QTest::addRow("tp4-dp2-sp") << 4 << 2 << true << QStringList();
  const QString small = "zero_optimization.reduce_bucket_size=3000";  // several buckets
  QTest::addRow("tp2-dp2-zero2-accum2")
      << 2 << 2 << false
      << QStringList{"zero_optimization.stage=2", small, "gradient_accumulation_steps=2"};
  QTest::addRow("tp2-dp2-sp-zero3")
      << 2 << 2 << true << QStringList{"zero_optimization.stage=3", small};
  QTest::addRow("tp4-dp2-zero3") << 4 << 2 << false << QStringList{"zero_optimization.stage=3"};
  QTest::addRow("tp2-zero2") << 2 << 1 << false << QStringList{"zero_optimization.stage=2"};
}

// Three optimizer steps (AdamW, clipping) on a tensor x data mesh: each step's loss and every
// logical gradient, then every logical parameter, match one rank with the same global batch.
// Why rtol 1e-5 / atol 4e-5 holds on any CPU: split matmuls and the tensor group's sums only
// reorder fp32 additions (relative error ~1e-7 of the summands, whichever GEMM kernels run),
// and the harness's eps 1e-2 keeps AdamW from amplifying that (dp_harness.h).
void TestTensorParallel::trainingMatchesOneRank() {
  QFETCH(int, tensor);
  QFETCH(int, data);
  QFETCH(bool, sequence);
  QFETCH(QStringList, extra);
  std::vector<std::string> common = {"model.num_attention_heads=4"};
  for (const QString& e : extra) common.push_back(e.toStdString());
  const dptest::RunRecord want = dptest::train(dptest::tinyConfig(common), 3);
  std::vector<std::string> split = common;
  split.push_back("tensor_model_parallel_size=" + std::to_string(tensor));
  split.push_back("data_parallel_size=" + std::to_string(data));
  split.push_back(std::string("sequence_parallel=") + (sequence ? "true" : "false"));
  const TrainConfig c = dptest::tinyConfig(split);
  std::mutex mu;
  std::vector<std::string> diffs;
  runInProcess(tensor * data, [&](Communicator& world) {
    Allocator a;
    const dptest::RunRecord got = dptest::train(c, 3, world, &a);
    std::string diff = dptest::compare(want, got);
    // AdamW's update does not see a gradient's scale, so the norm is compared on its own.
    for (std::size_t i = 0; diff.empty() && i < got.reports.size(); ++i) {
      const double norm = got.reports[i].gradNorm, one = want.reports[i].gradNorm;
      if (std::fabs(norm - one) > 1e-5 * one) {
        diff = "step " + std::to_string(i) + " gradient norm " + std::to_string(norm) +
               ", one rank " + std::to_string(one);
      }
    }
    std::lock_guard lock(mu);
    if (!diff.empty()) diffs.push_back("rank " + std::to_string(world.rank()) + ": " + diff);
  });
  QVERIFY2(diffs.empty(), diffs.empty() ? "" : diffs.front().c_str());
}

// Validation loss, targets and accuracy (the vocabulary-parallel argmax) after a step, as on one
// rank.
void TestTensorParallel::evaluationMatchesOneRank() {
  const std::vector<std::string> model = {"model.num_attention_heads=4", "eval_interval=1"};
  const EvalReport one = dptest::evaluateAfterOneStep(dptest::tinyConfig(model)).at(0);
  std::vector<std::string> split = model;
  split.insert(split.end(), {"tensor_model_parallel_size=4", "sequence_parallel=true"});
  for (const EvalReport& r : dptest::evaluateAfterOneStep(dptest::tinyConfig(split))) {
    QCOMPARE(r.targets, one.targets);
    QVERIFY2(close(one.loss, r.loss), qPrintable(QString::number(r.loss)));
    QCOMPARE(r.accuracy, one.accuracy);
  }
}

// One step on t = 2 with each recompute mode: the same loss, and a lower peak of activation
// memory for selective (the attention core recomputed) and lower still for full (each layer's
// input kept).
void TestTensorParallel::recomputeLowersActivationPeak() {
  std::map<std::string, std::pair<double, std::int64_t>> runs;
  for (const char* mode : {"none", "selective", "full"}) {
    const TrainConfig c = dptest::tinyConfig(
        {"model.num_attention_heads=4", "tensor_model_parallel_size=2", "sequence_parallel=true",
         std::string("recompute_granularity=") + mode});
    std::vector<std::pair<double, std::int64_t>> ranks(2);
    runInProcess(2, [&](Communicator& world) {
      const StepReport r = dptest::train(c, 1, world).reports.at(0);
      ranks[static_cast<std::size_t>(world.rank())] = {
          r.loss, r.peakBytes[static_cast<std::size_t>(MemoryCategory::Activation)]};
    });
    QCOMPARE(ranks[0], ranks[1]);
    runs[mode] = ranks[0];
  }
  qInfo("activation peak per rank: none %lld, selective %lld, full %lld bytes",
        static_cast<long long>(runs["none"].second),
        static_cast<long long>(runs["selective"].second),
        static_cast<long long>(runs["full"].second));
  QCOMPARE(runs["selective"].first, runs["none"].first);
  QCOMPARE(runs["full"].first, runs["none"].first);
  QVERIFY2(runs["selective"].second < runs["none"].second,
           qPrintable(QString("%1 vs %2").arg(runs["selective"].second).arg(runs["none"].second)));
  QVERIFY2(runs["full"].second < runs["selective"].second,
           qPrintable(QString("%1 vs %2").arg(runs["full"].second).arg(runs["selective"].second)));
}

// ZB-H1's halves of a tensor-parallel block (t = 2, sequence parallel): the input half leaves
// every parameter gradient untouched and returns the whole backward's input gradient; the
// weight half then gives every gradient exactly as the whole backward does.
void TestTensorParallel::zeroBubbleHalvesSplitTheBlock() {
  const TrainConfig c = dptest::tinyConfig(
      {"model.num_attention_heads=4", "tensor_model_parallel_size=2", "sequence_parallel=true"});
  std::mutex mu;
  std::vector<std::string> problems;
  runInProcess(2, [&](Communicator& world) {
    Allocator a;
    SplitGpt gpt(c, world, a);
    Model& m = gpt.model;
    const Batch b = gpt.data.batch(Split::Train, 0, c.microBatch, a);
    Layer& block = *m.layers()[1];
    Activations e;
    const Tensor x = m.layers()[0]->forward(b.inputs, b, e);
    auto grads = [&] {
      std::vector<float> all;
      for (Parameter* p : block.parameters())
        all.insert(all.end(), p->grad.data<float>(), p->grad.data<float>() + p->numel());
      return all;
    };
    auto run = [&](bool split, std::vector<float>* beforeWeights) {
      m.zeroGrad();
      Activations keep;
      const Tensor y = block.forward(x, b, keep);
      Tensor dy = Tensor::empty(y.shape(), DType::F32, MemoryCategory::Activation, a);
      for (std::int64_t i = 0; i < dy.numel(); ++i)
        dy.data<float>()[i] = 0.01f * static_cast<float>(i % 7) - 0.03f;
      Tensor dx;
      if (split) {
        dx = block.backwardInput(dy, b, keep);
        *beforeWeights = grads();
        block.backwardWeight(b, keep);
      } else {
        dx = block.backward(dy, b, keep);
      }
      return std::make_pair(dx, grads());
    };
    std::vector<float> afterInput;
    const auto [dxWhole, gradsWhole] = run(false, nullptr);
    const auto [dxSplit, gradsSplit] = run(true, &afterInput);
    const bool sameDx = std::equal(dxWhole.data<float>(), dxWhole.data<float>() + dxWhole.numel(),
                                   dxSplit.data<float>());
    const bool untouched =
        std::all_of(afterInput.begin(), afterInput.end(), [](float g) { return g == 0.0f; });
    std::lock_guard lock(mu);
    if (!block.splitsBackward()) problems.push_back("the block does not split its backward");
    if (!sameDx) problems.push_back("input gradients differ");
    if (!untouched) problems.push_back("the input half wrote parameter gradients");
    if (gradsSplit != gradsWhole) problems.push_back("weight gradients differ");
  });
  QVERIFY2(problems.empty(), problems.empty() ? "" : problems.front().c_str());
}

void TestTensorParallel::invalidSplitsAreRefused() {
  auto refused = [](const std::vector<std::string>& overrides, const char* fragment) {
    try {
      dptest::tinyConfig(overrides);
    } catch (const UserError& e) {
      if (std::string(e.what()).find(fragment) != std::string::npos) return std::string();
      return std::string("message '") + e.what() + "' lacks '" + fragment + "'";
    }
    return std::string("accepted: ") + overrides.front();
  };
  const std::vector<std::pair<std::vector<std::string>, const char*>> cases = {
      {{"tensor_model_parallel_size=4"},
       "model.num_attention_heads (2) must be divisible by tensor_model_parallel_size (4)"},
      {{"tensor_model_parallel_size=2", "model.num_attention_heads=4", "model.vocab_size=255",
        "data.path=/dev/null"},
       "model.vocab_size (255) must be divisible by tensor_model_parallel_size (2)"},
      {{"sequence_parallel=true"}, "sequence_parallel = true needs tensor_model_parallel_size > 1"},
      {{"tensor_model_parallel_size=2", "sequence_parallel=true", "model.context_length=15"},
       "with sequence_parallel, model.context_length (15) must be divisible by "
       "tensor_model_parallel_size (2)"},
  };
  for (const auto& [overrides, fragment] : cases) {
    const std::string problem = refused(overrides, fragment);
    QVERIFY2(problem.empty(), problem.c_str());
  }
}

QTEST_GUILESS_MAIN(TestTensorParallel)
#include "test_tensor_parallel.moc"
