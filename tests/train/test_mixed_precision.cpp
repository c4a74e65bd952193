// Mixed-precision training (bf16 / fp16 with fp32 master weights) over in-process ranks: the
// fp16 keys refused with their names; a hand-built two-layer model whose stored values,
// activations and gradients are checked bit for bit against an independent computation;
// DeepSpeed's dynamic loss-scale rule on fixed overflow patterns; equivalence with one fp32 rank
// per step (losses, gradients) within the low-precision tolerance for DP 1 and 2 and ZeRO 0 to 3;
// model-state bytes per category (2 + 2 + 12 per parameter, sharded by stage); an injected overflow
// skipping the step on every rank.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/ops.h"
#include "core/kernels/precision.h"
#include "core/kernels/sgemm_library.h"
#include "core/model/gpt.h"
#include "core/session/rank_hooks.h"
#include "core/train/loss_scaler.h"
#include "dp_harness.h"

using namespace parascope;
using dptest::tinyConfig;

class TestMixedPrecision : public QObject {
  Q_OBJECT
 private slots:
  void cleanupTestCase();
  void refusesInvalidConfigs_data();
  void refusesInvalidConfigs();
  void readsPrecisionKeys();
  void bulkConversionsMatchScalar_data();
  void bulkConversionsMatchScalar();
  void modelRoundsLikeTheLowType_data();
  void modelRoundsLikeTheLowType();
  void modelKeepsTheLowType_data();
  void modelKeepsTheLowType();
  void modelKeepsExactTensorsAsComputed();
  void modelKeepsALayersInputInTheLowType();
  void gptHeadWorksInChunksOfRows_data();
  void gptHeadWorksInChunksOfRows();
  void lossScalerFollowsDeepSpeed_data();
  void lossScalerFollowsDeepSpeed();
  void lossScalerStopsAtMinimum();
  void matchesFp32OneRank_data();
  void matchesFp32OneRank();
  void modelStateBytes_data();
  void modelStateBytes();
  void overflowSkipsStepOnEveryRank_data();
  void overflowSkipsStepOnEveryRank();
  void hugeInitialScaleBacksOff();
};

namespace {

std::vector<std::string> strings(const QStringList& l) {
  std::vector<std::string> o;
  for (const QString& s : l) o.push_back(s.toStdString());
  return o;
}

std::vector<dptest::RunRecord> trainRanks(
    const TrainConfig& c, int steps, const std::function<void(Trainer&, int rank)>& setup = {}) {
  std::vector<dptest::RunRecord> records(static_cast<std::size_t>(c.parallel.worldSize()));
  runInProcess(c.parallel.worldSize(), [&](Communicator& world) {
    Allocator allocator;
    dptest::RunOptions run{.world = world, .allocator = &allocator};
    if (setup) run.built = [&](Trainer& t) { setup(t, world.rank()); };
    records[static_cast<std::size_t>(world.rank())] = dptest::train(c, steps, run);
  });
  return records;
}

// Every parameter's value, whole (ZeRO-3 shards gathered), in the model's order.
std::vector<float> parameterValues(Trainer& t) {
  t.gatherParameters();
  std::vector<float> all;
  for (const Parameter& p : t.model().parameters()) {
    all.insert(all.end(), p.value.data<float>(), p.value.data<float>() + p.numel());
  }
  return all;
}

float rounded(float v, DType t) {
  roundTrip({&v, 1}, t);
  return v;
}

bool representable(const float* v, std::int64_t n, DType t) {
  for (std::int64_t i = 0; i < n; ++i) {
    // Bit patterns, so that -0 and +0 differ as the stored 16-bit values do.
    if (std::bit_cast<std::uint32_t>(v[i]) != std::bit_cast<std::uint32_t>(rounded(v[i], t)))
      return false;
  }
  return true;
}

// y = x * w elementwise; keeps x and an extra unrounded y / 3, and checks in backward that the
// model rounded what it kept and the incoming gradient. With `exactThird` it marks y / 3 exact
// (Activations::exact) and checks that it comes back as computed instead.
class ScaleLayer final : public Layer {
 public:
  ScaleLayer(Model& m, const std::string& name, DType low, bool* allRounded,
             bool exactThird = false)
      : name_(name),
        w_(m.find(name)),
        alloc_(m.allocator()),
        low_(low),
        ok_(allRounded),
        exactThird_(exactThird) {}
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {w_}; }
  Tensor forward(const Tensor& x, const Batch&, Activations& keep) override {
    Tensor y = Tensor::empty(x.shape(), DType::F32, MemoryCategory::Activation, alloc_);
    Tensor third = Tensor::empty(x.shape(), DType::F32, MemoryCategory::Activation, alloc_);
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      y.data<float>()[i] = x.data<float>()[i] * w_->value.data<float>()[i];
      third.data<float>()[i] = y.data<float>()[i] / 3.0f;
    }
    keep.saved = {x, third};
    if (exactThird_) {
      keep.exact = {1};
      computedThird_.assign(third.data<float>(), third.data<float>() + third.numel());
    }
    return y;
  }
  Tensor backward(const Tensor& dy, const Batch&, Activations& keep) override {
    std::vector<Tensor> rounded = {keep.saved[0], dy};
    if (!exactThird_) rounded.push_back(keep.saved[1]);
    for (const Tensor& t : rounded) *ok_ = *ok_ && representable(t.data<float>(), t.numel(), low_);
    if (exactThird_) {
      const float* third = keep.saved[1].data<float>();
      *ok_ = *ok_ && std::equal(computedThird_.begin(), computedThird_.end(), third);
    }
    *ok_ = *ok_ && representable(w_->value.data<float>(), w_->numel(), low_);
    const Tensor& x = keep.saved[0];
    Tensor dx = Tensor::empty(x.shape(), DType::F32, MemoryCategory::Activation, alloc_);
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      w_->grad.data<float>()[i] += dy.data<float>()[i] * x.data<float>()[i];
      dx.data<float>()[i] = dy.data<float>()[i] * w_->value.data<float>()[i];
    }
    return dx;
  }

 private:
  std::string name_;
  Parameter* w_;
  Allocator& alloc_;
  DType low_;
  bool* ok_;
  bool exactThird_;
  std::vector<float> computedThird_;
};

