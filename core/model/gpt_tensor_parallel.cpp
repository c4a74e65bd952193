#include "core/model/gpt_tensor_parallel.h"

#include <climits>
#include <cmath>
#include <string>

#include "core/common/error.h"
#include "core/kernels/attention.h"
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
  need(c.mlpRatio * c.hiddenSize % t == 0, "the MLP width (model.mlp_ratio x model.hidden_size)",
       c.mlpRatio * c.hiddenSize);
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
int rowsOf(const Batch& b) {
  return static_cast<int>(b.inputs.dim(0) * b.inputs.dim(1));
}

// out[n, :] += bias for every row.
void addBias(float* out, const float* bias, int rows, int C) {
  for (int n = 0; n < rows; ++n)
    residualForward(out + static_cast<long>(n) * C, out + static_cast<long>(n) * C, bias, C);
}

// dbias += sum over rows of d.
void sumRows(float* dbias, const float* d, int rows, int C) {
  for (int n = 0; n < rows; ++n)
    residualForward(dbias, dbias, d + static_cast<long>(n) * C, static_cast<long>(C));
}

// Gradient of a parameter held whole on every rank. Under sequence parallelism each rank sees
// only its token rows, so the increment is computed apart, summed over the group, then added;
// otherwise every rank computes the whole increment and accumulates it directly.
class SharedGrad {
 public:
  SharedGrad(TensorParallelRegion& region, Parameter* p, Allocator& a) : region_(region), p_(p) {
    if (region.size() > 1 && region.sequenceParallel())
      scratch_ = Tensor::zeros(p->shape, DType::F32, MemoryCategory::Workspace, a);
  }
  float* target() const { return scratch_.defined() ? f(scratch_) : f(p_->grad); }
  void finish() {
    if (!scratch_.defined()) return;
    region_.sumSharedGradient(f(scratch_), scratch_.numel());
    residualForward(f(p_->grad), f(p_->grad), f(scratch_), static_cast<long>(scratch_.numel()));
  }

 private:
  TensorParallelRegion& region_;
  Parameter* p_;
  Tensor scratch_;
};

// Token embedding with the vocabulary split (rank r holds rows [r V / t, (r + 1) V / t) of wte),
// plus the position embedding, held whole.
class Embedding final : public Layer {
 public:
  Embedding(Model& m, const GptConfig& c, TensorParallelRegion& r)
      : alloc_(m.allocator()), c_(c), region_(r) {
    wte_ = m.find("wte.weight");
    wpe_ = m.find("wpe.weight");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {wte_, wpe_}; }

  Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) override {
    const int T = static_cast<int>(x.dim(1)), C = c_.hiddenSize, N = rowsOf(batch);
    if (T > c_.contextLength) {
      throw UserError("sequence length " + std::to_string(T) + " exceeds model.context_length " +
                      std::to_string(c_.contextLength));
    }
    const auto* tokens = x.data<std::int32_t>();
    const int V = c_.vocabSize, part = V / region_.size(), first = region_.rank() * part;
    Tensor partial = activation(alloc_, {N, C});
    for (int n = 0; n < N; ++n) {
      if (tokens[n] < 0 || tokens[n] >= V) {
        throw UserError("token id " + std::to_string(tokens[n]) + " at position " +
                        std::to_string(n) + " is outside the vocabulary [0, " + std::to_string(V) +
                        ")");
      }
      float* row = f(partial) + static_cast<long>(n) * C;
      const int local = tokens[n] - first;
      for (int i = 0; i < C; ++i)
        row[i] = local >= 0 && local < part ? f(wte_->value)[static_cast<long>(local) * C + i] : 0;
    }
    Tensor out = region_.leave(partial);
    const int rows = static_cast<int>(out.dim(0)), row0 = firstRow(N);
    for (int i = 0; i < rows; ++i)
      residualForward(f(out) + static_cast<long>(i) * C, f(out) + static_cast<long>(i) * C,
                      f(wpe_->value) + static_cast<long>((row0 + i) % T) * C, C);
    keep.saved = {x};
    return out;
  }

  Tensor backward(const Tensor& dy, const Batch& batch, Activations& keep) override {
    const Tensor& x = keep.saved[0];
    const int T = static_cast<int>(x.dim(1)), C = c_.hiddenSize, N = rowsOf(batch);
    const int rows = static_cast<int>(dy.numel() / C), row0 = firstRow(N);
    SharedGrad dwpe(region_, wpe_, alloc_);
    for (int i = 0; i < rows; ++i)
      residualForward(dwpe.target() + static_cast<long>((row0 + i) % T) * C,
                      dwpe.target() + static_cast<long>((row0 + i) % T) * C,
                      f(dy) + static_cast<long>(i) * C, C);
    dwpe.finish();
    const Tensor dfull = region_.leaveBackward(dy);
    const auto* tokens = x.data<std::int32_t>();
    const int part = c_.vocabSize / region_.size(), first = region_.rank() * part;
    for (int n = 0; n < N; ++n) {
      const int local = tokens[n] - first;
      if (local < 0 || local >= part) continue;
      residualForward(f(wte_->grad) + static_cast<long>(local) * C,
                      f(wte_->grad) + static_cast<long>(local) * C,
                      f(dfull) + static_cast<long>(n) * C, C);
    }
    return {};
  }

 private:
  int firstRow(int N) const {
    return region_.sequenceParallel() ? region_.rank() * (N / region_.size()) : 0;
  }
  std::string name_ = "embedding";
  Allocator& alloc_;
  GptConfig c_;
  TensorParallelRegion& region_;
  Parameter* wte_;
  Parameter* wpe_;
};

