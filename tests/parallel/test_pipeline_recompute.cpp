// Activation recompute on a small GPT (one rank, the pipeline path): the peak Activation bytes
// of a training step from the tracked allocator, against no recompute. Selective recompute
// drops each block's attention core state, its row statistics and output, (B, NH, T, 2) +
// (B, T, C) floats per block; full recompute keeps only each layer's input, so its peak is the
// inputs plus one layer's forward and backward state.
#include <QtTest>

#include <filesystem>

#include "pipeline_harness.h"

using namespace parascope;

class TestPipelineRecompute : public QObject {
  Q_OBJECT
 private slots:
  void cleanupTestCase();
  void peakActivationBytesDrop();
  void fullRecomputeIsGeneric();
};

namespace {

constexpr int B = 4, T = 64, C = 32, NH = 4, L = 4;

std::int64_t peakActivationBytes(const std::string& recompute) {
  const TrainConfig c = pptest::tinyConfig(
      {"model.context_length=" + std::to_string(T), "model.hidden_size=" + std::to_string(C),
       "model.num_attention_heads=" + std::to_string(NH), "model.num_layers=" + std::to_string(L),
       "train_batch_size=" + std::to_string(B), "recompute_granularity=" + recompute});
  // The first step allocates optimizer state; peaks are measured on the second.
  const StepReport second = pptest::train(c, 2).reports.at(1);
  return second.peakBytes[static_cast<std::size_t>(MemoryCategory::Activation)];
}

}  // namespace

void TestPipelineRecompute::cleanupTestCase() {
  pptest::removeFixtures();
}

void TestPipelineRecompute::peakActivationBytesDrop() {
  const double none = static_cast<double>(peakActivationBytes("none"));
  const double selective = static_cast<double>(peakActivationBytes("selective"));
  const double full = static_cast<double>(peakActivationBytes("full"));
  qInfo("peak activation bytes: none %.0f, selective %.0f (%.3f), full %.0f (%.3f)", none,
        selective, selective / none, full, full / none);
  const double attention = 4.0 * B * (static_cast<double>(NH) * T * 2 + T * C);
  // The peak is reached while the last block's state is still whole (head backward) or after
  // one block restored its attention: L or L - 1 blocks' attention state is saved.
  QVERIFY(none - selective >= (L - 1) * attention);
  QVERIFY(none - selective <= L * attention);
  // Full recompute holds one layer's whole state at a time: at least L - 1 blocks' saved state,
  // less the inputs it keeps, is gone. Per token a block saves 16C + 4 + 2 NH floats (x, ln1
  // and its mean and rstd, qkv (3C), the attention statistics and output, x2, ln2 and its
  // statistics, fc and gelu (4C each)); C of them is the input.
  const double blockState = 4.0 * B * T * (15.0 * C + 4 + 2.0 * NH);
  QVERIFY(none - full >= (L - 1) * blockState);
  QVERIFY(full < selective);
}

// Full recompute needs nothing from a layer: the classifier's layers run it unchanged, with the
// same results bit for bit and less activation memory. The hidden layers are wide enough that
// their saved state, not the first layer's input gradient (batch x 784), sets the peak.
void TestPipelineRecompute::fullRecomputeIsGeneric() {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    QSKIP("the dataset-fashion-mnist package is not installed");
  }
  auto run = [](const std::string& recompute, std::int64_t* peak) {
    const TrainConfig c =
        parseTrainConfig({{"model", {{"type", "mlp"}, {"hidden_sizes", {256, 256, 256}}}},
                          {"data", {{"type", "idx"}}},
                          {"train_batch_size", 32},
                          {"recompute_granularity", recompute}});
    const pptest::RunRecord r = pptest::train(c, 2);
    *peak = r.reports.at(1).peakBytes[static_cast<std::size_t>(MemoryCategory::Activation)];
    return r;
  };
  std::int64_t nonePeak = 0, fullPeak = 0;
  const pptest::RunRecord none = run("none", &nonePeak);
  const pptest::RunRecord full = run("full", &fullPeak);
  QVERIFY(none.losses == full.losses);
  QVERIFY(none.gradients == full.gradients);
  QVERIFY(none.parameters == full.parameters);
  QVERIFY(fullPeak < nonePeak);
}

QTEST_GUILESS_MAIN(TestPipelineRecompute)
#include "test_pipeline_recompute.moc"