// ScaleLayers on parameters w0 and w1 of 3 elements each, in that order.
void addScaleLayers(Model& m, DType low, bool* allRounded) {
  for (const char* name : {"w0", "w1"})
    m.addParameter(name, {3}, {ParameterInit::Kind::Normal, 0.7f}, true);
  for (const char* name : {"w0", "w1"})
    m.addLayer(std::make_unique<ScaleLayer>(m, name, low, allRounded));
}

// losses = x / 3 per element, in f32.
class ThirdLoss final : public LossLayer {
 public:
  explicit ThirdLoss(Allocator& a) : alloc_(a) {}
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {}; }
  Tensor forward(const Tensor& x, const Batch&, Activations&) override {
    Tensor l = Tensor::empty(x.shape(), DType::F32, MemoryCategory::Activation, alloc_);
    for (std::int64_t i = 0; i < x.numel(); ++i) l.data<float>()[i] = x.data<float>()[i] / 3.0f;
    return l;
  }
  Tensor backward(const Tensor&, const Batch& b, Activations&) override {
    Tensor dx = Tensor::empty(b.inputs.shape(), DType::F32, MemoryCategory::Activation, alloc_);
    for (std::int64_t i = 0; i < dx.numel(); ++i) dx.data<float>()[i] = b.lossWeight / 3.0f;
    return dx;
  }
  std::int64_t correct(const Batch&, const Activations&) const override { return 0; }

 private:
  std::string name_ = "loss";
  Allocator& alloc_;
};

}  // namespace

void TestMixedPrecision::cleanupTestCase() {
  std::filesystem::remove(dptest::textFixture());
}

void TestMixedPrecision::refusesInvalidConfigs_data() {
  QTest::addColumn<QStringList>("overrides");
  QTest::addColumn<QString>("message");
  QTest::newRow("min above initial")
      << QStringList{"fp16.enabled=true", "fp16.initial_scale_power=4", "fp16.min_loss_scale=32"}
      << "config: fp16.min_loss_scale (32) exceeds the initial loss scale "
         "2^fp16.initial_scale_power = 2^4; valid: min_loss_scale <= 2^initial_scale_power";
  QTest::newRow("min zero") << QStringList{"fp16.enabled=true", "fp16.min_loss_scale=0"}
                            << "config: fp16.min_loss_scale = 0 would let the loss scale reach "
                               "0; valid: > 0";
  QTest::newRow("hysteresis zero")
      << QStringList{"fp16.enabled=true", "fp16.hysteresis=0"}
      << "config: fp16.hysteresis = 0 is out of range; allowed 1..1048576";
  QTest::newRow("window zero") << QStringList{"fp16.enabled=true", "fp16.loss_scale_window=0"}
                               << "config: fp16.loss_scale_window = 0 is out of range; allowed "
                                  "1..1073741824";
  QTest::newRow("unknown fp16 key")
      << QStringList{"fp16.enabled=true", "fp16.loss_scale_windo=10"}
      << "config: unknown key 'fp16.loss_scale_windo'; allowed here: consecutive_hysteresis, "
         "enabled, hysteresis, initial_scale_power, loss_scale, loss_scale_window, "
         "min_loss_scale";
  QTest::newRow("unknown bf16 key")
      << QStringList{"bf16.enabled=true", "bf16.hysteresis=2"}
      << "config: unknown key 'bf16.hysteresis'; allowed here: enabled";
  QTest::newRow("both") << QStringList{"fp16.enabled=true", "bf16.enabled=true"}
                        << "config: fp16.enabled and bf16.enabled are both true; enable at most "
                           "one";
}

void TestMixedPrecision::refusesInvalidConfigs() {
  QFETCH(QStringList, overrides);
  QFETCH(QString, message);
  QString got = "(no error)";
  try {
    tinyConfig(strings(overrides));
  } catch (const UserError& e) {
    got = e.what();
  }
  QVERIFY2(got.startsWith(message), qPrintable(got));
}

void TestMixedPrecision::readsPrecisionKeys() {
  const TrainConfig a = tinyConfig({"fp16.enabled=true", "fp16.hysteresis=3",
                                    "fp16.consecutive_hysteresis=true", "fp16.loss_scale=128"});
  QCOMPARE(a.parallel.compute, DType::F16);
  QCOMPARE(a.parallel.gradComm, DType::F16);  // unset: the compute type
  QCOMPARE(a.parallel.lossScale.hysteresis, 3);
  QVERIFY(a.parallel.lossScale.consecutiveHysteresis);
  QCOMPARE(a.parallel.lossScale.staticScale, 128.0);
  const TrainConfig b = tinyConfig({"bf16.enabled=true", "communication_data_type=fp32"});
  QCOMPARE(b.parallel.compute, DType::BF16);
  QCOMPARE(b.parallel.gradComm, DType::F32);
  const TrainConfig c = tinyConfig({});
  QCOMPARE(c.parallel.compute, DType::F32);
  QCOMPARE(c.parallel.gradComm, DType::F32);
  QCOMPARE(c.parallel.lossScale.initialScalePower, 16);
  QCOMPARE(c.parallel.lossScale.lossScaleWindow, 1000);
  QCOMPARE(c.parallel.lossScale.hysteresis, 2);
  QVERIFY(!c.parallel.lossScale.consecutiveHysteresis);
}