class Block final : public Layer {
 public:
  Block(Model& m, const GptConfig& c, TensorParallelRegion& r, int index)
      : name_("block." + std::to_string(index)), alloc_(m.allocator()), c_(c), region_(r) {
    const std::string p = "h." + std::to_string(index) + ".";
    for (const char* n :
         {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
          "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",
          "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"})
      params_.push_back(m.find(p + n));
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return params_; }
  Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) override;
  // The whole backward is the input half followed by the weight half.
  Tensor backward(const Tensor& dy, const Batch& batch, Activations& keep) override {
    Tensor dx = backwardInput(dy, batch, keep);
    backwardWeight(batch, keep);
    return dx;
  }
  bool splitsBackward() const override { return true; }
  Tensor backwardInput(const Tensor& dy, const Batch& batch, Activations& keep) override;
  void backwardWeight(const Batch& batch, Activations& keep) override;
  void setSelectiveRecompute(bool on) override { selective_ = on; }

 private:
  enum P { Ln1W, Ln1B, QkvW, QkvB, ProjW, ProjB, Ln2W, Ln2B, FcW, FcB, FcProjW, FcProjB };
  enum Saved {
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
  // Layernorm backward, input gradient only / weight and bias gradients only (shared over the
  // group).
  Tensor layernormInput(const Tensor& dout, const Tensor& inp, const Tensor& mean,
                        const Tensor& rstd, P weight);
  void layernormWeights(const Tensor& dout, const Tensor& inp, const Tensor& mean,
                        const Tensor& rstd, P weight, P bias);
  // A row-parallel layer's bias, added once after the partial sums: its gradient sums d's rows.
  void biasGrad(const Tensor& d, P bias);

  std::string name_;
  Allocator& alloc_;
  GptConfig c_;
  TensorParallelRegion& region_;
  std::vector<Parameter*> params_;
  bool selective_ = false;  // drop the attention core's outputs in forward, recompute them
};

