// The GPT on one GPU against the same GPT on the CPU: one forward and backward from the same
// initial values and batch, through the model's layers with the CUDA kernels and cuBLAS products
// (fp32, TF32 off). The GPU's sums run in other orders, so the loss agrees within 1e-5 relative
// and every gradient within 1e-4 of its parameter's largest CPU gradient. Skips with one line
// where no device is visible; the batch checks run anywhere.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "core/common/error.h"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/device.h"
#include "core/cuda/device_memory.h"
#include "core/model/gpt.h"
#include "core/model/model.h"

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

Tensor onHost(const Tensor& t) {
  Tensor h = Tensor::empty(t.shape(), t.dtype(), MemoryCategory::Workspace);
  h.copyFrom(t);
  return h;
}

}  // namespace

class TestGpuGpt : public QObject {
  Q_OBJECT
 private slots:
  void forwardBackwardMatchesTheCpu();
  void uploadRefusesTokensOutsideTheVocabulary();
};

void TestGpuGpt::forwardBackwardMatchesTheCpu() {
  if (cuda::deviceCount() == 0)
    QSKIP(("no CUDA device (" + cuda::whyNoDevice() + "): the GPU GPT is built but not run here")
              .c_str());
  GptConfig c;  // GPT-mini: 4 layers, width 256, 4 heads, context 128, vocab 256
  const Batch batch = randomBatch(c, 8, 3);

  Model cpu;
  buildGpt(cpu, c);
  cpu.initialize(11);
  const MicroBatchResult expected = cpu.forwardBackward(batch);

  Allocator memory(cuda::deviceMemory(0));
  Model gpu(memory);
  gpu.setOps(cuda::cudaOps(0, nullptr, cuda::GemmPrecision::F32));
  buildGpt(gpu, c);
  gpu.initialize(11);
  const MicroBatchResult got = gpu.forwardBackward(uploadBatch(batch, c, memory));

  QCOMPARE(got.targets, expected.targets);
  QVERIFY2(std::fabs(got.lossSum - expected.lossSum) <= 1e-5 * std::fabs(expected.lossSum),
           (std::to_string(got.lossSum) + " vs " + std::to_string(expected.lossSum)).c_str());
  int checked = 0;
  for (const Parameter& p : cpu.parameters()) {
    const Tensor g = onHost(gpu.find(p.name)->grad);
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
// gives; nothing is copied.
void TestGpuGpt::uploadRefusesTokensOutsideTheVocabulary() {
  GptConfig c;
  Batch batch = randomBatch(c, 2, 4);
  batch.inputs.data<std::int32_t>()[70] = 256;
  Allocator target;
  try {
    uploadBatch(batch, c, target);
    QFAIL("a token outside the vocabulary was uploaded");
  } catch (const UserError& e) {
    QCOMPARE(std::string(e.what()),
             std::string("token id 256 at position 70 is outside the vocabulary [0, 256)"));
  }
  QCOMPARE(target.peakTotal(), 0);
}

QTEST_GUILESS_MAIN(TestGpuGpt)
#include "test_gpu_gpt.moc"
