#include "core/model/gpt.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/common/error.h"
#include "core/kernels/attention.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/matmul.h"
#include "core/kernels/residual.h"

namespace parascope {

using namespace kernels;

std::int64_t GptConfig::nonEmbeddingPositionParameters() const {
  const std::int64_t C = hiddenSize;
  const std::int64_t F = static_cast<std::int64_t>(mlpRatio) * C;
  const std::int64_t perBlock =
      2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (F * C + F) + (C * F + C);
  return static_cast<std::int64_t>(vocabSize) * C + numLayers * perBlock + 2 * C;
}

double GptConfig::flopsPerToken() const {
  return 6.0 * static_cast<double>(nonEmbeddingPositionParameters()) +
         12.0 * numLayers * contextLength * hiddenSize;
}

void validate(const GptConfig& c) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw UserError("config: " + what);
  };
  need(c.numHeads > 0 && c.hiddenSize % c.numHeads == 0,
       "model.hidden_size (" + std::to_string(c.hiddenSize) +
           ") must be divisible by model.num_attention_heads (" + std::to_string(c.numHeads) + ")");
}

namespace {

Tensor activation(Allocator& a, const Shape& s) {
  return Tensor::empty(s, DType::F32, MemoryCategory::Activation, a);
}
float* f(const Tensor& t) {
  return t.data<float>();
}

// LayerNorm backward split into its halves through the fused kernel: the unwanted half writes to
// scratch. The elementwise work runs twice; the GEMMs, which dominate, are not repeated.
void layernormInputGrad(Allocator& a, const Tensor& dinp, const Tensor& dout, const Tensor& x,
                        const Parameter& w, const Tensor& mean, const Tensor& rstd, int N, int C) {
  Tensor scratch = Tensor::zeros({2, C}, DType::F32, MemoryCategory::Workspace, a);
  layernormBackward(f(dinp), f(scratch), f(scratch) + C, f(dout), f(x), f(w.value), f(mean),
                    f(rstd), N, C);
}
void layernormWeightGrad(Allocator& a, const Parameter& w, const Parameter& b, const Tensor& dout,
                         const Tensor& x, const Tensor& mean, const Tensor& rstd, int N, int C) {
  Tensor scratch = Tensor::empty({N, C}, DType::F32, MemoryCategory::Workspace, a);
  layernormBackward(f(scratch), f(w.grad), f(b.grad), f(dout), f(x), f(w.value), f(mean), f(rstd),
                    N, C);
}

class Embedding final : public Layer {
 public:
  Embedding(Model& m, const GptConfig& c) : alloc_(m.allocator()), c_(c) {
    wte_ = m.find("wte.weight");
    wpe_ = m.find("wpe.weight");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {wte_, wpe_}; }

  Tensor forward(const Tensor& x, const Batch&, Activations& keep) override {
    const int B = static_cast<int>(x.dim(0)), T = static_cast<int>(x.dim(1)), C = c_.hiddenSize;
    if (T > c_.contextLength) {
      throw UserError("sequence length " + std::to_string(T) + " exceeds model.context_length " +
                      std::to_string(c_.contextLength));
    }
    const auto* tokens = x.data<std::int32_t>();
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      if (tokens[i] < 0 || tokens[i] >= c_.vocabSize) {
        throw UserError("token id " + std::to_string(tokens[i]) + " at position " +
                        std::to_string(i) + " is outside the vocabulary [0, " +
                        std::to_string(c_.vocabSize) + ")");
      }
    }
    Tensor out = activation(alloc_, {B, T, C});
    embeddingForward(f(out), tokens, f(wte_->value), f(wpe_->value), B, T, C);
    keep.saved = {x};
    return out;
  }

  Tensor backward(const Tensor& dy, const Batch&, Activations& keep) override {
    const Tensor& x = keep.saved[0];
    embeddingBackward(f(wte_->grad), f(wpe_->grad), f(dy), x.data<std::int32_t>(),
                      static_cast<int>(x.dim(0)), static_cast<int>(x.dim(1)), c_.hiddenSize);
    return {};
  }

