#include "core/model/gpt_layers.h"

#include <climits>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "core/common/error.h"
#include "core/kernels/attention.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/math.h"
#include "core/kernels/matmul.h"
#include "core/kernels/precision.h"
#include "core/kernels/residual.h"

namespace parascope {

using namespace kernels;

void validateTensorParallel(const GptConfig& c, int t, bool sequenceParallel) {
  auto need = [t](bool ok, const std::string& what, int size) {
    if (!ok)
      throw UserError("config: " + what + " (" + std::to_string(size) +
                      ") must be divisible by tensor_model_parallel_size (" + std::to_string(t) +
                      ")");
  };
  need(c.numHeads % t == 0, "model.num_attention_heads", c.numHeads);
  need(c.queryGroups() % t == 0, "model.num_query_groups", c.queryGroups());
  need(c.ffnWidth() % t == 0,
       c.ffnHiddenSize > 0 ? "model.ffn_hidden_size"
                           : "the MLP width (model.mlp_ratio x model.hidden_size)",
       static_cast<int>(c.ffnWidth()));
  need(c.vocabSize % t == 0, "model.vocab_size", c.vocabSize);
  if (sequenceParallel)
    need(c.contextLength % t == 0, "with sequence_parallel, model.context_length", c.contextLength);
}

namespace {

Tensor activation(Allocator& a, const Shape& s) {
  return Tensor::empty(s, DType::F32, MemoryCategory::Activation, a);
}
float* f(const Tensor& t) {
  return t.data<float>();
}
// Attention's scratch for one pass; none (a null pointer) where the device's kernels take none.
Tensor attentionScratch(const KernelOps& ops, Allocator& a, int B, int T, int C, int NH,
                        bool backward) {
  const long n = ops.attentionScratch(B, T, C, NH, backward);
  return n > 0 ? activation(a, {n}) : Tensor();
}
float* scratchOf(const Tensor& scratch) {
  return scratch.defined() ? f(scratch) : nullptr;
}
// A residual connection's gradient added in a layernorm's backward pass; none where undefined.
const float* residualGrad(const Tensor& t) {
  return t.defined() ? f(t) : nullptr;
}
int rowsOf(const Batch& b) {
  return static_cast<int>(b.inputs.dim(0) * b.inputs.dim(1));
}

// Gradient of a parameter held whole on every rank. Under sequence parallelism each rank sees
// only its token rows, so the increment is computed apart, summed over the group, then added;
// otherwise every rank computes the whole increment and accumulates it directly.
class SharedGrad {
 public:
  SharedGrad(const KernelOps& ops, TensorParallelRegion& region, Parameter* p, Allocator& a)
      : ops_(ops), region_(region), p_(p) {
    if (region.size() > 1 && region.sequenceParallel())
      scratch_ = Tensor::zeros(p->shape, DType::F32, MemoryCategory::Workspace, a);
  }
  float* target() const { return scratch_.defined() ? f(scratch_) : f(p_->grad); }
  void finish() {
    if (!scratch_.defined()) return;
    region_.sumSharedGradient(f(scratch_), scratch_.numel());
    ops_.accumulate(f(p_->grad), f(scratch_), static_cast<long>(scratch_.numel()), DType::F32);
  }