void TestMixedPrecision::bulkConversionsMatchScalar_data() {
  QTest::addColumn<int>("type");
  QTest::newRow("bf16") << static_cast<int>(DType::BF16);
  QTest::newRow("fp16") << static_cast<int>(DType::F16);
}

// The kernels' bulk conversions (fp16 through F16C where the CPU has it) against dtype.h's
// scalar ones: every 16-bit pattern widened, and narrowed: every representable value, every
// midpoint between neighbours (ties to even), one f32 ulp either side of it, and beyond the
// largest finite value. NaNs only need to stay NaN.
void TestMixedPrecision::bulkConversionsMatchScalar() {
  QFETCH(int, type);
  const auto t = static_cast<DType>(type);
  auto widenOne = [t](std::uint16_t h) {
    return t == DType::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
  };
  auto narrowOne = [t](float f) { return t == DType::BF16 ? floatToBf16(f) : floatToF16(f); };
  std::vector<std::uint16_t> all(65536);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  std::vector<float> wide(all.size());
  kernels::widen(all.data(), wide.data(), static_cast<long>(all.size()) - 3, t);  // odd tail
  std::vector<float> probes;
  for (std::size_t i = 0; i + 3 < all.size(); ++i) {
    const float v = widenOne(all[i]);
    if (std::isnan(v)) {
      QVERIFY(std::isnan(wide[i]));
      continue;
    }
    QCOMPARE(floatBits(wide[i]), floatBits(v));
    const float next = widenOne(all[i + 1]);
    if (std::isnan(next) || std::isinf(v) || std::signbit(v) != std::signbit(next)) continue;
    const float mid = v + (next - v) / 2;
    probes.insert(probes.end(), {v, mid, std::nextafter(mid, v), std::nextafter(mid, next)});
  }
  probes.insert(probes.end(), {65504.0f, 65519.99f, 65520.0f, 1e6f, -70000.0f, 3e38f, 1e-9f});
  std::vector<std::uint16_t> narrowed(probes.size());
  kernels::narrow(probes.data(), narrowed.data(), static_cast<long>(probes.size()), t);
  std::vector<float> rounded = probes;
  kernels::roundTo(rounded.data(), static_cast<long>(rounded.size()), t);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    QCOMPARE(narrowed[i], narrowOne(probes[i]));
    QCOMPARE(floatBits(rounded[i]), floatBits(widenOne(narrowOne(probes[i]))));
  }
  qInfo("%zu probes", probes.size());
}

void TestMixedPrecision::modelRoundsLikeTheLowType_data() {
  QTest::addColumn<int>("type");
  QTest::newRow("bf16") << static_cast<int>(DType::BF16);
  QTest::newRow("fp16") << static_cast<int>(DType::F16);
}

// Two ScaleLayers and a ThirdLoss on 3 elements, two micro-batches accumulated. Expected values
// follow the rules by hand: parameters stored rounded; each layer's kept tensors and output,
// and each returned input gradient, rounded; the per-target losses not; a layer's f32 gradient
// added into the stored one with one rounding per backward pass.
void TestMixedPrecision::modelRoundsLikeTheLowType() {
  QFETCH(int, type);
  const auto low = static_cast<DType>(type);
  auto r = [low](float v) { return rounded(v, low); };
  Allocator a;
  Model m(a, low);
  bool ok = true;
  addScaleLayers(m, low, &ok);
  m.addLayer(std::make_unique<ThirdLoss>(a));
  m.initialize(5);
  QCOMPARE(a.liveBytes(MemoryCategory::Parameter), 2 * 6);
  QCOMPARE(a.liveBytes(MemoryCategory::Gradient), 2 * 6);
  Parameter& w0 = *m.find("w0");
  Parameter& w1 = *m.find("w1");
  QCOMPARE(w0.lowValue.dtype(), low);
  QVERIFY(!w0.value.defined());
  // The stored value is the f32 initialisation rounded to nearest even.
  Model full(a);
  full.addParameter("w0", {3}, {ParameterInit::Kind::Normal, 0.7f}, true);
  full.initialize(5);
  float v0[3], v1[3];
  convertToFloat(w0.lowValue.data<std::uint16_t>(), {v0, 3}, low);
  convertToFloat(w1.lowValue.data<std::uint16_t>(), {v1, 3}, low);
  for (int i = 0; i < 3; ++i) QCOMPARE(v0[i], r(full.find("w0")->value.data<float>()[i]));
  const float inputs[2][3] = {{1.1f, -2.3f, 0.37f}, {0.9f, 1.7f, -0.61f}};
  float g0[3] = {}, g1[3] = {};
  for (const auto& in : inputs) {
    Batch b;
    b.inputs = Tensor::empty({3}, DType::F32, MemoryCategory::Activation, a);
    std::memcpy(b.inputs.raw(), in, sizeof in);
    b.lossWeight = 0.1f;
    const MicroBatchResult res = m.forwardBackward(b);
    double loss = 0;
    float y0[3], y1[3];
    const float d2 = r(0.1f / 3.0f);
    for (int i = 0; i < 3; ++i) {
      y0[i] = r(in[i] * v0[i]);
      y1[i] = r(y0[i] * v1[i]);
      loss += y1[i] / 3.0f;
      g1[i] = r(g1[i] + d2 * y0[i]);
      g0[i] = r(g0[i] + r(d2 * v1[i]) * r(in[i]));
    }
    QCOMPARE(res.lossSum, loss);
  }
  QVERIFY(ok);
  float got0[3], got1[3];
  convertToFloat(w0.lowGrad.data<std::uint16_t>(), {got0, 3}, low);
  convertToFloat(w1.lowGrad.data<std::uint16_t>(), {got1, 3}, low);
  for (int i = 0; i < 3; ++i) {
    QCOMPARE(got0[i], g0[i]);
    QCOMPARE(got1[i], g1[i]);
  }
  QCOMPARE(a.liveBytes(MemoryCategory::Workspace), 0);  // working copies are gone
  m.materializeValues();
  QCOMPARE(w1.value.data<float>()[2], v1[2]);
  QCOMPARE(a.liveBytes(MemoryCategory::Workspace), 4 * 6);
  m.releaseValues();
  QCOMPARE(a.liveBytes(MemoryCategory::Workspace), 0);
}