Tensor Block::forward(const Tensor& x, const Batch& batch, Activations& keep) {
  const int B = static_cast<int>(batch.inputs.dim(0)), T = static_cast<int>(batch.inputs.dim(1));
  const int t = region_.size(), C = c_.hiddenSize, Cl = C / t, NH = c_.numHeads / t;
  const int Fl = c_.mlpRatio * C / t, N = B * T, rows = static_cast<int>(x.numel() / C);
  Tensor ln1 = activation(alloc_, {rows, C}), ln1m = activation(alloc_, {rows}),
         ln1r = activation(alloc_, {rows});
  layernormForward(f(ln1), f(ln1m), f(ln1r), f(x), value(Ln1W), value(Ln1B), rows, C);
  Tensor qkv = activation(alloc_, {N, 3 * Cl});
  matmulForward(f(qkv), f(region_.enter(ln1)), value(QkvW), value(QkvB), N, C, 3 * Cl);
  Tensor att = activation(alloc_, {B, NH, T, T}), atty = activation(alloc_, {N, Cl});
  attentionForward(f(atty), f(att), f(qkv), B, T, Cl, NH);
  Tensor proj = activation(alloc_, {N, C});
  matmulForward<float>(f(proj), f(atty), value(ProjW), nullptr, N, Cl, C);
  Tensor x2 = region_.leave(proj);
  addBias(f(x2), value(ProjB), rows, C);
  residualForward(f(x2), f(x), f(x2), static_cast<long>(rows) * C);
  Tensor ln2 = activation(alloc_, {rows, C}), ln2m = activation(alloc_, {rows}),
         ln2r = activation(alloc_, {rows});
  layernormForward(f(ln2), f(ln2m), f(ln2r), f(x2), value(Ln2W), value(Ln2B), rows, C);
  Tensor fc = activation(alloc_, {N, Fl}), gelu = activation(alloc_, {N, Fl});
  matmulForward(f(fc), f(region_.enter(ln2)), value(FcW), value(FcB), N, C, Fl);
  geluForward(f(gelu), f(fc), static_cast<long>(N) * Fl);
  Tensor mlp = activation(alloc_, {N, C});
  matmulForward<float>(f(mlp), f(gelu), value(FcProjW), nullptr, N, Fl, C);
  Tensor out = region_.leave(mlp);
  addBias(f(out), value(FcProjB), rows, C);
  residualForward(f(out), f(x2), f(out), static_cast<long>(rows) * C);
  // Under sequence parallelism the gathered layernorm outputs are gathered again in backward
  // rather than kept (Megatron's choice: t times less activation memory for two all-gathers).
  if (selective_) att = atty = Tensor();
  keep.saved = {x, ln1, ln1m, ln1r, qkv, att, atty, x2, ln2, ln2m, ln2r, fc, gelu};
  return out;
}

Tensor Block::layernormInput(const Tensor& dout, const Tensor& inp, const Tensor& mean,
                             const Tensor& rstd, P weight) {
  const int C = c_.hiddenSize, rows = static_cast<int>(inp.numel() / C);
  Tensor dinp = activation(alloc_, {rows, C});
  Tensor unused = Tensor::zeros({2, C}, DType::F32, MemoryCategory::Workspace, alloc_);
  layernormBackward(f(dinp), f(unused), f(unused) + C, f(dout), f(inp), value(weight), f(mean),
                    f(rstd), rows, C);
  return dinp;
}

void Block::layernormWeights(const Tensor& dout, const Tensor& inp, const Tensor& mean,
                             const Tensor& rstd, P weight, P bias) {
  const int C = c_.hiddenSize, rows = static_cast<int>(inp.numel() / C);
  SharedGrad dw(region_, params_[weight], alloc_), db(region_, params_[bias], alloc_);
  Tensor unused = Tensor::empty({rows, C}, DType::F32, MemoryCategory::Workspace, alloc_);
  layernormBackward(f(unused), dw.target(), db.target(), f(dout), f(inp), value(weight), f(mean),
                    f(rstd), rows, C);
  dw.finish();
  db.finish();
}

void Block::biasGrad(const Tensor& d, P bias) {
  const int C = c_.hiddenSize;
  SharedGrad db(region_, params_[bias], alloc_);
  sumRows(db.target(), f(d), static_cast<int>(d.numel() / C), C);
  db.finish();
}