 private:
  const KernelOps& ops_;
  TensorParallelRegion& region_;
  Parameter* p_;
  Tensor scratch_;
};

// LayerNorm backward split into its halves: the input half through the fused kernel, its weight
// and bias sums (unwanted there) into a scratch row pair; the weight half computes those sums
// alone, to the bit the fused kernel's.
Tensor layernormInputGrad(const KernelOps& ops, Allocator& a, const Tensor& dout, const Tensor& inp,
                          const Tensor& mean, const Tensor& rstd, const Parameter& weight, int C,
                          const Tensor& dresidual) {
  const int rows = static_cast<int>(inp.numel() / C);
  Tensor dinp = activation(a, {rows, C});
  Tensor unused = Tensor::zeros({2, C}, DType::F32, MemoryCategory::Workspace, a);
  ops.layernormBackward(f(dinp), f(unused), f(unused) + C, f(dout), f(inp), f(weight.value),
                        f(mean), f(rstd), rows, C, residualGrad(dresidual));
  return dinp;
}
// The weight and bias gradients, shared over the group.
void layernormWeightGrad(const KernelOps& ops, TensorParallelRegion& region, Allocator& a,
                         const Tensor& dout, const Tensor& inp, const Tensor& mean,
                         const Tensor& rstd, Parameter* weight, Parameter* bias, int C) {
  const int rows = static_cast<int>(inp.numel() / C);
  SharedGrad dw(ops, region, weight, a), db(ops, region, bias, a);
  ops.layernormBackward(nullptr, dw.target(), db.target(), f(dout), f(inp), f(weight->value),
                        f(mean), f(rstd), rows, C, nullptr);
  dw.finish();
  db.finish();
}

// Both halves from one kernel call, for a backward that is not split: the input gradient, and the
// weight and bias gradients shared over the group.
Tensor layernormGrad(const KernelOps& ops, TensorParallelRegion& region, Allocator& a,
                     const Tensor& dout, const Tensor& inp, const Tensor& mean, const Tensor& rstd,
                     Parameter* weight, Parameter* bias, int C, const Tensor& dresidual) {
  const int rows = static_cast<int>(inp.numel() / C);
  Tensor dinp = activation(a, {rows, C});
  SharedGrad dw(ops, region, weight, a), db(ops, region, bias, a);
  ops.layernormBackward(f(dinp), dw.target(), db.target(), f(dout), f(inp), f(weight->value),
                        f(mean), f(rstd), rows, C, residualGrad(dresidual));
  dw.finish();
  db.finish();
  return dinp;
}

// Token embedding with the vocabulary split (rank r holds rows [r V / t, (r + 1) V / t) of wte),
// plus the position embedding, held whole. On one rank, the embedding kernels.
class Embedding final : public Layer {
 public:
  Embedding(Model& m, const GptConfig& c, std::shared_ptr<TensorParallelRegion> r)
      : alloc_(m.allocator()), ops_(m.ops()), c_(c), region_(std::move(r)) {
    wte_ = m.find("wte.weight");
    wpe_ = m.find("wpe.weight");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {wte_, wpe_}; }
  Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) override;
  Tensor backward(const Tensor& dy, const Batch& batch, Activations& keep) override;

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
  int firstRow(int N) const {
    return region_->sequenceParallel() ? region_->rank() * (N / region_->size()) : 0;
  }
  std::string name_ = "embedding";
  Allocator& alloc_;
  const KernelOps& ops_;
  GptConfig c_;
  std::shared_ptr<TensorParallelRegion> region_;
  Parameter* wte_;
  Parameter* wpe_;
};

Tensor Embedding::forward(const Tensor& x, const Batch& batch, Activations& keep) {
  const int B = static_cast<int>(x.dim(0)), T = static_cast<int>(x.dim(1));
  const int C = c_.hiddenSize, N = rowsOf(batch), V = c_.vocabSize;
  if (T > c_.contextLength) {
    throw UserError("sequence length " + std::to_string(T) + " exceeds model.context_length " +
                    std::to_string(c_.contextLength));
  }
  // A device's tokens were checked on the host before they were copied there (uploadBatch).
  if (x.device().kind == Device::Kind::Cpu) checkTokens(x, c_);
  const auto* tokens = x.data<std::int32_t>();
  keep.saved = {x};
  if (region_->size() == 1) {
    Tensor out = activation(alloc_, {N, C});
    ops_.embeddingForward(f(out), tokens, f(wte_->value), f(wpe_->value), B, T, C);
    return out;
  }
  const int part = V / region_->size(), first = region_->rank() * part;
  Tensor partial = activation(alloc_, {N, C});
  ops_.embeddingPartForward(f(partial), tokens, f(wte_->value), N, first, part, C);
  Tensor out = region_->leave(partial);
  ops_.positionForward(f(out), f(wpe_->value), static_cast<int>(out.dim(0)), firstRow(N), T, C);
  return out;
}

Tensor Embedding::backward(const Tensor& dy, const Batch& batch, Activations& keep) {
  const Tensor& x = keep.saved[0];
  const int B = static_cast<int>(x.dim(0)), T = static_cast<int>(x.dim(1));
  const int C = c_.hiddenSize, N = rowsOf(batch);
  const auto* tokens = x.data<std::int32_t>();
  if (region_->size() == 1) {
    ops_.embeddingBackward(f(wte_->grad), f(wpe_->grad), f(dy), tokens, B, T, C);
    return {};
  }
  SharedGrad dwpe(ops_, *region_, wpe_, alloc_);
  ops_.positionBackward(dwpe.target(), f(dy), static_cast<int>(dy.numel() / C), firstRow(N), T, C);
  dwpe.finish();
  const Tensor dfull = region_->leaveBackward(dy);
  const int part = c_.vocabSize / region_->size(), first = region_->rank() * part;
  ops_.embeddingPartBackward(f(wte_->grad), f(dfull), tokens, N, first, part, C);
  return {};
}

class Block final : public Layer {
 public:
  Block(Model& m, const GptConfig& c, std::shared_ptr<TensorParallelRegion> r, int index)
      : name_("block." + std::to_string(index)),
        alloc_(m.allocator()),
        ops_(m.ops()),
        c_(c),
        region_(std::move(r)) {
    const std::string p = "h." + std::to_string(index) + ".";
    for (const char* n :
         {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
          "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",
          "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"})
      params_.push_back(m.find(p + n));
    for (const P weight : {QkvW, ProjW, FcW, FcProjW}) params_[weight]->gradWrittenWhole = true;
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return params_; }
  Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) override;
  // The whole backward is the input half followed by the weight half, each layernorm's
  // gradients from one kernel call.
  Tensor backward(const Tensor& dy, const Batch& batch, Activations& keep) override {
    Tensor dx = inputHalf(dy, batch, keep, true);
    weightHalf(batch, keep, true);
    return dx;
  }
  bool splitsBackward() const override { return true; }
  Tensor backwardInput(const Tensor& dy, const Batch& batch, Activations& keep) override {
    return inputHalf(dy, batch, keep, false);
  }
  void backwardWeight(const Batch& batch, Activations& keep) override {
    weightHalf(batch, keep, false);
  }
  void setSelectiveRecompute(bool on) override { selective_ = on; }

