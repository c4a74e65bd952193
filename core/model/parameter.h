// A parameter: a named logical tensor with its full shape, its value, its gradient and how to
// initialise it. Initial values depend only on (seed, name), never on layout or call order.
// Under mixed precision the parameter and its gradient are stored in bf16 or fp16 (`low*`), and
// the f32 `value` / `grad` the kernels use are working copies that exist only while a layer
// using the parameter runs (model.h makes and retires them).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor/tensor.h"

namespace parascope {

struct ParameterInit {
  enum class Kind : std::uint8_t { Normal, Uniform, Zeros, Ones };
  Kind kind = Kind::Zeros;
  float scale = 0.0f;  // standard deviation (Normal) or bound (Uniform: [-scale, scale])
};

// How a tensor-parallel rank's part of a parameter is cut from the logical tensor, as in
// Megatron: column-parallel weights along dim 0 (output features), row-parallel ones along dim 1
// (input features), the vocabulary along dim 0. With `groups` > 1 dim 0 is that many stacked
// blocks (q | k | v) and each block is cut, so every rank holds its heads of each.
struct TensorSplit {
  int dim = -1;    // -1: whole, the same on every tensor-parallel rank
  int parts = 1;   // tensor-parallel size
  int index = 0;   // this rank's part
  int groups = 1;  // dim 0 only

  bool whole() const { return dim < 0 || parts == 1; }
  Shape localShape(const Shape& full) const;
};

// Visits the runs of contiguous elements of this rank's part: run(offset in full, offset in
// local, length). Whole: one run. Dim 0: each group's rows of this part; dim 1: each row's
// columns.
template <typename F>
void forEachSplitRun(const Shape& full, const TensorSplit& s, F&& run) {
  if (s.whole()) {
    run(std::int64_t{0}, std::int64_t{0}, shapeNumel(full));
    return;
  }
  const std::int64_t rows = full[0];
  const std::int64_t cols = shapeNumel(full) / rows;
  if (s.dim == 0) {
    const std::int64_t group = rows / s.groups, part = group / s.parts;
    for (int g = 0; g < s.groups; ++g)
      run((g * group + s.index * part) * cols, g * part * cols, part * cols);
  } else {
    const std::int64_t part = cols / s.parts;
    for (std::int64_t r = 0; r < rows; ++r) run(r * cols + s.index * part, r * part, part);
  }
}

// Copies this rank's part of a logical tensor (full) into its local tensor, and back.
void copySplitPart(const float* full, float* local, const Shape& fullShape, const TensorSplit& s);
void placeSplitPart(const float* local, float* full, const Shape& fullShape, const TensorSplit& s);

struct Parameter {
  std::string name;
  Shape shape;      // what this rank stores (the logical shape unless split)
  Shape fullShape;  // the logical tensor's shape
  TensorSplit split;
  ParameterInit init;
  bool decay = true;  // AdamW weight decay applies (matrices and embeddings, not norms/biases)
  // f32, what kernels read and accumulate into. Full precision: the parameter itself
  // (Parameter and Gradient memory). Mixed precision: Workspace copies while a layer runs.
  Tensor value;
  Tensor grad;
  // Mixed precision only: the stored parameter and gradient in the compute type (BF16 or F16;
  // Parameter and Gradient memory).
  Tensor lowValue;
  Tensor lowGrad;
  DType storage = DType::F32;  // F32, or the compute type of a mixed-precision model
  // Its layer's backward writes its whole gradient with one product per micro-batch (a linear
  // layer's weight), so a step need not zero the gradient first (Model::startGradients).
  bool gradWrittenWhole = false;
  // Set by Model::startGradients for such a parameter stored in f32: its gradient holds whatever
  // the memory held, and the step's first gradient overwrites it rather than adds to it.
  bool gradStale = false;

  std::int64_t numel() const { return shapeNumel(shape); }
  // The tensors that hold the parameter between layers: value/grad, or lowValue/lowGrad.
  Tensor& storedValue() { return storage == DType::F32 ? value : lowValue; }
  Tensor& storedGrad() { return storage == DType::F32 ? grad : lowGrad; }
  const Tensor& storedValue() const { return storage == DType::F32 ? value : lowValue; }
  const Tensor& storedGrad() const { return storage == DType::F32 ? grad : lowGrad; }
  // Writes the initial value from (seed, name) into `into` (`shape`, the storage type: rounded to
  // nearest even under mixed precision), wherever it lives: the stored value, or ZeRO's own
  // storage when the model holds none (ModelStorage), on the host or a GPU (drawn on the host and
  // copied). A split parameter gets its part of the logical tensor's values, so any split starts
  // from the single-rank model.
  void initialValues(std::uint64_t seed, const Tensor& into) const;
};

}  // namespace parascope