void TestMixedPrecision::modelKeepsTheLowType_data() {
  modelRoundsLikeTheLowType_data();
}

// What a layer keeps between its passes is stored in the low type, half the bytes, but its input,
// which the layer before holds in f32 anyway; the layer's backward sees it in f32 again, with the
// rounded values (ScaleLayer checks them).
void TestMixedPrecision::modelKeepsTheLowType() {
  QFETCH(int, type);
  const auto low = static_cast<DType>(type);
  Allocator a;
  Model m(a, low);
  m.addParameter("w0", {3}, {ParameterInit::Kind::Normal, 0.7f}, true);
  bool ok = true;
  m.addLayer(std::make_unique<ScaleLayer>(m, "w0", low, &ok));
  m.initialize(5);
  Batch b;
  b.inputs = Tensor::empty({3}, DType::F32, MemoryCategory::Activation, a);
  const float in[3] = {1.5f, -2.25f, 0.375f};  // values of both 16-bit types
  std::memcpy(b.inputs.raw(), in, sizeof in);
  Activations keep;
  const Tensor y = m.forwardLayer(0, b.inputs, b, keep);
  QCOMPARE(keep.saved[0].dtype(), DType::F32);
  QCOMPARE(keep.saved[0].raw(), b.inputs.raw());
  QCOMPARE(keep.saved[1].dtype(), low);
  // The input and the output, 12 bytes each, and the kept third in 6.
  QCOMPARE(a.liveBytes(MemoryCategory::Activation), 12 + 12 + 6);
  const Tensor dx = m.backwardLayer(0, y, b, keep);
  QVERIFY(ok);
  QCOMPARE(keep.saved[1].dtype(), DType::F32);
  QCOMPARE(dx.dtype(), DType::F32);
}

// A tensor the layer marks exact (attention's softmax statistics) is kept f32 as computed: not
// rounded, not stored in 16 bits; the backward reads the forward's values (ScaleLayer checks).
void TestMixedPrecision::modelKeepsExactTensorsAsComputed() {
  const DType low = DType::BF16;
  Allocator a;
  Model m(a, low);
  m.addParameter("w0", {3}, {ParameterInit::Kind::Normal, 0.7f}, true);
  bool ok = true;
  m.addLayer(std::make_unique<ScaleLayer>(m, "w0", low, &ok, true));
  m.initialize(5);
  Batch b;
  b.inputs = Tensor::empty({3}, DType::F32, MemoryCategory::Activation, a);
  const float in[3] = {1.5f, -2.25f, 0.375f};
  std::memcpy(b.inputs.raw(), in, sizeof in);
  Activations keep;
  const Tensor y = m.forwardLayer(0, b.inputs, b, keep);
  QCOMPARE(keep.saved[1].dtype(), DType::F32);
  QCOMPARE(a.liveBytes(MemoryCategory::Activation), 12 + 12 + 12);
  QVERIFY(!representable(keep.saved[1].data<float>(), 3, low));  // y / 3 as computed
  m.backwardLayer(0, y, b, keep);
  QVERIFY(ok);
}

// A layer's input, the layer before's output, is kept in the low type too: its f32 copy goes
// once the caller drops it. The batch's inputs, which the step holds, stay f32 (above).
void TestMixedPrecision::modelKeepsALayersInputInTheLowType() {
  const DType low = DType::BF16;
  Allocator a;
  Model m(a, low);
  bool ok = true;
  addScaleLayers(m, low, &ok);
  m.initialize(5);
  Batch b;
  b.inputs = Tensor::empty({3}, DType::F32, MemoryCategory::Activation, a);
  const float in[3] = {1.5f, -2.25f, 0.375f};
  std::memcpy(b.inputs.raw(), in, sizeof in);
  std::vector<Activations> keep(2);
  Tensor y = m.forwardLayer(0, b.inputs, b, keep[0]);
  y = m.forwardLayer(1, y, b, keep[1]);
  QCOMPARE(keep[0].saved[0].dtype(), DType::F32);
  QCOMPARE(keep[1].saved[0].dtype(), low);
  // The batch's 12 bytes, each layer's third in 6, the first's output in 6, the second's in 12.
  QCOMPARE(a.liveBytes(MemoryCategory::Activation), 12 + 6 + 6 + 6 + 12);
  const Tensor dy = m.backwardLayer(1, y, b, keep[1]);
  QCOMPARE(keep[1].saved[0].dtype(), DType::F32);
  m.backwardLayer(0, dy, b, keep[0]);
  QVERIFY(ok);  // each backward read the rounded values in f32
}

void TestMixedPrecision::gptHeadWorksInChunksOfRows_data() {
  modelRoundsLikeTheLowType_data();
}