 private:
  enum P { Ln1W, Ln1B, QkvW, QkvB, ProjW, ProjB, Ln2W, Ln2B, FcW, FcB, FcProjW, FcProjB };
  enum Saved {
    kX,
    kLn1,
    kLn1Mean,
    kLn1Rstd,
    kQkv,
    kAttStats,
    kAttY,
    kX2,
    kLn2,
    kLn2Mean,
    kLn2Rstd,
    kFc,
    kGelu,
    // Appended by backwardInput for backwardWeight: the gradients its GEMMs and layernorms need.
    kDy,
    kDyFull,
    kDfc,
    kDln2,
    kDx2,
    kDx2Full,
    kDqkv,
    kDln1
  };
  float* value(P p) const { return f(params_[p]->value); }
  float* grad(P p) const { return f(params_[p]->grad); }
  // How the weight half's product takes weight p's gradient: overwriting it where the step has
  // not written it yet (Model::startGradients), then adding to it.
  kernels::WeightGradient firstWrite(P p) {
    return std::exchange(params_[p]->gradStale, false) ? kernels::WeightGradient::Overwrite
                                                       : kernels::WeightGradient::Add;
  }
  // A row-parallel GEMM's bias. Split, it is added once after the partial sums are combined, and
  // its gradient sums d's rows. On one rank the GEMM takes it as the column-parallel ones do,
  // starting from the bias: a different rounding from adding it afterwards.
  bool fusedBias() const { return region_->size() == 1; }
  void rowParallelBias(const Tensor& out, P bias);
  void rowParallelBiasGrad(const Tensor& d, P bias);
  void restoreAttention(Activations& keep, int B, int T);
  void attentionCore(const Tensor& out, const Tensor& stats, const Tensor& qkv, int B, int T);
  // whole: the layernorms' weight gradients come with their input gradients, in the input half.
  Tensor inputHalf(const Tensor& dy, const Batch& batch, Activations& keep, bool whole);
  void weightHalf(const Batch& batch, Activations& keep, bool whole);

  std::string name_;
  Allocator& alloc_;
  const KernelOps& ops_;
  GptConfig c_;
  std::shared_ptr<TensorParallelRegion> region_;
  std::vector<Parameter*> params_;
  bool selective_ = false;  // drop the attention core's outputs in forward, recompute them
};

