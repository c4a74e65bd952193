// Whole-model checks: the GPT's loss and every gradient against PyTorch (fixture written by
// tests/tools/make_gpt_reference.py), parameter naming and counting, and layout-independent
// initialisation.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/io/safetensors.h"
#include "core/model/gpt.h"
#include "core/model/mlp.h"

using namespace parascope;

class TestModel : public QObject {
  Q_OBJECT
 private slots:
  void gptMatchesPyTorch();
  void gptParameterCountAndFlops();
  void initialisationDependsOnlyOnSeedAndName();
  void stepGradientsOverwriteWhatTheMemoryHeld();
  void mlpShapesAndLossAtInit();
};

namespace {
void expectClose(const QString& what, const float* got, const float* want, std::int64_t n,
                 double rtol, double atol) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (diff > atol + rtol * std::fabs(static_cast<double>(want[i]))) {
      QFAIL(qPrintable(QString("%1[%2]: got %3, PyTorch %4")
                           .arg(what)
                           .arg(i)
                           .arg(static_cast<double>(got[i]), 0, 'g', 9)
                           .arg(static_cast<double>(want[i]), 0, 'g', 9)));
    }
  }
}
}  // namespace

void TestModel::gptMatchesPyTorch() {
  const SafetensorsFile ref =
      readSafetensors(PARASCOPE_SOURCE_DIR "/tests/fixtures/gpt_reference.safetensors");
  const auto cfg = nlohmann::json::parse(ref.metadata.at("config"));
  GptConfig c;
  c.vocabSize = cfg["vocab_size"];
  c.contextLength = cfg["context_length"];
  c.hiddenSize = cfg["hidden_size"];
  c.numHeads = cfg["num_attention_heads"];
  c.numLayers = cfg["num_layers"];
  c.mlpRatio = cfg["mlp_ratio"];
  Model model;
  buildGpt(model, c);
  for (Parameter& p : model.parameters()) p.value.copyFrom(ref.tensors.at("weight/" + p.name));

  const Tensor& tokens = ref.tensors.at("tokens");
  const int B = static_cast<int>(tokens.dim(0)), T = static_cast<int>(tokens.dim(1)) - 1;
  Batch batch;
  batch.inputs = Tensor::empty({B, T}, DType::I32, MemoryCategory::Workspace);
  batch.targets = Tensor::empty({B, T}, DType::I32, MemoryCategory::Workspace);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      batch.inputs.data<std::int32_t>()[b * T + t] = tokens.data<std::int32_t>()[b * (T + 1) + t];
      batch.targets.data<std::int32_t>()[b * T + t] =
          tokens.data<std::int32_t>()[b * (T + 1) + t + 1];
    }
  }
  batch.lossWeight = 1.0f / static_cast<float>(B * T);
  const MicroBatchResult r = model.forwardBackward(batch);
  const auto loss = static_cast<float>(r.lossSum / static_cast<double>(r.targets));
  expectClose("loss", &loss, ref.tensors.at("loss").data<float>(), 1, 1e-5, 1e-6);
  int checked = 0;
  for (const Parameter& p : model.parameters()) {
    const Tensor& g = ref.tensors.at("grad/" + p.name);
    QCOMPARE(g.shape(), p.shape);
    expectClose(QString::fromStdString("grad " + p.name), p.grad.data<float>(), g.data<float>(),
                g.numel(), 1e-5, 1e-6);
    ++checked;
  }
  QCOMPARE(checked, 4 + 12 * c.numLayers);
}

void TestModel::gptParameterCountAndFlops() {
  GptConfig c;  // GPT-mini: 4 layers, width 256, 4 heads, context 128, vocab 256
  Model model;
  buildGpt(model, c);
  // Per block 12 C^2 + 13 C; plus wte, wpe and the final norm.
  const std::int64_t C = 256;
  const std::int64_t perBlock = 12 * C * C + 13 * C;
  QCOMPARE(model.parameterCount(), 256 * C + 128 * C + 4 * perBlock + 2 * C);
  QCOMPARE(c.nonEmbeddingPositionParameters(), model.parameterCount() - 128 * C);
  QCOMPARE(c.flopsPerToken(),
           6.0 * static_cast<double>(model.parameterCount() - 128 * C) + 12.0 * 4 * 128 * 256);
  QVERIFY(model.find("h.3.mlp.c_proj.weight") != nullptr);
  QCOMPARE(model.find("h.3.mlp.c_proj.weight")->shape, (Shape{C, 4 * C}));
  QCOMPARE(model.layers().size(), std::size_t{6});  // embedding, 4 blocks, head
}