// The GPT head under mixed precision keeps its probabilities in the compute type and computes its
// f32 logits, and their gradient, three of its 24 rows at a time. Against the head computed whole
// by the same kernels (every row's logits and cross-entropy, the probabilities and the kept
// layernorm state rounded, the gradient's products over all rows at once): the losses within
// f32 rounding and every gradient within one rounding of the compute type. Products of other
// shapes may sum in another order (the GEMM kernels for small matrices), so bits may differ.
void TestMixedPrecision::gptHeadWorksInChunksOfRows() {
  QFETCH(int, type);
  kernels::setBlasThreads(1);  // as a rank runs its products
  const auto low = static_cast<DType>(type);
  GptConfig g;
  g.vocabSize = 1000;
  g.contextLength = 8;
  g.hiddenSize = 32;
  g.numHeads = 2;
  g.numLayers = 1;
  const int B = 3, N = B * g.contextLength, C = g.hiddenSize, V = g.vocabSize;
  QCOMPARE(headChunkRows(N, V, low), 3);
  Allocator a;
  Model m(a, low);
  buildGpt(m, g);
  m.initialize(11);
  Batch batch;
  batch.inputs = Tensor::empty({B, g.contextLength}, DType::I32, MemoryCategory::Workspace, a);
  batch.targets = Tensor::empty({B, g.contextLength}, DType::I32, MemoryCategory::Workspace, a);
  auto* targets = batch.targets.data<std::int32_t>();
  for (int n = 0; n < N; ++n) {
    batch.inputs.data<std::int32_t>()[n] = (n * 37 + 5) % V;
    targets[n] = (n * 101 + 3) % V;
  }
  batch.lossWeight = 1.0f / static_cast<float>(N);
  const std::size_t head = m.layers().size() - 1;
  std::vector<Activations> keep(m.layers().size());
  Tensor x = batch.inputs, headInput;
  for (std::size_t i = 0; i < m.layers().size(); ++i) {
    if (i == head) headInput = x;
    x = m.forwardLayer(i, x, batch, keep[i]);
  }
  const Tensor& probabilities = keep[head].saved[4];
  QCOMPARE(probabilities.dtype(), low);
  QCOMPARE(probabilities.numel(), static_cast<std::int64_t>(N) * V);
  m.zeroGrad();
  const Tensor dx = m.backwardLayer(head, Tensor(), batch, keep[head]);

  m.materializeValues();
  const kernels::KernelOps& ops = m.ops();
  auto value = [&](const char* name) { return m.find(name)->value.data<float>(); };
  std::vector<float> ln(N * C), mean(N), rstd(N), p(static_cast<std::size_t>(N) * V), losses(N);
  ops.layernormForward(ln.data(), mean.data(), rstd.data(), headInput.data<float>(),
                       value("ln_f.weight"), value("ln_f.bias"), N, C);
  ops.matmulForward(p.data(), ln.data(), value("wte.weight"), nullptr, N, C, V);
  ops.crossEntropyForward(losses.data(), p.data(), p.data(), targets, N, V);
  // Within `relative` of the reference, or one fp16 subnormal's spacing (2^-24) of it.
  // `sumError`: an f32 sum's own error bound per element, where the chunks sum in another order.
  auto near = [](const float* got, const std::vector<float>& want, float relative, const char* what,
                 const std::vector<float>& sumError = {}) {
    int same = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      same += floatBits(got[i]) == floatBits(want[i]);
      const float bound =
          relative * std::abs(want[i]) + 0x1p-24f + (sumError.empty() ? 0.0f : sumError[i]);
      if (!(std::abs(got[i] - want[i]) <= bound)) {
        qWarning("%s %zu: %g, whole %g", what, i, static_cast<double>(got[i]),
                 static_cast<double>(want[i]));
        return false;
      }
    }
    qInfo("%s: %d of %zu the same bits", what, same, want.size());
    return true;
  };
  QVERIFY(near(x.data<float>(), losses, 1e-6f, "losses"));

  for (std::vector<float>* kept : {&ln, &mean, &rstd, &p})
    kernels::roundTo(kept->data(), static_cast<long>(kept->size()), low);
  std::vector<float> dlosses(N, batch.lossWeight), dln(N * C), dinp(N * C), dwte(V * C), dw(C),
      db(C);
  const std::vector<float> probabilities16 = p;
  kernels::crossEntropyBackward(p.data(), p.data(), targets, dlosses.data(), N, V);
  ops.matmulBackward(dln.data(), dwte.data(), nullptr, p.data(), ln.data(), value("wte.weight"), N,
                     C, V, kernels::WeightGradient::Add);
  const float spacing = low == DType::BF16 ? 0x1p-7f : 0x1p-10f;
  // The tied embedding's gradient sums N products, in chunks in the model: two such sums differ
  // by up to N f32 epsilons of the sum of their magnitudes, where the terms cancel. And a chunk's
  // logits may differ from the whole product's in the last f32 bit (a product of a few rows sums
  // in another order than one of all of them), so a probability may round to its other 16-bit
  // neighbour: the gradient's term then moves by up to one spacing of the probability.
  std::vector<float> dwteError(V * C), flipError(V * C);
  for (std::vector<float>* t : {&p, &ln})
    for (float& e : *t) e = std::abs(e);
  ops.matmulBackward(nullptr, dwteError.data(), nullptr, p.data(), ln.data(), value("wte.weight"),
                     N, C, V, kernels::WeightGradient::Add);
  ops.matmulBackward(nullptr, flipError.data(), nullptr, probabilities16.data(), ln.data(),
                     value("wte.weight"), N, C, V, kernels::WeightGradient::Add);
  for (std::size_t i = 0; i < dwteError.size(); ++i) {
    dwteError[i] =
        dwteError[i] * static_cast<float>(N) * 0x1p-23f + flipError[i] * spacing * batch.lossWeight;
  }
  ops.layernormBackward(dinp.data(), dw.data(), db.data(), dln.data(), headInput.data<float>(),
                        value("ln_f.weight"), mean.data(), rstd.data(), N, C, nullptr);
  for (std::vector<float>* wanted : {&dinp, &dw, &db, &dwte})
    kernels::roundTo(wanted->data(), static_cast<long>(wanted->size()), low);
  QVERIFY(near(dx.data<float>(), dinp, spacing, "input gradient"));
  auto stored = [&](const char* name) {
    const Tensor& t = m.find(name)->lowGrad;
    std::vector<float> wide(static_cast<std::size_t>(t.numel()));
    convertToFloat(t.data<std::uint16_t>(), wide, low);
    return wide;
  };
  QVERIFY(near(stored("ln_f.weight").data(), dw, spacing, "ln_f.weight gradient"));
  QVERIFY(near(stored("ln_f.bias").data(), db, spacing, "ln_f.bias gradient"));
  QVERIFY(near(stored("wte.weight").data(), dwte, spacing, "wte.weight gradient", dwteError));
  m.releaseValues();
}