Tensor Block::forward(const Tensor& x, const Batch& batch, Activations& keep) {
  const int B = static_cast<int>(batch.inputs.dim(0)), T = static_cast<int>(batch.inputs.dim(1));
  const int t = region_->size(), C = c_.hiddenSize, Cl = C / t, NH = c_.numHeads / t;
  const int Fl = c_.mlpRatio * C / t, N = B * T, rows = static_cast<int>(x.numel() / C);
  TensorParallelRegion& region = *region_;
  Tensor ln1 = activation(alloc_, {rows, C}), ln1m = activation(alloc_, {rows}),
         ln1r = activation(alloc_, {rows});
  ops_.layernormForward(f(ln1), f(ln1m), f(ln1r), f(x), value(Ln1W), value(Ln1B), rows, C);
  Tensor qkv = activation(alloc_, {N, 3 * Cl});
  ops_.matmulForward(f(qkv), f(region.enter(ln1)), value(QkvW), value(QkvB), N, C, 3 * Cl);
  Tensor stats = activation(alloc_, {B, NH, T, 2}), atty = activation(alloc_, {N, Cl});
  attentionCore(atty, stats, qkv, B, T);
  Tensor proj = activation(alloc_, {N, C});
  ops_.matmulForward(f(proj), f(atty), value(ProjW), fusedBias() ? value(ProjB) : nullptr, N, Cl,
                     C);
  Tensor x2 = region.leave(proj);
  rowParallelBias(x2, ProjB);
  Tensor ln2 = activation(alloc_, {rows, C}), ln2m = activation(alloc_, {rows}),
         ln2r = activation(alloc_, {rows});
  ops_.residualLayernormForward(f(x2), f(ln2), f(ln2m), f(ln2r), f(x), f(x2), value(Ln2W),
                                value(Ln2B), rows, C);
  Tensor fc = activation(alloc_, {N, Fl}), gelu = activation(alloc_, {N, Fl});
  ops_.matmulForward(f(fc), f(region.enter(ln2)), value(FcW), value(FcB), N, C, Fl);
  ops_.geluForward(f(gelu), f(fc), static_cast<long>(N) * Fl);
  Tensor mlp = activation(alloc_, {N, C});
  ops_.matmulForward(f(mlp), f(gelu), value(FcProjW), fusedBias() ? value(FcProjB) : nullptr, N, Fl,
                     C);
  Tensor out = region.leave(mlp);
  rowParallelBias(out, FcProjB);
  ops_.residualForward(f(out), f(x2), f(out), static_cast<long>(rows) * C);
  // Under sequence parallelism the gathered layernorm outputs are gathered again in backward
  // rather than kept (Megatron's choice: t times less activation memory for two all-gathers).
  // Selective recompute (Megatron's) keeps only qkv for the attention core.
  if (selective_) stats = atty = Tensor();
  keep.saved = {x, ln1, ln1m, ln1r, qkv, stats, atty, x2, ln2, ln2m, ln2r, fc, gelu};
  keep.exact = {kAttStats};
  return out;
}

void Block::rowParallelBias(const Tensor& out, P bias) {
  if (fusedBias()) return;
  const int C = c_.hiddenSize;
  ops_.biasForward(f(out), value(bias), out.numel() / C, static_cast<long>(C));
}

void Block::rowParallelBiasGrad(const Tensor& d, P bias) {
  if (fusedBias()) return;  // the weight GEMM's backward accumulates it
  const int C = c_.hiddenSize;
  SharedGrad db(ops_, *region_, params_[bias], alloc_);
  ops_.biasBackward(db.target(), f(d), d.numel() / C, static_cast<long>(C));
  db.finish();
}

void Block::restoreAttention(Activations& keep, int B, int T) {
  auto& s = keep.saved;
  if (s[kAttStats].defined()) return;
  const int t = region_->size(), Cl = c_.hiddenSize / t, NH = c_.numHeads / t;
  s[kAttStats] = activation(alloc_, {B, NH, T, 2});
  s[kAttY] = activation(alloc_, {B * T, Cl});
  attentionCore(s[kAttY], s[kAttStats], s[kQkv], B, T);
}

// The forward's scratch lives only as long as the kernel runs.
void Block::attentionCore(const Tensor& out, const Tensor& stats, const Tensor& qkv, int B, int T) {
  const int t = region_->size(), Cl = c_.hiddenSize / t, NH = c_.numHeads / t;
  const Tensor scratch = attentionScratch(ops_, alloc_, B, T, Cl, NH, false);
  ops_.attentionForward(f(out), f(stats), scratchOf(scratch), f(qkv), B, T, Cl, NH);
}