void TestModel::initialisationDependsOnlyOnSeedAndName() {
  GptConfig small{64, 16, 32, 4, 2, 4};
  GptConfig deeper = small;
  deeper.numLayers = 3;
  Model a, b;
  buildGpt(a, small);
  buildGpt(b, deeper);
  a.initialize(7);
  b.initialize(7);
  // Same name, same values, though the models differ in depth (and so in parameter order).
  const Parameter* pa = a.find("h.1.attn.c_attn.weight");
  const Parameter* pb = b.find("h.1.attn.c_attn.weight");
  QCOMPARE(std::memcmp(pa->value.raw(), pb->value.raw(), pa->value.nbytes()), 0);
  // Statistics of the normal init: std 0.02.
  double sq = 0;
  for (std::int64_t i = 0; i < pa->numel(); ++i)
    sq += pa->value.data<float>()[i] * pa->value.data<float>()[i];
  QVERIFY(std::fabs(std::sqrt(sq / static_cast<double>(pa->numel())) - 0.02) < 0.001);
  QCOMPARE(a.find("h.0.ln_1.weight")->value.data<float>()[5], 1.0f);
}

// A step's gradients from startGradients, over memory full of NaNs, against zeroGrad's, over two
// micro-batches (the first overwrites the linear weights' gradients, the second adds to them):
// the same bits. settleGradients zeroes a stale gradient no backward pass wrote.
void TestModel::stepGradientsOverwriteWhatTheMemoryHeld() {
  const GptConfig c{64, 16, 32, 4, 2, 4};
  Model zeroed, started;
  buildGpt(zeroed, c);
  buildGpt(started, c);
  zeroed.initialize(3);
  started.initialize(3);
  auto batch = [&](int seed) {
    Batch b;
    b.inputs = Tensor::empty({2, c.contextLength}, DType::I32, MemoryCategory::Workspace);
    b.targets = Tensor::empty({2, c.contextLength}, DType::I32, MemoryCategory::Workspace);
    for (std::int64_t i = 0; i < b.inputs.numel(); ++i) {
      b.inputs.data<std::int32_t>()[i] = static_cast<std::int32_t>((i * 7 + seed) % c.vocabSize);
      b.targets.data<std::int32_t>()[i] = static_cast<std::int32_t>((i * 5 + seed) % c.vocabSize);
    }
    b.lossWeight = 1.0f / static_cast<float>(b.targets.numel());
    return b;
  };
  auto fillNaN = [](Model& m) {
    for (Parameter& p : m.parameters()) {
      float* g = p.grad.data<float>();
      std::fill(g, g + p.numel(), std::numeric_limits<float>::quiet_NaN());
    }
  };
  zeroed.zeroGrad();
  fillNaN(started);
  started.startGradients();
  const Parameter* weight = started.find("h.1.mlp.c_fc.weight");
  QVERIFY(weight->gradStale);
  QVERIFY(!started.find("h.1.mlp.c_fc.bias")->gradStale);
  QCOMPARE(started.find("h.1.mlp.c_fc.bias")->grad.data<float>()[0], 0.0f);
  for (const int seed : {1, 2}) {
    zeroed.forwardBackward(batch(seed));
    started.forwardBackward(batch(seed));
  }
  QVERIFY(!weight->gradStale);
  started.settleGradients();
  for (std::size_t i = 0; i < zeroed.parameters().size(); ++i) {
    const Parameter& a = zeroed.parameters()[i];
    const Parameter& b = started.parameters()[i];
    QVERIFY2(std::memcmp(a.grad.raw(), b.grad.raw(), a.grad.nbytes()) == 0, a.name.c_str());
  }
  fillNaN(started);
  started.startGradients();
  started.settleGradients();
  QCOMPARE(weight->grad.data<float>()[weight->numel() - 1], 0.0f);
  QVERIFY(!weight->gradStale);
}

void TestModel::mlpShapesAndLossAtInit() {
  Model m;
  buildMlp(m, MlpConfig{});
  m.initialize(1);
  QCOMPARE(m.parameterCount(), std::int64_t{784 * 256 + 256 + 256 * 10 + 10});
  Batch batch;
  batch.inputs = Tensor::zeros({3, 784}, DType::F32, MemoryCategory::Workspace);
  batch.targets = Tensor::zeros({3}, DType::I32, MemoryCategory::Workspace);
  batch.lossWeight = 1.0f / 3;
  const MicroBatchResult r = m.evaluate(batch);
  QCOMPARE(r.targets, std::int64_t{3});
  // Zero input: every row gets the same logits, so the same loss, near ln 10 at init.
  QVERIFY(std::fabs(r.lossSum / 3 - std::log(10.0)) < 0.5);
  Batch wrong = batch;
  wrong.inputs = Tensor::zeros({3, 100}, DType::F32, MemoryCategory::Workspace);
  QVERIFY_THROWS_EXCEPTION(UserError, m.evaluate(wrong));
}

QTEST_GUILESS_MAIN(TestModel)
#include "test_model.moc"