void TestMixedPrecision::lossScalerFollowsDeepSpeed_data() {
  QTest::addColumn<bool>("consecutive");
  QTest::addColumn<QString>("overflows");
  QTest::addColumn<QList<double>>("scales");  // after each update
  QTest::addColumn<QList<int>>("hystereses");
  // Initial 2^4, window 3, hysteresis 2 (worked out from deepspeed/runtime/fp16/loss_scaler.py).
  QTest::newRow("hysteresis kept across clean steps")
      << false << "-x-xx---x--" << QList<double>{16, 16, 16, 8, 4, 4, 4, 8, 8, 8, 8}
      << QList<int>{2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1};
  QTest::newRow("consecutive hysteresis")
      << true << "-x-xx---x--" << QList<double>{16, 16, 16, 16, 8, 8, 8, 16, 16, 16, 16}
      << QList<int>{2, 1, 2, 1, 1, 2, 2, 2, 1, 2, 2};
  QTest::newRow("growth every window")
      << false << "-------" << QList<double>{16, 16, 32, 32, 32, 64, 64}
      << QList<int>{2, 2, 2, 2, 2, 2, 2};
}

void TestMixedPrecision::lossScalerFollowsDeepSpeed() {
  QFETCH(bool, consecutive);
  QFETCH(QString, overflows);
  QFETCH(QList<double>, scales);
  QFETCH(QList<int>, hystereses);
  LossScaleSpec spec;
  spec.initialScalePower = 4;
  spec.lossScaleWindow = 3;
  spec.consecutiveHysteresis = consecutive;
  LossScaler s(spec, true);
  QCOMPARE(s.scale(), 16.0);
  for (int i = 0; i < overflows.size(); ++i) {
    s.update(overflows[i] == 'x');
    QCOMPARE(s.scale(), scales[i]);
    QCOMPARE(s.hysteresis(), hystereses[i]);
  }
  LossScaler off(spec, false);  // bf16 / fp32: no scaling
  off.update(true);
  QCOMPARE(off.scale(), 1.0);
  spec.staticScale = 8;
  LossScaler fixed(spec, true);
  fixed.update(true);
  fixed.update(true);
  QCOMPARE(fixed.scale(), 8.0);
}

void TestMixedPrecision::lossScalerStopsAtMinimum() {
  LossScaleSpec spec;
  spec.initialScalePower = 2;
  spec.hysteresis = 1;
  spec.minLossScale = 1.5;
  LossScaler s(spec, true);
  s.update(true);
  QCOMPARE(s.scale(), 2.0);
  s.update(true);
  QCOMPARE(s.scale(), 1.5);  // clamped to the minimum
  try {
    s.update(true);
    QFAIL("no error at the minimum");
  } catch (const std::runtime_error& e) {
    QCOMPARE(QString(e.what()),
             QString("fp16: gradients overflow at the minimum loss scale (fp16.min_loss_scale = "
                     "1.500000); cannot lower the scale any further"));
  }
}

void TestMixedPrecision::matchesFp32OneRank_data() {
  QTest::addColumn<QString>("precision");
  QTest::addColumn<QStringList>("overrides");
  const QString small = "zero_optimization.reduce_bucket_size=3000";
  for (const char* p : {"bf16", "fp16"}) {
    const QString on = QString(p) + ".enabled=true";
    QTest::addRow("%s dp1", p) << p << QStringList{on};
    QTest::addRow("%s dp2 zero0", p) << p << QStringList{on, "data_parallel_size=2", small};
    QTest::addRow("%s dp2 zero3", p)
        << p << QStringList{on, "data_parallel_size=2", "zero_optimization.stage=3", small};
  }
  QTest::newRow("bf16 dp1 zero3") << "bf16"
                                  << QStringList{"bf16.enabled=true", "zero_optimization.stage=3"};
  QTest::newRow("fp16 dp2 zero1 accum2")
      << "fp16"
      << QStringList{"fp16.enabled=true", "data_parallel_size=2", "zero_optimization.stage=1",
                     "gradient_accumulation_steps=2"};
  QTest::newRow("bf16 dp2 zero2 accum2 fp32 comm") << "bf16"
                                                   << QStringList{"bf16.enabled=true",
                                                                  "data_parallel_size=2",
                                                                  "zero_optimization.stage=2",
                                                                  "gradient_accumulation_steps=2",
                                                                  small,
                                                                  "communication_data_type=fp32"};
  QTest::newRow("fp16 dp2 zero2 bf16 comm")
      << "fp16"
      << QStringList{"fp16.enabled=true", "data_parallel_size=2", "zero_optimization.stage=2",
                     small, "communication_data_type=bf16"};
  QTest::newRow("bf16 tp2 sequence-parallel")
      << "bf16"
      << QStringList{"bf16.enabled=true", "tensor_model_parallel_size=2", "sequence_parallel=true"};
  QTest::newRow("fp16 tp2 dp2 zero1")
      << "fp16"
      << QStringList{"fp16.enabled=true", "tensor_model_parallel_size=2", "data_parallel_size=2",
                     "zero_optimization.stage=1"};
}