// The input-gradient half (zero-bubble B): every GEMM's input gradient, attention and the
// layernorms' input gradients, with the region's collectives; what the weight half needs is
// appended to the saved tensors.
Tensor Block::inputHalf(const Tensor& dy, const Batch& batch, Activations& keep, bool whole) {
  auto& s = keep.saved;
  const int B = static_cast<int>(batch.inputs.dim(0)), T = static_cast<int>(batch.inputs.dim(1));
  const int t = region_->size(), C = c_.hiddenSize, Cl = C / t, NH = c_.numHeads / t;
  const int Fl = c_.mlpRatio * C / t, N = B * T;
  TensorParallelRegion& region = *region_;
  restoreAttention(keep, B, T);
  // MLP branch: out = x2 + leave(gelu(fc(enter(ln2(x2)))) W2^T) + b2.
  const Tensor dyFull = region.leaveBackward(dy);
  Tensor dfc = activation(alloc_, {N, Fl});
  // The input gradients alone (no weight gradient to add to or overwrite: Add says nothing).
  ops_.matmulBackward(f(dfc), nullptr, nullptr, f(dyFull), f(s[kGelu]), value(FcProjW), N, Fl, C,
                      kernels::WeightGradient::Add);
  ops_.geluBackward(f(dfc), f(s[kFc]), f(dfc), static_cast<long>(N) * Fl);
  Tensor dln2Full = activation(alloc_, {N, C});
  // The GEMM's input (the gathered layernorm output) only feeds the weight gradient: not needed.
  ops_.matmulBackward(f(dln2Full), nullptr, nullptr, f(dfc), nullptr, value(FcW), N, C, Fl,
                      kernels::WeightGradient::Add);
  const Tensor dln2 = region.enterBackward(dln2Full);
  // dx2 = the layernorm's input gradient + dy (the residual), in one pass.
  Tensor dx2 = whole ? layernormGrad(ops_, region, alloc_, dln2, s[kX2], s[kLn2Mean], s[kLn2Rstd],
                                     params_[Ln2W], params_[Ln2B], C, dy)
                     : layernormInputGrad(ops_, alloc_, dln2, s[kX2], s[kLn2Mean], s[kLn2Rstd],
                                          *params_[Ln2W], C, dy);
  // Attention branch: x2 = x + leave(attn(enter(ln1(x)) Wqkv^T) Wproj^T) + bproj.
  const Tensor dx2Full = region.leaveBackward(dx2);
  Tensor datty = activation(alloc_, {N, Cl});
  ops_.matmulBackward(f(datty), nullptr, nullptr, f(dx2Full), f(s[kAttY]), value(ProjW), N, Cl, C,
                      kernels::WeightGradient::Add);
  Tensor dqkv = activation(alloc_, {N, 3 * Cl}),
         scratch = attentionScratch(ops_, alloc_, B, T, Cl, NH, true);
  ops_.attentionBackward(f(dqkv), scratchOf(scratch), f(datty), f(s[kQkv]), f(s[kAttY]),
                         f(s[kAttStats]), B, T, Cl, NH);
  Tensor dln1Full = activation(alloc_, {N, C});
  ops_.matmulBackward(f(dln1Full), nullptr, nullptr, f(dqkv), nullptr, value(QkvW), N, C, 3 * Cl,
                      kernels::WeightGradient::Add);
  const Tensor dln1 = region.enterBackward(dln1Full);
  Tensor dx = whole ? layernormGrad(ops_, region, alloc_, dln1, s[kX], s[kLn1Mean], s[kLn1Rstd],
                                    params_[Ln1W], params_[Ln1B], C, dx2)
                    : layernormInputGrad(ops_, alloc_, dln1, s[kX], s[kLn1Mean], s[kLn1Rstd],
                                         *params_[Ln1W], C, dx2);
  // What the weight half does not need goes now.
  s[kAttStats] = s[kFc] = s[kQkv] = Tensor();
  s.insert(s.end(), {dy, dyFull, dfc, dln2, dx2, dx2Full, dqkv, dln1});
  return dx;
}

// The weight half (zero-bubble W): every parameter gradient from what backwardInput kept. Under
// sequence parallelism the layernorm outputs are gathered again here.
void Block::weightHalf(const Batch& batch, Activations& keep, bool whole) {
  const auto& s = keep.saved;
  const int t = region_->size(), C = c_.hiddenSize, Cl = C / t, Fl = c_.mlpRatio * C / t;
  const int N = static_cast<int>(batch.inputs.dim(0) * batch.inputs.dim(1));
  TensorParallelRegion& region = *region_;
  float* fcProjBias = fusedBias() ? grad(FcProjB) : nullptr;
  float* projBias = fusedBias() ? grad(ProjB) : nullptr;
  rowParallelBiasGrad(s[kDy], FcProjB);
  ops_.matmulBackward(nullptr, grad(FcProjW), fcProjBias, f(s[kDyFull]), f(s[kGelu]),
                      value(FcProjW), N, Fl, C, firstWrite(FcProjW));
  ops_.matmulBackward(nullptr, grad(FcW), grad(FcB), f(s[kDfc]), f(region.enter(s[kLn2])),
                      value(FcW), N, C, Fl, firstWrite(FcW));
  if (!whole) {
    layernormWeightGrad(ops_, region, alloc_, s[kDln2], s[kX2], s[kLn2Mean], s[kLn2Rstd],
                        params_[Ln2W], params_[Ln2B], C);
  }
  rowParallelBiasGrad(s[kDx2], ProjB);
  ops_.matmulBackward(nullptr, grad(ProjW), projBias, f(s[kDx2Full]), f(s[kAttY]), value(ProjW), N,
                      Cl, C, firstWrite(ProjW));
  ops_.matmulBackward(nullptr, grad(QkvW), grad(QkvB), f(s[kDqkv]), f(region.enter(s[kLn1])),
                      value(QkvW), N, C, 3 * Cl, firstWrite(QkvW));
  if (!whole) {
    layernormWeightGrad(ops_, region, alloc_, s[kDln1], s[kX], s[kLn1Mean], s[kLn1Rstd],
                        params_[Ln1W], params_[Ln1B], C);
  }
  keep.clear();
}