// The input-gradient half (zero-bubble B): every GEMM's input gradient, attention and the
// layernorms' input gradients, with the region's collectives; what the weight half needs is
// appended to the saved tensors.
Tensor Block::backwardInput(const Tensor& dy, const Batch& batch, Activations& keep) {
  auto& s = keep.saved;
  const int B = static_cast<int>(batch.inputs.dim(0)), T = static_cast<int>(batch.inputs.dim(1));
  const int t = region_.size(), C = c_.hiddenSize, Cl = C / t, NH = c_.numHeads / t;
  const int Fl = c_.mlpRatio * C / t, N = B * T, rows = static_cast<int>(dy.numel() / C);
  if (!s[kAtt].defined()) {  // selective recompute: the attention core from the kept QKV
    s[kAtt] = activation(alloc_, {B, NH, T, T});
    s[kAttY] = activation(alloc_, {N, Cl});
    attentionForward(f(s[kAttY]), f(s[kAtt]), f(s[kQkv]), B, T, Cl, NH);
  }
  // MLP branch: out = x2 + leave(gelu(fc(enter(ln2(x2)))) W2^T) + b2.
  const Tensor dyFull = region_.leaveBackward(dy);
  Tensor dfc = activation(alloc_, {N, Fl});
  matmulBackward<float>(f(dfc), nullptr, nullptr, f(dyFull), f(s[kGelu]), value(FcProjW), N, Fl, C);
  geluBackward(f(dfc), f(s[kFc]), f(dfc), static_cast<long>(N) * Fl);
  Tensor dln2Full = activation(alloc_, {N, C});
  // The GEMM's input (the gathered layernorm output) only feeds the weight gradient: not needed.
  matmulBackward<float>(f(dln2Full), nullptr, nullptr, f(dfc), nullptr, value(FcW), N, C, Fl);
  const Tensor dln2 = region_.enterBackward(dln2Full);
  Tensor dx2 = layernormInput(dln2, s[kX2], s[kLn2Mean], s[kLn2Rstd], Ln2W);
  residualForward(f(dx2), f(dx2), f(dy), static_cast<long>(rows) * C);
  // Attention branch: x2 = x + leave(attn(enter(ln1(x)) Wqkv^T) Wproj^T) + bproj.
  const Tensor dx2Full = region_.leaveBackward(dx2);
  Tensor datty = activation(alloc_, {N, Cl});
  matmulBackward<float>(f(datty), nullptr, nullptr, f(dx2Full), f(s[kAttY]), value(ProjW), N, Cl,
                        C);
  Tensor dqkv = activation(alloc_, {N, 3 * Cl}), scratch = activation(alloc_, {T, T});
  attentionBackward(f(dqkv), f(scratch), f(datty), f(s[kQkv]), f(s[kAtt]), B, T, Cl, NH);
  Tensor dln1Full = activation(alloc_, {N, C});
  matmulBackward<float>(f(dln1Full), nullptr, nullptr, f(dqkv), nullptr, value(QkvW), N, C, 3 * Cl);
  const Tensor dln1 = region_.enterBackward(dln1Full);
  Tensor dx = layernormInput(dln1, s[kX], s[kLn1Mean], s[kLn1Rstd], Ln1W);
  residualForward(f(dx), f(dx), f(dx2), static_cast<long>(rows) * C);
  // What the weight half does not need goes now (the attention probabilities are the largest).
  s[kAtt] = s[kFc] = s[kQkv] = Tensor();
  s.insert(s.end(), {dy, dyFull, dfc, dln2, dx2, dx2Full, dqkv, dln1});
  return dx;
}

// The weight half (zero-bubble W): every parameter gradient from what backwardInput kept. Under
// sequence parallelism the layernorm outputs are gathered again here.
void Block::backwardWeight(const Batch& batch, Activations& keep) {
  const auto& s = keep.saved;
  const int t = region_.size(), C = c_.hiddenSize, Cl = C / t, Fl = c_.mlpRatio * C / t;
  const int N = static_cast<int>(batch.inputs.dim(0) * batch.inputs.dim(1));
  biasGrad(s[kDy], FcProjB);
  matmulBackward<float>(nullptr, grad(FcProjW), nullptr, f(s[kDyFull]), f(s[kGelu]), value(FcProjW),
                        N, Fl, C);
  matmulBackward<float>(nullptr, grad(FcW), grad(FcB), f(s[kDfc]), f(region_.enter(s[kLn2])),
                        value(FcW), N, C, Fl);
  layernormWeights(s[kDln2], s[kX2], s[kLn2Mean], s[kLn2Rstd], Ln2W, Ln2B);
  biasGrad(s[kDx2], ProjB);
  matmulBackward<float>(nullptr, grad(ProjW), nullptr, f(s[kDx2Full]), f(s[kAttY]), value(ProjW), N,
                        Cl, C);
  matmulBackward<float>(nullptr, grad(QkvW), grad(QkvB), f(s[kDqkv]), f(region_.enter(s[kLn1])),
                        value(QkvW), N, C, 3 * Cl);
  layernormWeights(s[kDln1], s[kX], s[kLn1Mean], s[kLn1Rstd], Ln1W, Ln1B);
  keep.clear();
}