  // The first layer has no input gradient: everything happens in the weight half.
  bool splitsBackward() const override { return true; }
  Tensor backwardInput(const Tensor& dy, const Batch&, Activations& keep) override {
    keep.saved.push_back(dy);
    return {};
  }
  void backwardWeight(const Batch& batch, Activations& keep) override {
    backward(keep.saved[1], batch, keep);
    keep.clear();
  }

 private:
  std::string name_ = "embedding";
  Allocator& alloc_;
  GptConfig c_;
  Parameter* wte_;
  Parameter* wpe_;
};

class Block final : public Layer {
 public:
  Block(Model& m, const GptConfig& c, int index)
      : name_("block." + std::to_string(index)), alloc_(m.allocator()), c_(c) {
    const std::string p = "h." + std::to_string(index) + ".";
    ln1w_ = m.find(p + "ln_1.weight");
    ln1b_ = m.find(p + "ln_1.bias");
    qkvw_ = m.find(p + "attn.c_attn.weight");
    qkvb_ = m.find(p + "attn.c_attn.bias");
    projw_ = m.find(p + "attn.c_proj.weight");
    projb_ = m.find(p + "attn.c_proj.bias");
    ln2w_ = m.find(p + "ln_2.weight");
    ln2b_ = m.find(p + "ln_2.bias");
    fcw_ = m.find(p + "mlp.c_fc.weight");
    fcb_ = m.find(p + "mlp.c_fc.bias");
    fcprojw_ = m.find(p + "mlp.c_proj.weight");
    fcprojb_ = m.find(p + "mlp.c_proj.bias");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override {
    return {ln1w_, ln1b_, qkvw_, qkvb_, projw_,   projb_,
            ln2w_, ln2b_, fcw_,  fcb_,  fcprojw_, fcprojb_};
  }

  Tensor forward(const Tensor& x, const Batch&, Activations& keep) override;
  Tensor backward(const Tensor& dy, const Batch&, Activations& keep) override;
  bool splitsBackward() const override { return true; }
  Tensor backwardInput(const Tensor& dy, const Batch&, Activations& keep) override;
  void backwardWeight(const Batch&, Activations& keep) override;
  void setSelectiveRecompute(bool on) override { recomputeAttention_ = on; }

 private:
  void restoreAttention(Activations& keep);

  std::string name_;
  Allocator& alloc_;
  GptConfig c_;
  Parameter *ln1w_, *ln1b_, *qkvw_, *qkvb_, *projw_, *projb_;
  Parameter *ln2w_, *ln2b_, *fcw_, *fcb_, *fcprojw_, *fcprojb_;
  bool recomputeAttention_ = false;
};

// Saved tensors of a block, in this order.
enum BlockSaved {
  kX,
  kLn1,
  kLn1Mean,
  kLn1Rstd,
  kQkv,
  kAtt,
  kAttY,
  kX2,
  kLn2,
  kLn2Mean,
  kLn2Rstd,
  kFc,
  kGelu,
  // Appended by backwardInput for backwardWeight: the output gradients of the block's GEMMs and
  // LayerNorms (dfc is gelu's input gradient, dln2/dln1 the LayerNorms' output gradients).
  kDy,
  kDfc,
  kDln2,
  kDx2,
  kDqkv,
  kDln1
};

Tensor Block::forward(const Tensor& x, const Batch&, Activations& keep) {
  const int B = static_cast<int>(x.dim(0)), T = static_cast<int>(x.dim(1));
  const int C = c_.hiddenSize, F = c_.mlpRatio * C, NH = c_.numHeads, N = B * T;
  Tensor ln1 = activation(alloc_, {B, T, C}), ln1m = activation(alloc_, {N}),
         ln1r = activation(alloc_, {N});
  layernormForward(f(ln1), f(ln1m), f(ln1r), f(x), f(ln1w_->value), f(ln1b_->value), N, C);
  Tensor qkv = activation(alloc_, {B, T, 3 * C});
  matmulForward(f(qkv), f(ln1), f(qkvw_->value), f(qkvb_->value), N, C, 3 * C);
  Tensor att = activation(alloc_, {B, NH, T, T}), atty = activation(alloc_, {B, T, C});
  attentionForward(f(atty), f(att), f(qkv), B, T, C, NH);
  Tensor x2 = activation(alloc_, {B, T, C});
  matmulForward(f(x2), f(atty), f(projw_->value), f(projb_->value), N, C, C);
  residualForward(f(x2), f(x), f(x2), static_cast<long>(N) * C);
  Tensor ln2 = activation(alloc_, {B, T, C}), ln2m = activation(alloc_, {N}),
         ln2r = activation(alloc_, {N});
  layernormForward(f(ln2), f(ln2m), f(ln2r), f(x2), f(ln2w_->value), f(ln2b_->value), N, C);
  Tensor fc = activation(alloc_, {B, T, F}), gelu = activation(alloc_, {B, T, F});
  matmulForward(f(fc), f(ln2), f(fcw_->value), f(fcb_->value), N, C, F);
  geluForward(f(gelu), f(fc), static_cast<long>(N) * F);
  Tensor out = activation(alloc_, {B, T, C});
  matmulForward(f(out), f(gelu), f(fcprojw_->value), f(fcprojb_->value), N, F, C);
  residualForward(f(out), f(x2), f(out), static_cast<long>(N) * C);
  keep.saved = {x, ln1, ln1m, ln1r, qkv, att, atty, x2, ln2, ln2m, ln2r, fc, gelu};
  if (recomputeAttention_) {  // Megatron's selective recompute: only qkv stays for the core
    keep.saved[kAtt] = Tensor();
    keep.saved[kAttY] = Tensor();
  }
  return out;
}

void Block::restoreAttention(Activations& keep) {
  auto& s = keep.saved;
  if (s[kAtt].defined()) return;
  const int B = static_cast<int>(s[kX].dim(0)), T = static_cast<int>(s[kX].dim(1));
  const int C = c_.hiddenSize, NH = c_.numHeads;
  s[kAtt] = activation(alloc_, {B, NH, T, T});
  s[kAttY] = activation(alloc_, {B, T, C});
  attentionForward(f(s[kAttY]), f(s[kAtt]), f(s[kQkv]), B, T, C, NH);
}

Tensor Block::backward(const Tensor& dy, const Batch&, Activations& keep) {
  restoreAttention(keep);
  const auto& s = keep.saved;
  const int B = static_cast<int>(s[kX].dim(0)), T = static_cast<int>(s[kX].dim(1));
  const int C = c_.hiddenSize, F = c_.mlpRatio * C, NH = c_.numHeads, N = B * T;
  const long NC = static_cast<long>(N) * C;
  // MLP branch: out = x2 + proj(gelu(fc(ln2(x2)))); the residual passes dy to x2 unchanged.
  Tensor dgelu = activation(alloc_, {B, T, F});
  matmulBackward(f(dgelu), f(fcprojw_->grad), f(fcprojb_->grad), f(dy), f(s[kGelu]),
                 f(fcprojw_->value), N, F, C);
  geluBackward(f(dgelu), f(s[kFc]), f(dgelu), static_cast<long>(N) * F);
  Tensor dln2 = activation(alloc_, {B, T, C});
  matmulBackward(f(dln2), f(fcw_->grad), f(fcb_->grad), f(dgelu), f(s[kLn2]), f(fcw_->value), N, C,
                 F);
  Tensor dx2 = activation(alloc_, {B, T, C});
  layernormBackward(f(dx2), f(ln2w_->grad), f(ln2b_->grad), f(dln2), f(s[kX2]), f(ln2w_->value),
                    f(s[kLn2Mean]), f(s[kLn2Rstd]), N, C);
  residualForward(f(dx2), f(dx2), f(dy), NC);
  // Attention branch: x2 = x + proj(attn(qkv(ln1(x)))).
  Tensor datty = activation(alloc_, {B, T, C});
  matmulBackward(f(datty), f(projw_->grad), f(projb_->grad), f(dx2), f(s[kAttY]), f(projw_->value),
                 N, C, C);
  Tensor dqkv = activation(alloc_, {B, T, 3 * C}), scratch = activation(alloc_, {T, T});
  attentionBackward(f(dqkv), f(scratch), f(datty), f(s[kQkv]), f(s[kAtt]), B, T, C, NH);
  Tensor dln1 = activation(alloc_, {B, T, C});
  matmulBackward(f(dln1), f(qkvw_->grad), f(qkvb_->grad), f(dqkv), f(s[kLn1]), f(qkvw_->value), N,
                 C, 3 * C);
  Tensor dx = activation(alloc_, {B, T, C});
  layernormBackward(f(dx), f(ln1w_->grad), f(ln1b_->grad), f(dln1), f(s[kX]), f(ln1w_->value),
                    f(s[kLn1Mean]), f(s[kLn1Rstd]), N, C);
  residualForward(f(dx), f(dx), f(dx2), NC);
  return dx;
}

// backward's input-gradient chain with every weight GEMM left out (dweight null); the output
// gradients those GEMMs need are kept for backwardWeight.
Tensor Block::backwardInput(const Tensor& dy, const Batch&, Activations& keep) {
  restoreAttention(keep);
  auto& s = keep.saved;
  const int B = static_cast<int>(s[kX].dim(0)), T = static_cast<int>(s[kX].dim(1));
  const int C = c_.hiddenSize, F = c_.mlpRatio * C, NH = c_.numHeads, N = B * T;
  const long NC = static_cast<long>(N) * C;
  Tensor dfc = activation(alloc_, {B, T, F});
  matmulBackward<float>(f(dfc), nullptr, nullptr, f(dy), f(s[kGelu]), f(fcprojw_->value), N, F, C);
  geluBackward(f(dfc), f(s[kFc]), f(dfc), static_cast<long>(N) * F);
  Tensor dln2 = activation(alloc_, {B, T, C});
  matmulBackward<float>(f(dln2), nullptr, nullptr, f(dfc), f(s[kLn2]), f(fcw_->value), N, C, F);
  Tensor dx2 = activation(alloc_, {B, T, C});
  layernormInputGrad(alloc_, dx2, dln2, s[kX2], *ln2w_, s[kLn2Mean], s[kLn2Rstd], N, C);
  residualForward(f(dx2), f(dx2), f(dy), NC);
  Tensor datty = activation(alloc_, {B, T, C});
  matmulBackward<float>(f(datty), nullptr, nullptr, f(dx2), f(s[kAttY]), f(projw_->value), N, C, C);
  Tensor dqkv = activation(alloc_, {B, T, 3 * C}), scratch = activation(alloc_, {T, T});
  attentionBackward(f(dqkv), f(scratch), f(datty), f(s[kQkv]), f(s[kAtt]), B, T, C, NH);
  Tensor dln1 = activation(alloc_, {B, T, C});
  matmulBackward<float>(f(dln1), nullptr, nullptr, f(dqkv), f(s[kLn1]), f(qkvw_->value), N, C,
                        3 * C);
  Tensor dx = activation(alloc_, {B, T, C});
  layernormInputGrad(alloc_, dx, dln1, s[kX], *ln1w_, s[kLn1Mean], s[kLn1Rstd], N, C);
  residualForward(f(dx), f(dx), f(dx2), NC);
  // What the weight half does not need goes now (the attention probabilities are the largest).
  s[kAtt] = s[kFc] = s[kQkv] = Tensor();
  s.insert(s.end(), {dy, dfc, dln2, dx2, dqkv, dln1});
  return dx;
}

void Block::backwardWeight(const Batch&, Activations& keep) {
  const auto& s = keep.saved;
  const int B = static_cast<int>(s[kX].dim(0)), T = static_cast<int>(s[kX].dim(1));
  const int C = c_.hiddenSize, F = c_.mlpRatio * C, N = B * T;
  matmulBackward<float>(nullptr, f(fcprojw_->grad), f(fcprojb_->grad), f(s[kDy]), f(s[kGelu]),
                        f(fcprojw_->value), N, F, C);
  matmulBackward<float>(nullptr, f(fcw_->grad), f(fcb_->grad), f(s[kDfc]), f(s[kLn2]),
                        f(fcw_->value), N, C, F);
  layernormWeightGrad(alloc_, *ln2w_, *ln2b_, s[kDln2], s[kX2], s[kLn2Mean], s[kLn2Rstd], N, C);
  matmulBackward<float>(nullptr, f(projw_->grad), f(projb_->grad), f(s[kDx2]), f(s[kAttY]),
                        f(projw_->value), N, C, C);
  matmulBackward<float>(nullptr, f(qkvw_->grad), f(qkvb_->grad), f(s[kDqkv]), f(s[kLn1]),
                        f(qkvw_->value), N, C, 3 * C);
  layernormWeightGrad(alloc_, *ln1w_, *ln1b_, s[kDln1], s[kX], s[kLn1Mean], s[kLn1Rstd], N, C);
  keep.clear();
}

class Head final : public LossLayer {
 public:
  Head(Model& m, const GptConfig& c) : alloc_(m.allocator()), c_(c) {
    lnw_ = m.find("ln_f.weight");
    lnb_ = m.find("ln_f.bias");
    wte_ = m.find("wte.weight");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {lnw_, lnb_, wte_}; }

  Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) override {
    const int B = static_cast<int>(x.dim(0)), T = static_cast<int>(x.dim(1));
    const int C = c_.hiddenSize, V = c_.vocabSize, N = B * T;
    Tensor ln = activation(alloc_, {B, T, C}), mean = activation(alloc_, {N}),
           rstd = activation(alloc_, {N});
    layernormForward(f(ln), f(mean), f(rstd), f(x), f(lnw_->value), f(lnb_->value), N, C);
    Tensor probs = activation(alloc_, {N, V});
    matmulForward<float>(f(probs), f(ln), f(wte_->value), nullptr, N, C, V);
    Tensor losses = activation(alloc_, {N});
    crossEntropyForward(f(losses), f(probs), f(probs), batch.targets.data<std::int32_t>(), N, V);
    keep.saved = {x, ln, mean, rstd, probs};
    return losses;
  }