// Final layernorm, logits against this rank's vocabulary rows, and the cross-entropy. On one rank
// that is the fused softmax + cross-entropy kernel; split, the row maximum, the softmax
// denominator and the target's logit are each combined over the group, so every rank ends with
// every row's loss. The probabilities are kept for the backward pass, which turns them into the
// logits' gradient. In f32 they are kept whole and become that gradient in place. Under mixed
// precision they are kept in the compute type, rounded as every kept activation is, and the f32
// logits, then their gradient, exist for a chunk of rows at a time (headChunkRows): the whole
// N x V f32 logits would be the largest part of a GPT-2-sized model's activation peak.
class Head final : public LossLayer {
 public:
  Head(Model& m, const GptConfig& c, std::shared_ptr<TensorParallelRegion> r)
      : alloc_(m.allocator()),
        ops_(m.ops()),
        c_(c),
        compute_(m.computeType()),
        region_(std::move(r)) {
    lnw_ = m.find("ln_f.weight");
    lnb_ = m.find("ln_f.bias");
    wte_ = m.find("wte.weight");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {lnw_, lnb_, wte_}; }
  Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) override;
  // As the block's: the two halves, the layernorm's gradients from one kernel call, and each
  // chunk's logit gradient computed once for both of its products.
  Tensor backward(const Tensor&, const Batch& batch, Activations& keep) override {
    Tensor dx = inputHalf(batch, keep, true);
    keep.clear();
    return dx;
  }
  // The input half keeps dln and the probabilities (in f32: the logits' gradient in their
  // place); the weight half runs the V x C GEMM of the tied embedding's gradient.
  bool splitsBackward() const override { return true; }
  Tensor backwardInput(const Tensor&, const Batch& batch, Activations& keep) override {
    return inputHalf(batch, keep, false);
  }
  void backwardWeight(const Batch& batch, Activations& keep) override;
  std::int64_t correct(const Batch& batch, const Activations& keep) const override;

 private:
  enum Saved { kX, kLn, kMean, kRstd, kProbs, kDln };
  int vocabPart() const { return c_.vocabSize / region_->size(); }
  int firstVocab() const { return region_->rank() * vocabPart(); }
  bool lowProbabilities() const { return compute_ != DType::F32; }
  int chunkRows(int N) const { return headChunkRows(N, vocabPart(), compute_); }
  // Rows [row, row + n): their logits -> probabilities in place, and their losses.
  void crossEntropyRows(float* losses, float* logits, const Batch& batch, int row, int n);
  // The logits' gradient, (p - [v == target]) * weight, chunk by chunk: into dln's rows (when
  // given; in f32 the probabilities become the gradient in place then) and into the tied
  // embedding's gradient (when `weight`).
  void logitGradient(const Batch& batch, const Activations& keep, float* dln, bool weight);
  Tensor inputHalf(const Batch& batch, Activations& keep, bool whole);
  std::string name_ = "head";
  Allocator& alloc_;
  const KernelOps& ops_;
  GptConfig c_;
  DType compute_;
  std::shared_ptr<TensorParallelRegion> region_;
  Parameter *lnw_, *lnb_, *wte_;
};

Tensor Head::forward(const Tensor& x, const Batch& batch, Activations& keep) {
  const int C = c_.hiddenSize, Vl = vocabPart(), N = rowsOf(batch);
  const int rows = static_cast<int>(x.numel() / C);
  Tensor ln = activation(alloc_, {rows, C}), mean = activation(alloc_, {rows}),
         rstd = activation(alloc_, {rows});
  ops_.layernormForward(f(ln), f(mean), f(rstd), f(x), f(lnw_->value), f(lnb_->value), rows, C);
  const bool low = lowProbabilities();
  Tensor probs =
      Tensor::empty({N, Vl}, low ? compute_ : DType::F32, MemoryCategory::Activation, alloc_);
  Tensor losses = activation(alloc_, {N});
  {
    const Tensor lnRows = region_->enter(ln);
    const int chunk = chunkRows(N);
    const Tensor logits = low ? activation(alloc_, {chunk, Vl}) : Tensor();
    for (int row = 0; row < N; row += chunk) {
      const int n = std::min(chunk, N - row);
      const long at = static_cast<long>(row) * Vl;
      float* l = low ? f(logits) : f(probs) + at;
      ops_.matmulForward(l, f(lnRows) + static_cast<long>(row) * C, f(wte_->value), nullptr, n, C,
                         Vl);
      crossEntropyRows(f(losses) + row, l, batch, row, n);
      if (low)
        ops_.narrow(l, probs.data<std::uint16_t>() + at, static_cast<long>(n) * Vl, compute_);
    }
  }
  keep.saved = {x, ln, mean, rstd, probs};
  if (low) keep.exact = {kProbs};  // stored in the compute type already
  return losses;
}

