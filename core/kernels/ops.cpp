#include "core/kernels/ops.h"

#include <algorithm>

#include "core/kernels/attention.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/grad_clip.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/matmul.h"
#include "core/kernels/precision.h"
#include "core/kernels/residual.h"

namespace parascope::kernels {

namespace {

class CpuOps final : public KernelOps {
 public:
  Device device() const override { return Device::cpu(); }
  void embeddingForward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe,
                        int B, int T, int C) const override {
    kernels::embeddingForward(out, tokens, wte, wpe, B, T, C);
  }
  void embeddingBackward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                         int B, int T, int C) const override {
    kernels::embeddingBackward(dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                        const float* bias, int N, int C) const override {
    kernels::layernormForward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void residualLayernormForward(float* sum, float* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int N,
                                int C) const override {
    kernels::residualLayernormForward(sum, out, mean, rstd, a, b, weight, bias, N, C);
  }
  void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                         const float* inp, const float* weight, const float* mean,
                         const float* rstd, int N, int C, const float* dresidual) const override {
    kernels::layernormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C,
                               dresidual);
  }
  void matmulForward(float* out, const float* inp, const float* weight, const float* bias, int N,
                     int C, int OC) const override {
    kernels::matmulForward(out, inp, weight, bias, N, C, OC);
  }
  void matmulBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                      const float* inp, const float* weight, int N, int C, int OC,
                      WeightGradient write) const override {
    kernels::matmulBackward(dinp, dweight, dbias, dout, inp, weight, N, C, OC, write);
  }
  long attentionScratch(int /*B*/, int T, int C, int NH, bool backward) const override {
    return kernels::attentionScratch(T, C / NH, backward);
  }
  void attentionForward(float* out, float* stats, float* scratch, const float* qkv, int B, int T,
                        int C, int NH) const override {
    kernels::attentionForward(out, stats, scratch, qkv, B, T, C, NH);
  }
  // The CPU's backward has each block's probabilities and dP at hand: it sums their product rather
  // than reading the output.
  void attentionBackward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                         const float* /*out*/, const float* stats, int B, int T, int C,
                         int NH) const override {
    kernels::attentionBackward(dqkv, scratch, dout, qkv, stats, B, T, C, NH);
  }
  void geluForward(float* out, const float* inp, long N) const override {
    kernels::geluForward(out, inp, N);
  }
  void geluBackward(float* dinp, const float* inp, const float* dout, long N) const override {
    kernels::geluBackward(dinp, inp, dout, N);
  }
  void residualForward(float* out, const float* a, const float* b, long N) const override {
    kernels::residualForward(out, a, b, N);
  }
  void biasForward(float* out, const float* bias, long rows, long C) const override {
    kernels::biasForward(out, bias, rows, C);
  }
  void biasBackward(float* dbias, const float* dout, long rows, long C) const override {
    kernels::biasBackward(dbias, dout, rows, C);
  }
  void crossEntropyForward(float* losses, float* probs, const float* logits,
                           const std::int32_t* targets, int N, int V) const override {
    kernels::crossEntropyForward(losses, probs, logits, targets, N, V);
  }
  void accumulate(void* acc, const void* add, long n, DType type) const override {
    kernels::accumulate(acc, add, n, type);
  }
  void embeddingPartForward(float* out, const std::int32_t* tokens, const float* wtePart, int N,
                            int first, int part, int C) const override {
    kernels::embeddingPartForward(out, tokens, wtePart, N, first, part, C);
  }
  void embeddingPartBackward(float* dwtePart, const float* dout, const std::int32_t* tokens, int N,
                             int first, int part, int C) const override {
    kernels::embeddingPartBackward(dwtePart, dout, tokens, N, first, part, C);
  }
  void positionForward(float* out, const float* wpe, int rows, int row0, int T,
                       int C) const override {
    kernels::positionForward(out, wpe, rows, row0, T, C);
  }
  void positionBackward(float* dwpe, const float* dout, int rows, int row0, int T,
                        int C) const override {
    kernels::positionBackward(dwpe, dout, rows, row0, T, C);
  }
  void crossEntropyPartMax(float* maxima, const float* logits, int N, int V) const override {
    kernels::crossEntropyPartMax(maxima, logits, N, V);
  }
  void crossEntropyPartExp(float* sums, float* probs, const float* logits, const float* maxima,
                           const std::int32_t* targets, int N, int V, int first) const override {
    kernels::crossEntropyPartExp(sums, probs, logits, maxima, targets, N, V, first);
  }
  void crossEntropyPartFinish(float* losses, float* probs, const float* sums, const float* maxima,
                              int N, int V) const override {
    kernels::crossEntropyPartFinish(losses, probs, sums, maxima, N, V);
  }
  void crossEntropyPartBackward(float* dlogits, const std::int32_t* targets, int N, int V,
                                int first, float weight) const override {
    kernels::crossEntropyPartBackward(dlogits, targets, N, V, first, weight);
  }
  void adamwUpdate(float* param, const float* grad, float* m, float* v, long n, const AdamWHyper& h,
                   int step, float gradScale) const override {
    kernels::adamwUpdate<float>(param, grad, m, v, n, h, step, gradScale);
  }
  void widen(const std::uint16_t* in, float* out, long n, DType type) const override {
    kernels::widen(in, out, n, type);
  }
  void narrow(const float* in, std::uint16_t* out, long n, DType type) const override {
    kernels::narrow(in, out, n, type);
  }
  void roundTo(float* x, long n, DType type) const override { kernels::roundTo(x, n, type); }
  void accumulateRounded(std::uint16_t* acc, const float* add, long n, DType type) const override {
    kernels::accumulateRounded(acc, add, n, type);
  }
  void adamwUpdateMixed(float* master, std::uint16_t* param, const std::uint16_t* grad, float* m,
                        float* v, long n, const AdamWHyper& h, int step, float gradScale,
                        DType type) const override {
    kernels::adamwUpdateMixed(master, param, grad, m, v, n, h, step, gradScale, type);
  }
  double sumOfSquares(const void* grad, long n, DType type) const override {
    return kernels::sumOfSquaresAny(grad, n, type);
  }
  void synchronize() const override {}
  std::shared_ptr<void> enter() const override { return nullptr; }
};

}  // namespace

const KernelOps& cpuOps() {
  static const CpuOps ops;
  return ops;
}

}  // namespace parascope::kernels
