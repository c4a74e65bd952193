#include "core/model/mlp.h"

#include <cmath>
#include <string>

#include "core/common/error.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/gelu.h"
#include "core/kernels/matmul.h"

namespace parascope {

using namespace kernels;

namespace {

Tensor activation(Allocator& a, const Shape& s) {
  return Tensor::empty(s, DType::F32, MemoryCategory::Activation, a);
}
float* f(const Tensor& t) {
  return t.data<float>();
}

void checkFeatures(const Tensor& x, int inputSize) {
  if (x.rank() != 2 || x.dim(1) != inputSize || x.dtype() != DType::F32) {
    throw UserError("classifier input must be f32 of shape [batch, " + std::to_string(inputSize) +
                    "], got " + std::string(dtypeName(x.dtype())) + " " + shapeString(x.shape()));
  }
}

// y = gelu(x W^T + b)
class LinearGelu final : public Layer {
 public:
  LinearGelu(Model& m, int index, int in, int out)
      : name_("fc." + std::to_string(index)), alloc_(m.allocator()), in_(in), out_(out) {
    w_ = m.find(name_ + ".weight");
    b_ = m.find(name_ + ".bias");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {w_, b_}; }

  Tensor forward(const Tensor& x, const Batch&, Activations& keep) override {
    checkFeatures(x, in_);
    const int B = static_cast<int>(x.dim(0));
    Tensor pre = activation(alloc_, {B, out_}), y = activation(alloc_, {B, out_});
    matmulForward(f(pre), f(x), f(w_->value), f(b_->value), B, in_, out_);
    geluForward(f(y), f(pre), static_cast<long>(B) * out_);
    keep.saved = {x, pre};
    return y;
  }

  Tensor backward(const Tensor& dy, const Batch&, Activations& keep) override {
    const Tensor& x = keep.saved[0];
    const Tensor& pre = keep.saved[1];
    const int B = static_cast<int>(x.dim(0));
    Tensor dpre = activation(alloc_, {B, out_});
    geluBackward(f(dpre), f(pre), f(dy), static_cast<long>(B) * out_);
    Tensor dx = activation(alloc_, {B, in_});
    matmulBackward(f(dx), f(w_->grad), f(b_->grad), f(dpre), f(x), f(w_->value), B, in_, out_);
    return dx;
  }

 private:
  std::string name_;
  Allocator& alloc_;
  int in_, out_;
  Parameter *w_, *b_;
};

class Classifier final : public LossLayer {
 public:
  Classifier(Model& m, int in, int classes) : alloc_(m.allocator()), in_(in), classes_(classes) {
    w_ = m.find("classifier.weight");
    b_ = m.find("classifier.bias");
  }
  const std::string& name() const override { return name_; }
  std::vector<Parameter*> parameters() const override { return {w_, b_}; }

  Tensor forward(const Tensor& x, const Batch& batch, Activations& keep) override {
    checkFeatures(x, in_);
    const int B = static_cast<int>(x.dim(0));
    Tensor probs = activation(alloc_, {B, classes_}), losses = activation(alloc_, {B});
    matmulForward(f(probs), f(x), f(w_->value), f(b_->value), B, in_, classes_);
    crossEntropyForward(f(losses), f(probs), f(probs), batch.targets.data<std::int32_t>(), B,
                        classes_);
    keep.saved = {x, probs};
    return losses;
  }

  Tensor backward(const Tensor&, const Batch& batch, Activations& keep) override {
    const Tensor& x = keep.saved[0];
    const Tensor& probs = keep.saved[1];
    const int B = static_cast<int>(x.dim(0));
    Tensor dlosses = activation(alloc_, {B});
    for (int i = 0; i < B; ++i) f(dlosses)[i] = batch.lossWeight;
    crossEntropyBackward(f(probs), f(probs), batch.targets.data<std::int32_t>(), f(dlosses), B,
                         classes_);
    Tensor dx = activation(alloc_, {B, in_});
    matmulBackward(f(dx), f(w_->grad), f(b_->grad), f(probs), f(x), f(w_->value), B, in_, classes_);
    return dx;
  }

  std::int64_t correct(const Batch& batch, const Activations& keep) const override {
    const Tensor& probs = keep.saved[1];
    const auto* targets = batch.targets.data<std::int32_t>();
    std::int64_t hits = 0;
    for (std::int64_t n = 0; n < probs.dim(0); ++n) {
      const float* p = f(probs) + n * classes_;
      int best = 0;
      for (int v = 1; v < classes_; ++v) best = p[v] > p[best] ? v : best;
      hits += best == targets[n];
    }
    return hits;
  }

 private:
  std::string name_ = "classifier";
  Allocator& alloc_;
  int in_, classes_;
  Parameter *w_, *b_;
};

// PyTorch's nn.Linear default: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
ParameterInit linearInit(int in) {
  return {ParameterInit::Kind::Uniform, 1.0f / std::sqrt(static_cast<float>(in))};
}

}  // namespace

void buildMlp(Model& m, const MlpConfig& c) {
  int in = c.inputSize;
  for (std::size_t i = 0; i < c.hiddenSizes.size(); ++i) {
    const int out = c.hiddenSizes[i];
    const std::string p = "fc." + std::to_string(i);
    m.addParameter(p + ".weight", {out, in}, linearInit(in), true);
    m.addParameter(p + ".bias", {out}, linearInit(in), false);
    m.addLayer(std::make_unique<LinearGelu>(m, static_cast<int>(i), in, out));
    in = out;
  }
  m.addParameter("classifier.weight", {c.numClasses, in}, linearInit(in), true);
  m.addParameter("classifier.bias", {c.numClasses}, linearInit(in), false);
  m.addLayer(std::make_unique<Classifier>(m, in, c.numClasses));
}

}  // namespace parascope