void Head::crossEntropyRows(float* losses, float* logits, const Batch& batch, int row, int n) {
  const int Vl = vocabPart();
  const auto* targets = batch.targets.data<std::int32_t>() + row;
  if (region_->size() == 1) {
    ops_.crossEntropyForward(losses, logits, logits, targets, n, Vl);
    return;
  }
  // Row maxima over the whole vocabulary, then per row [sum of exp | target logit].
  Tensor maxima = activation(alloc_, {n}), sums = activation(alloc_, {2, n});
  ops_.crossEntropyPartMax(f(maxima), logits, n, Vl);
  region_->allReduce(f(maxima), static_cast<std::size_t>(n), DType::F32, ReduceOp::Max);
  ops_.crossEntropyPartExp(f(sums), logits, logits, f(maxima), targets, n, Vl, firstVocab());
  region_->allReduce(f(sums), static_cast<std::size_t>(2 * n), DType::F32, ReduceOp::Sum);
  ops_.crossEntropyPartFinish(losses, logits, f(sums), f(maxima), n, Vl);
}

void Head::logitGradient(const Batch& batch, const Activations& keep, float* dln, bool weight) {
  const auto& s = keep.saved;
  const int C = c_.hiddenSize, Vl = vocabPart(), N = rowsOf(batch), first = firstVocab();
  const auto* targets = batch.targets.data<std::int32_t>();
  const bool low = s[kProbs].dtype() != DType::F32;
  const Tensor lnRows = weight ? region_->enter(s[kLn]) : Tensor();
  const int chunk = chunkRows(N);
  const Tensor gradient = low ? activation(alloc_, {chunk, Vl}) : Tensor();
  for (int row = 0; row < N; row += chunk) {
    const int n = std::min(chunk, N - row);
    const long at = static_cast<long>(row) * Vl;
    float* d = low ? f(gradient) : f(s[kProbs]) + at;
    if (low)
      ops_.widen(s[kProbs].data<std::uint16_t>() + at, d, static_cast<long>(n) * Vl, compute_);
    if (low || dln != nullptr)
      ops_.crossEntropyPartBackward(d, targets + row, n, Vl, first, batch.lossWeight);
    if (dln != nullptr) {
      ops_.matmulBackward(dln + static_cast<long>(row) * C, nullptr, nullptr, d, nullptr,
                          f(wte_->value), n, C, Vl, kernels::WeightGradient::Add);
    }
    if (weight) {
      ops_.matmulBackward(nullptr, f(wte_->grad), nullptr, d,
                          f(lnRows) + static_cast<long>(row) * C, f(wte_->value), n, C, Vl,
                          kernels::WeightGradient::Add);
    }
  }
}

Tensor Head::inputHalf(const Batch& batch, Activations& keep, bool whole) {
  auto& s = keep.saved;
  const int C = c_.hiddenSize, N = rowsOf(batch);
  Tensor dln = activation(alloc_, {N, C});
  logitGradient(batch, keep, f(dln), whole);
  const Tensor dlnLocal = region_->enterBackward(dln);
  Tensor dx = whole ? layernormGrad(ops_, *region_, alloc_, dlnLocal, s[kX], s[kMean], s[kRstd],
                                    lnw_, lnb_, C, Tensor())
                    : layernormInputGrad(ops_, alloc_, dlnLocal, s[kX], s[kMean], s[kRstd], *lnw_,
                                         C, Tensor());
  s.push_back(dlnLocal);
  return dx;
}

void Head::backwardWeight(const Batch& batch, Activations& keep) {
  const auto& s = keep.saved;
  logitGradient(batch, keep, nullptr, true);
  layernormWeightGrad(ops_, *region_, alloc_, s[kDln], s[kX], s[kMean], s[kRstd], lnw_, lnb_,
                      c_.hiddenSize);
  keep.clear();
}

