// The GPT layers' zero-bubble split: backwardInput returns exactly backward's input gradient and
// leaves every weight gradient untouched (the weight GEMMs really are deferred); backwardWeight
// then accumulates exactly backward's weight gradients. Selective recompute gives the same
// gradients as keeping everything.
#include <QtTest>

#include <string>
#include <vector>

#include "core/common/random.h"
#include "core/model/gpt.h"

using namespace parascope;

class TestPipelineLayers : public QObject {
  Q_OBJECT
 private slots:
  void splitBackwardMatchesBackward();
  void selectiveRecomputeMatchesKeepingAll();
};

namespace {

constexpr int B = 2, T = 8;

GptConfig tinyGpt() {
  GptConfig c;
  c.contextLength = T;
  c.hiddenSize = 16;
  c.numHeads = 2;
  c.numLayers = 2;
  return c;
}

Batch randomBatch(Allocator& a) {
  Batch b;
  b.inputs = Tensor::empty({B, T}, DType::I32, MemoryCategory::Activation, a);
  b.targets = Tensor::empty({B, T}, DType::I32, MemoryCategory::Activation, a);
  Rng rng(3);
  for (int i = 0; i < B * T; ++i) {
    b.inputs.data<std::int32_t>()[i] = static_cast<std::int32_t>(rng.uniform() * 256) % 256;
    b.targets.data<std::int32_t>()[i] = static_cast<std::int32_t>(rng.uniform() * 256) % 256;
  }
  b.lossWeight = 1.0f / (B * T);
  return b;
}

std::vector<float> values(const Tensor& t) {
  return {t.data<float>(), t.data<float>() + t.numel()};
}

std::vector<std::vector<float>> gradients(const Model& m) {
  std::vector<std::vector<float>> out;
  for (const Parameter& p : m.parameters()) out.push_back(values(p.grad));
  return out;
}

// Forward through all layers, then each layer's backward from the head down, split or whole.
// Returns every input gradient (the embedding's is undefined); `problem` names a layer whose
// input half is not split or writes weight gradients.
std::vector<std::vector<float>> backwardPass(Model& m, const Batch& b, bool split,
                                             std::string* problem = nullptr) {
  const auto& layers = m.layers();
  std::vector<Activations> keep(layers.size());
  Tensor x = b.inputs;
  for (std::size_t i = 0; i < layers.size(); ++i) x = layers[i]->forward(x, b, keep[i]);
  std::vector<std::vector<float>> dxs;
  Tensor dy;
  for (std::size_t i = layers.size(); i-- > 0;) {
    if (!split) {
      dy = layers[i]->backward(dy, b, keep[i]);
    } else {
      const auto before = gradients(m);
      if (!layers[i]->splitsBackward()) *problem += layers[i]->name() + " does not split; ";
      dy = layers[i]->backwardInput(dy, b, keep[i]);
      if (before != gradients(m)) *problem += layers[i]->name() + " wrote weight gradients; ";
      layers[i]->backwardWeight(b, keep[i]);
    }
    if (dy.defined()) dxs.push_back(values(dy));
  }
  return dxs;
}

}  // namespace

void TestPipelineLayers::splitBackwardMatchesBackward() {
  Allocator a;
  Model whole(a), split(a);
  buildGpt(whole, tinyGpt());
  buildGpt(split, tinyGpt());
  whole.initialize(9);
  split.initialize(9);
  const Batch b = randomBatch(a);
  const auto dxWhole = backwardPass(whole, b, false);
  std::string problem;
  const auto dxSplit = backwardPass(split, b, true, &problem);
  QVERIFY2(problem.empty(), problem.c_str());
  QCOMPARE(dxSplit, dxWhole);
  QCOMPARE(gradients(split), gradients(whole));
  double norm = 0;
  for (const auto& g : gradients(whole)) {
    for (float v : g) norm += static_cast<double>(v) * v;
  }
  QVERIFY(norm > 0);  // the comparison is not between zeros
}

void TestPipelineLayers::selectiveRecomputeMatchesKeepingAll() {
  Allocator a;
  Model all(a), selective(a);
  buildGpt(all, tinyGpt());
  buildGpt(selective, tinyGpt());
  all.initialize(9);
  selective.initialize(9);
  for (const auto& layer : selective.layers()) layer->setSelectiveRecompute(true);
  const Batch b = randomBatch(a);
  QCOMPARE(backwardPass(selective, b, false), backwardPass(all, b, false));
  QCOMPARE(gradients(selective), gradients(all));
}

QTEST_GUILESS_MAIN(TestPipelineLayers)
#include "test_pipeline_layers.moc"