// Each step's loss and gradients, then the parameters, against one fp32 rank within the low
// precision tolerance of dptest::compareLowPrecision. Why it holds on any CPU: what differs from
// fp32 is the 16-bit rounding of values, which is 2^-9 (bf16) or 2^-12 (fp16) of each value,
// while fp32 summation orders and BLAS kernels add ~1e-7; the worst gradient difference here is
// 0.0095 (bf16) and 0.0012 (fp16) of its tensor's largest value, against 2^-5. Parameters:
// atol 1e-2 = 4 steps x 2 lr / eps (0.2 at lr 1e-3) x the gradient tolerance (2^-5 x the
// largest gradient, about 0.4). Every value read back is exactly one of the low type; every rank
// holds the same parameters; and the run really is rounded (it differs from fp32 beyond fp32's
// tolerance).
void TestMixedPrecision::matchesFp32OneRank() {
  QFETCH(QString, precision);
  QFETCH(QStringList, overrides);
  const DType low = precision == "bf16" ? DType::BF16 : DType::F16;
  std::vector<std::string> o = strings(overrides);
  o.push_back("optimizer.params.lr=1e-3");
  const int steps = 4;
  const dptest::RunRecord want = dptest::train(tinyConfig({"optimizer.params.lr=1e-3"}), steps);
  const std::vector<dptest::RunRecord> got = trainRanks(tinyConfig(o), steps);
  for (const dptest::RunRecord& r : got) {
    const std::string diff = dptest::compareLowPrecision(want, r, 1e-2);
    QVERIFY2(diff.empty(), diff.c_str());
    QVERIFY(r.parameters == got[0].parameters);
    for (const auto& [name, v] : r.parameters) {
      QVERIFY2(representable(v.data(), static_cast<std::int64_t>(v.size()), low), name.c_str());
    }
    for (std::size_t i = 0; i < r.reports.size(); ++i) {
      const StepReport& s = r.reports[i];
      QVERIFY(!s.skipped);
      QCOMPARE(s.lossScale, low == DType::F16 ? 65536.0 : 1.0);
      // Unscaled: the same gradient norm as fp32.
      const double fp32 = want.reports[i].gradNorm;
      QVERIFY2(std::fabs(s.gradNorm - fp32) <= 1.6e-2 * fp32,
               qPrintable(QString("step %1: %2 vs %3").arg(i).arg(s.gradNorm).arg(fp32)));
    }
  }
  qInfo("losses fp32 %.5f .. %.5f, %s %.5f .. %.5f", want.losses.front(), want.losses.back(),
        qPrintable(precision), got[0].losses.front(), got[0].losses.back());
  QVERIFY(!dptest::compare(want, got[0]).empty());
  QVERIFY(got[0].losses.back() < got[0].losses.front());  // it trains
}

void TestMixedPrecision::modelStateBytes_data() {
  QTest::addColumn<QString>("precision");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("stage");
  QTest::newRow("bf16 dp1") << "bf16" << 1 << 0;
  for (int stage = 0; stage <= 3; ++stage) {
    QTest::addRow("bf16 dp2 stage%d", stage) << "bf16" << 2 << stage;
  }
  QTest::newRow("fp16 dp4 stage2") << "fp16" << 4 << 2;
  QTest::newRow("fp16 dp4 stage3") << "fp16" << 4 << 3;
}

// ZeRO paper, mixed precision, per rank: 2 bytes per parameter for the 16-bit parameters, 2 for
// their gradients and 12 for the fp32 master weights and Adam's moments, divided by Nd from
// stage 3, 2 and 1 respectively. Buckets are padded to multiples of Nd (up to Nd - 1 elements
// per tensor here); f32 working copies are Workspace memory and gone after the step. During
// backward stage 2's gradients and stage 3's parameters stay below the shard plus half the
// unsharded bytes (8 blocks).
void TestMixedPrecision::modelStateBytes() {
  QFETCH(QString, precision);
  QFETCH(int, dp);
  QFETCH(int, stage);
  const TrainConfig c = tinyConfig(
      {precision.toStdString() + ".enabled=true", "data_parallel_size=" + std::to_string(dp),
       "zero_optimization.stage=" + std::to_string(stage),
       "zero_optimization.reduce_bucket_size=3000", "model.num_layers=8"});
  const dptest::ModelState m = dptest::measureModelState(c);
  const std::int64_t P = m.parameters;
  const std::int64_t padded = P + m.tensors * (dp - 1);
  auto within = [](std::int64_t got, std::int64_t lo, std::int64_t hi) {
    return got >= lo && got <= hi;
  };
  for (const dptest::StateBytes& b : m.ranks) {
    const QString all = QString("P=%1 param %2 grad %3 optim %4 work %5 grad peak %6 param peak %7")
                            .arg(P)
                            .arg(b.param)
                            .arg(b.grad)
                            .arg(b.optim)
                            .arg(b.work)
                            .arg(b.gradPeak)
                            .arg(b.paramPeak);
    qInfo("%s", qPrintable(all));
    QVERIFY2(stage < 3 ? within(b.param, 2 * P, 2 * padded)
                       : within(b.param, 2 * P / dp, 2 * padded / dp),
             qPrintable(all));
    QVERIFY2(
        stage < 2 ? within(b.grad, 2 * P, 2 * padded) : within(b.grad, 2 * P / dp, 2 * padded / dp),
        qPrintable(all));
    QVERIFY2(stage < 1 ? b.optim == 12 * P : within(b.optim, 12 * P / dp, 12 * padded / dp),
             qPrintable(all));
    QCOMPARE(b.work, std::int64_t{0});
    if (stage >= 2) QVERIFY2(b.gradPeak < 2 * (P / dp + P / 2), qPrintable(all));
    if (stage >= 3) QVERIFY2(b.paramPeak < 2 * (P / dp + P / 2), qPrintable(all));
  }
}