  Tensor backward(const Tensor&, const Batch& batch, Activations& keep) override {
    const auto& s = keep.saved;
    const int B = static_cast<int>(s[0].dim(0)), T = static_cast<int>(s[0].dim(1));
    const int C = c_.hiddenSize, V = c_.vocabSize, N = B * T;
    Tensor dlosses = activation(alloc_, {N});
    for (int i = 0; i < N; ++i) f(dlosses)[i] = batch.lossWeight;
    // dlogits overwrite the saved probabilities: they are not needed afterwards.
    crossEntropyBackward(f(s[4]), f(s[4]), batch.targets.data<std::int32_t>(), f(dlosses), N, V);
    Tensor dln = activation(alloc_, {B, T, C});
    matmulBackward<float>(f(dln), f(wte_->grad), nullptr, f(s[4]), f(s[1]), f(wte_->value), N, C,
                          V);
    Tensor dx = activation(alloc_, {B, T, C});
    layernormBackward(f(dx), f(lnw_->grad), f(lnb_->grad), f(dln), f(s[0]), f(lnw_->value), f(s[2]),
                      f(s[3]), N, C);
    return dx;
  }

  // The input half keeps the logits' gradient (in place of the probabilities) and dln; the
  // weight half runs the V x C GEMM of the tied embedding's gradient.
  bool splitsBackward() const override { return true; }
  Tensor backwardInput(const Tensor&, const Batch& batch, Activations& keep) override {
    auto& s = keep.saved;
    const int B = static_cast<int>(s[0].dim(0)), T = static_cast<int>(s[0].dim(1));
    const int C = c_.hiddenSize, V = c_.vocabSize, N = B * T;
    Tensor dlosses = activation(alloc_, {N});
    for (int i = 0; i < N; ++i) f(dlosses)[i] = batch.lossWeight;
    crossEntropyBackward(f(s[4]), f(s[4]), batch.targets.data<std::int32_t>(), f(dlosses), N, V);
    Tensor dln = activation(alloc_, {B, T, C});
    matmulBackward<float>(f(dln), nullptr, nullptr, f(s[4]), f(s[1]), f(wte_->value), N, C, V);
    Tensor dx = activation(alloc_, {B, T, C});
    layernormInputGrad(alloc_, dx, dln, s[0], *lnw_, s[2], s[3], N, C);
    s.push_back(dln);
    return dx;
  }
  void backwardWeight(const Batch&, Activations& keep) override {
    const auto& s = keep.saved;
    const int N = static_cast<int>(s[0].dim(0) * s[0].dim(1));
    const int C = c_.hiddenSize, V = c_.vocabSize;
    matmulBackward<float>(nullptr, f(wte_->grad), nullptr, f(s[4]), f(s[1]), f(wte_->value), N, C,
                          V);
    layernormWeightGrad(alloc_, *lnw_, *lnb_, s[5], s[0], s[2], s[3], N, C);
    keep.clear();
  }