// Final layernorm, logits against this rank's vocabulary rows, and the cross-entropy over the
// split vocabulary: the row maximum, the softmax denominator and the target's logit are each
// combined over the group, so every rank ends with every row's loss.
class Head final : public LossLayer {
 public:
  Head(Model& m, const GptConfig& c, TensorParallelRegion& r)
      : alloc_(m.allocator()), c_(c), region_(r) {
    lnw_ = m.find("ln_f.weight");
    lnb_ = m.find("ln_f.bias");
    wte_ = m.find("wte.weight");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {lnw_, lnb_, wte_}; }
  Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) override;
  Tensor backward(const Tensor& dy, const Batch& batch, Activations& keep) override;
  std::int64_t correct(const Batch& batch, const Activations& keep) const override;

 private:
  int vocabPart() const { return c_.vocabSize / region_.size(); }
  int firstVocab() const { return region_.rank() * vocabPart(); }
  std::string name_ = "head";
  Allocator& alloc_;
  GptConfig c_;
  TensorParallelRegion& region_;
  Parameter *lnw_, *lnb_, *wte_;
};

Tensor Head::forward(const Tensor& x, const Batch& batch, Activations& keep) {
  const int C = c_.hiddenSize, Vl = vocabPart(), N = rowsOf(batch);
  const int rows = static_cast<int>(x.numel() / C), first = firstVocab();
  Tensor ln = activation(alloc_, {rows, C}), mean = activation(alloc_, {rows}),
         rstd = activation(alloc_, {rows});
  layernormForward(f(ln), f(mean), f(rstd), f(x), f(lnw_->value), f(lnb_->value), rows, C);
  Tensor probs = activation(alloc_, {N, Vl});
  matmulForward<float>(f(probs), f(region_.enter(ln)), f(wte_->value), nullptr, N, C, Vl);
  const auto* targets = batch.targets.data<std::int32_t>();
  // Row maxima over the whole vocabulary, then per row [sum of exp | target logit].
  Tensor maxima = activation(alloc_, {N}), sums = activation(alloc_, {2, N});
  for (int n = 0; n < N; ++n) {
    const float* l = f(probs) + static_cast<long>(n) * Vl;
    float m = l[0];
    for (int v = 1; v < Vl; ++v) m = l[v] > m ? l[v] : m;
    f(maxima)[n] = m;
  }
  region_.allReduce(f(maxima), static_cast<std::size_t>(N), DType::F32, ReduceOp::Max);
  for (int n = 0; n < N; ++n) {
    float* p = f(probs) + static_cast<long>(n) * Vl;
    const int local = targets[n] - first;
    f(sums)[N + n] = local >= 0 && local < Vl ? p[local] : 0.0f;
    float sum = 0;
    for (int v = 0; v < Vl; ++v) {
      p[v] = fastExp(p[v] - f(maxima)[n]);
      sum += p[v];
    }
    f(sums)[n] = sum;
  }
  region_.allReduce(f(sums), static_cast<std::size_t>(2 * N), DType::F32, ReduceOp::Sum);
  Tensor losses = activation(alloc_, {N});
  for (int n = 0; n < N; ++n) {
    float* p = f(probs) + static_cast<long>(n) * Vl;
    const float inv = 1.0f / f(sums)[n];
    for (int v = 0; v < Vl; ++v) p[v] *= inv;
    f(losses)[n] = std::log(f(sums)[n]) - (f(sums)[N + n] - f(maxima)[n]);
  }
  keep.saved = {x, ln, mean, rstd, probs};
  return losses;
}