void TestMixedPrecision::overflowSkipsStepOnEveryRank_data() {
  QTest::addColumn<int>("stage");
  QTest::newRow("zero0") << 0;
  QTest::newRow("zero2") << 2;
  QTest::newRow("zero3") << 3;
}

// Rank 1 alone finds +inf in its reduced gradients in steps 1 and 2: both ranks skip both steps
// with parameters bit-identical to after step 0; DeepSpeed's rule with hysteresis 2 keeps the
// scale at the first overflow and halves it at the second; two clean steps (the window) later
// it doubles again.
void TestMixedPrecision::overflowSkipsStepOnEveryRank() {
  QFETCH(int, stage);
  const TrainConfig c =
      tinyConfig({"fp16.enabled=true", "fp16.loss_scale_window=2", "data_parallel_size=2",
                  "zero_optimization.stage=" + std::to_string(stage),
                  "zero_optimization.reduce_bucket_size=3000"});
  std::vector<std::vector<std::vector<float>>> snapshots(2);  // per rank, after each step
  std::vector<std::vector<StepReport>> reports(2);
  runInProcess(2, [&](Communicator& world) {
    const auto rank = static_cast<std::size_t>(world.rank());
    dptest::RunOptions run{.world = world};
    if (rank == 1) {
      run.built = [](Trainer& t) {
        t.injectGradientOverflow(1);
        t.injectGradientOverflow(2);
      };
    }
    run.stepped = [&](Trainer& t) { snapshots[rank].push_back(parameterValues(t)); };
    reports[rank] = dptest::train(c, 6, run).reports;
  });
  const std::vector<double> scales = {65536, 65536, 65536, 32768, 32768, 65536};
  for (int rank = 0; rank < 2; ++rank) {
    const auto& r = reports[static_cast<std::size_t>(rank)];
    const auto& s = snapshots[static_cast<std::size_t>(rank)];
    for (std::size_t i = 0; i < r.size(); ++i) {
      QCOMPARE(r[i].skipped, i == 1 || i == 2);
      QCOMPARE(r[i].lossScale, scales[i]);
    }
    QVERIFY(s[1] == s[0]);  // skipped: unchanged, bit for bit
    QVERIFY(s[2] == s[0]);
    QVERIFY(s[3] != s[2]);  // trains again
    QVERIFY(s[5] != s[4]);
    QVERIFY(s == snapshots[0]);
  }
  // The rank that held the inf saw it in its norm (ZeRO-2/3: every rank, the norm is global).
  QVERIFY(!std::isfinite(reports[1][1].gradNorm));
  QCOMPARE(std::isfinite(reports[0][1].gradNorm), stage < 2);
}

// A far too large initial scale (2^30) overflows fp16 on its own: the first step only uses up
// the hysteresis, then every skipped step halves the scale until gradients fit, and nothing
// moves until then.
void TestMixedPrecision::hugeInitialScaleBacksOff() {
  SessionOptions options;
  options.evaluate = false;
  std::vector<float> start;
  std::vector<bool> unchanged;  // per step: the parameters are still the initial ones
  double scale = 0;             // the scaler's, after the last step
  RankHooks hooks;
  hooks.built = [&](Trainer& t) { start = parameterValues(t); };
  hooks.stepped = [&](Trainer& t) {
    unchanged.push_back(parameterValues(t) == start);
    scale = t.lossScaler().scale();
  };
  options.rankHooks = std::make_shared<RankHooks>(std::move(hooks));
  Session session(tinyConfig({"fp16.enabled=true", "fp16.initial_scale_power=30"}),
                  std::move(options));
  // Stops at the first step that is not skipped.
  struct Reports : SessionObserver {
    Session& session;
    std::vector<StepReport> steps;
    explicit Reports(Session& s) : session(s) {}
    void onStep(const StepReport& r) override {
      steps.push_back(r);
      if (!r.skipped || steps.size() == 30) session.stop();
    }
  } reports(session);
  session.addObserver(reports);
  session.run();
  const std::vector<StepReport>& r = reports.steps;
  QCOMPARE(unchanged.size(), r.size());
  for (std::size_t i = 0; i < r.size(); ++i) QCOMPARE(unchanged[i], r[i].skipped);
  QVERIFY(r.size() >= 3);
  QVERIFY(!r.back().skipped);
  double expected = std::ldexp(1.0, 30);
  for (std::size_t i = 0; i < r.size(); ++i) {
    QCOMPARE(r[i].lossScale, expected);
    if (i >= 1) expected /= 2;  // the first overflow used up the hysteresis
  }
  QCOMPARE(scale, r.back().lossScale);
  qInfo("first clean step %zu at loss scale %g", r.size(), r.back().lossScale);
}

QTEST_GUILESS_MAIN(TestMixedPrecision)
#include "test_mixed_precision.moc"