// A row's prediction is the lowest vocabulary index with the highest probability over all
// ranks, as a scan of the whole vocabulary finds it.
std::int64_t Head::correct(const Batch& batch, const Activations& keep) const {
  const Tensor probs = keep.saved[kProbs].onHost();
  const int N = static_cast<int>(probs.dim(0)), Vl = vocabPart(), first = firstVocab();
  const bool low = probs.dtype() != DType::F32;
  std::vector<float> best(static_cast<std::size_t>(N)), wide(low ? Vl : 0);
  std::vector<std::int32_t> index(static_cast<std::size_t>(N));
  for (int n = 0; n < N; ++n) {
    const long at = static_cast<long>(n) * Vl;
    if (low) widen(probs.data<std::uint16_t>() + at, wide.data(), Vl, probs.dtype());
    const float* p = low ? wide.data() : f(probs) + at;
    int b = 0;
    for (int v = 1; v < Vl; ++v) b = p[v] > p[b] ? v : b;
    best[static_cast<std::size_t>(n)] = p[b];
    index[static_cast<std::size_t>(n)] = first + b;
  }
  std::vector<float> top = best;
  region_->allReduce(top.data(), top.size(), DType::F32, ReduceOp::Max);
  for (std::size_t n = 0; n < index.size(); ++n)
    if (best[n] != top[n]) index[n] = INT_MAX;
  region_->allReduce(index.data(), index.size(), DType::I32, ReduceOp::Min);
  const Tensor targetTensor = batch.targets.onHost();
  const auto* targets = targetTensor.data<std::int32_t>();
  std::int64_t hits = 0;
  for (int n = 0; n < N; ++n) hits += index[static_cast<std::size_t>(n)] == targets[n];
  return hits;
}

}  // namespace

void checkTokens(const Tensor& tokens, const GptConfig& c, const char* what) {
  const auto* t = tokens.data<std::int32_t>();
  for (std::int64_t n = 0; n < tokens.numel(); ++n) {
    if (t[n] < 0 || t[n] >= c.vocabSize) {
      throw UserError(std::string(what) + " " + std::to_string(t[n]) + " at position " +
                      std::to_string(n) + " is outside the vocabulary [0, " +
                      std::to_string(c.vocabSize) + ")");
    }
  }
}

Batch uploadBatch(const Batch& batch, const GptConfig& c, Allocator& device) {
  checkTokens(batch.inputs, c);
  if (batch.targets.defined()) checkTokens(batch.targets, c, "target id");
  Batch out = batch;
  for (Tensor* t : {&out.inputs, &out.targets}) {
    if (!t->defined()) continue;
    Tensor there = Tensor::empty(t->shape(), t->dtype(), MemoryCategory::Workspace, device);
    there.copyFrom(*t);
    *t = there;
  }
  return out;
}

void buildGptTensorParallel(Model& m, const GptConfig& c,
                            const std::shared_ptr<TensorParallelRegion>& region,
                            const std::vector<int>& layers) {
  validate(c);
  const int t = region->size(), r = region->rank();
  validateTensorParallel(c, t, region->sequenceParallel());
  GptSplits splits;  // whole on one rank
  if (t > 1) {
    splits.vocabulary = {0, t, r, 1};
    splits.qkv = {0, t, r, 3};
    splits.columns = {0, t, r, 1};
    splits.rows = {1, t, r, 1};
  }
  addGptParameters(m, c, layers, splits);
  if (holdsLayer(layers, 0)) m.addLayer(std::make_unique<Embedding>(m, c, region));
  for (int i = 0; i < c.numLayers; ++i)
    if (holdsLayer(layers, i + 1)) m.addLayer(std::make_unique<Block>(m, c, region, i));
  if (holdsLayer(layers, c.numLayers + 1)) m.addLayer(std::make_unique<Head>(m, c, region));
}

std::vector<std::pair<std::string, Tensor>> gatherParameterValues(const Model& model,
                                                                  Communicator& group) {
  std::vector<std::pair<std::string, Tensor>> out;
  Allocator& a = model.allocator();
  // The whole values are assembled in the host's memory, which a GPU's parts are copied to.
  const bool host = a.device().kind == Device::Kind::Cpu;
  for (const Parameter& p : model.parameters()) {
    Tensor full = Tensor::empty(p.fullShape, DType::F32, MemoryCategory::Workspace,
                                host ? a : defaultAllocator());
    if (p.split.whole()) {
      full.copyFrom(p.value);
    } else {
      const std::int64_t n = p.numel();
      Tensor parts = Tensor::empty({group.size() * n}, DType::F32, MemoryCategory::Workspace, a);
      group.allGather(f(p.value), f(parts), static_cast<std::size_t>(n), DType::F32);
      parts = parts.onHost();
      for (int r = 0; r < group.size(); ++r) {
        TensorSplit s = p.split;
        s.index = r;
        placeSplitPart(f(parts) + r * n, f(full), p.fullShape, s);
      }
    }
    out.emplace_back(p.name, full);
  }
  return out;
}

}  // namespace parascope