Tensor Head::backward(const Tensor&, const Batch& batch, Activations& keep) {
  const auto& s = keep.saved;
  const int C = c_.hiddenSize, Vl = vocabPart(), N = rowsOf(batch);
  const int rows = static_cast<int>(s[0].numel() / C), first = firstVocab();
  const auto* targets = batch.targets.data<std::int32_t>();
  // dlogits overwrite the saved probabilities: (p - [v == target]) * weight.
  for (int n = 0; n < N; ++n) {
    float* d = f(s[4]) + static_cast<long>(n) * Vl;
    for (int v = 0; v < Vl; ++v) d[v] *= batch.lossWeight;
    const int local = targets[n] - first;
    if (local >= 0 && local < Vl) d[local] -= batch.lossWeight;
  }
  Tensor dln = activation(alloc_, {N, C});
  matmulBackward<float>(f(dln), f(wte_->grad), nullptr, f(s[4]), f(region_.enter(s[1])),
                        f(wte_->value), N, C, Vl);
  const Tensor dlnLocal = region_.enterBackward(dln);
  SharedGrad dw(region_, lnw_, alloc_), db(region_, lnb_, alloc_);
  Tensor dx = activation(alloc_, {rows, C});
  layernormBackward(f(dx), dw.target(), db.target(), f(dlnLocal), f(s[0]), f(lnw_->value), f(s[2]),
                    f(s[3]), rows, C);
  dw.finish();
  db.finish();
  return dx;
}

// A row's prediction is the lowest vocabulary index with the highest probability over all
// ranks, as the single-rank scan finds it.
std::int64_t Head::correct(const Batch& batch, const Activations& keep) const {
  const Tensor& probs = keep.saved[4];
  const int N = static_cast<int>(probs.dim(0)), Vl = vocabPart(), first = firstVocab();
  std::vector<float> best(static_cast<std::size_t>(N));
  std::vector<std::int32_t> index(static_cast<std::size_t>(N));
  for (int n = 0; n < N; ++n) {
    const float* p = f(probs) + static_cast<long>(n) * Vl;
    int b = 0;
    for (int v = 1; v < Vl; ++v) b = p[v] > p[b] ? v : b;
    best[static_cast<std::size_t>(n)] = p[b];
    index[static_cast<std::size_t>(n)] = first + b;
  }
  std::vector<float> top = best;
  region_.allReduce(top.data(), top.size(), DType::F32, ReduceOp::Max);
  for (std::size_t n = 0; n < index.size(); ++n)
    if (best[n] != top[n]) index[n] = INT_MAX;
  region_.allReduce(index.data(), index.size(), DType::I32, ReduceOp::Min);
  const auto* targets = batch.targets.data<std::int32_t>();
  std::int64_t hits = 0;
  for (int n = 0; n < N; ++n) hits += index[static_cast<std::size_t>(n)] == targets[n];
  return hits;
}

}  // namespace

void buildGptTensorParallel(Model& m, const GptConfig& c, TensorParallelRegion& region,
                            const std::vector<int>& layers) {
  validate(c);
  const int t = region.size(), r = region.rank();
  validateTensorParallel(c, t, region.sequenceParallel());
  GptSplits splits;
  splits.vocabulary = {0, t, r, 1};
  splits.qkv = {0, t, r, 3};
  splits.columns = {0, t, r, 1};
  splits.rows = {1, t, r, 1};
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
  for (const Parameter& p : model.parameters()) {
    Tensor full = Tensor::empty(p.fullShape, DType::F32, MemoryCategory::Workspace, a);
    if (p.split.whole()) {
      full.copyFrom(p.value);
    } else {
      const std::int64_t n = p.numel();
      Tensor parts = Tensor::empty({group.size() * n}, DType::F32, MemoryCategory::Workspace, a);
      group.allGather(f(p.value), f(parts), static_cast<std::size_t>(n), DType::F32);
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