  std::int64_t correct(const Batch& batch, const Activations& keep) const override {
    const Tensor& probs = keep.saved[4];
    const auto N = probs.dim(0), V = probs.dim(1);
    const auto* targets = batch.targets.data<std::int32_t>();
    std::int64_t hits = 0;
    for (std::int64_t n = 0; n < N; ++n) {
      const float* p = f(probs) + n * V;
      std::int64_t best = 0;
      for (std::int64_t v = 1; v < V; ++v) best = p[v] > p[best] ? v : best;
      hits += best == targets[n];
    }
    return hits;
  }

 private:
  std::string name_ = "head";
  Allocator& alloc_;
  GptConfig c_;
  Parameter *lnw_, *lnb_, *wte_;
};

}  // namespace

void buildGpt(Model& m, const GptConfig& c) {
  std::vector<int> all(static_cast<std::size_t>(c.numLayers) + 2);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  buildGpt(m, c, all);
}

bool holdsLayer(const std::vector<int>& layers, int i) {
  return std::find(layers.begin(), layers.end(), i) != layers.end();
}

void addGptParameters(Model& m, const GptConfig& c, const std::vector<int>& layers,
                      const GptSplits& split) {
  const int last = c.numLayers + 1;  // the head's index
  auto holds = [&](int layer) { return holdsLayer(layers, layer); };
  const std::int64_t C = c.hiddenSize, F = static_cast<std::int64_t>(c.mlpRatio) * C;
  using K = ParameterInit::Kind;
  const ParameterInit normal{K::Normal, 0.02f};
  // GPT-2: residual projections scaled by 1/sqrt(2 L) so the residual stream's variance stays
  // flat with depth.
  const ParameterInit projection{K::Normal, 0.02f / std::sqrt(2.0f * c.numLayers)};
  const ParameterInit zeros{K::Zeros, 0}, ones{K::Ones, 0};
  if (holds(0) || holds(last))
    m.addParameter("wte.weight", {c.vocabSize, C}, normal, true, split.vocabulary);
  if (holds(0)) m.addParameter("wpe.weight", {c.contextLength, C}, normal, true);
  for (int i = 0; i < c.numLayers; ++i) {
    if (!holds(i + 1)) continue;
    const std::string p = "h." + std::to_string(i) + ".";
    m.addParameter(p + "ln_1.weight", {C}, ones, false);
    m.addParameter(p + "ln_1.bias", {C}, zeros, false);
    m.addParameter(p + "attn.c_attn.weight", {3 * C, C}, normal, true, split.qkv);
    m.addParameter(p + "attn.c_attn.bias", {3 * C}, zeros, false, split.qkv);
    m.addParameter(p + "attn.c_proj.weight", {C, C}, projection, true, split.rows);
    m.addParameter(p + "attn.c_proj.bias", {C}, zeros, false);
    m.addParameter(p + "ln_2.weight", {C}, ones, false);
    m.addParameter(p + "ln_2.bias", {C}, zeros, false);
    m.addParameter(p + "mlp.c_fc.weight", {F, C}, normal, true, split.columns);
    m.addParameter(p + "mlp.c_fc.bias", {F}, zeros, false, split.columns);
    m.addParameter(p + "mlp.c_proj.weight", {C, F}, projection, true, split.rows);
    m.addParameter(p + "mlp.c_proj.bias", {C}, zeros, false);
  }
  if (holds(last)) {
    m.addParameter("ln_f.weight", {C}, ones, false);
    m.addParameter("ln_f.bias", {C}, zeros, false);
  }
}

void buildGpt(Model& m, const GptConfig& c, const std::vector<int>& layers) {
  validate(c);
  const int last = c.numLayers + 1;
  auto holds = [&](int layer) { return holdsLayer(layers, layer); };
  addGptParameters(m, c, layers);
  if (holds(0)) m.addLayer(std::make_unique<Embedding>(m, c));
  for (int i = 0; i < c.numLayers; ++i) {
    if (holds(i + 1)) m.addLayer(std::make_unique<Block>(m, c, i));
  }
  if (holds(last)) m.addLayer(std::make_unique<Head>(m, c));
}

}  // namespace parascope
