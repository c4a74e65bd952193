// A parameter: a named logical tensor with its full shape, its value, its gradient and how to
// initialise it. Initial values depend only on (seed, name), never on layout or call order.
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

struct Parameter {
  std::string name;
  Shape shape;
  ParameterInit init;
  bool decay = true;  // AdamW weight decay applies (matrices and embeddings, not norms/biases)
  Tensor value;       // f32, MemoryCategory::Parameter
  Tensor grad;        // f32, MemoryCategory::Gradient

  std::int64_t numel() const { return shapeNumel(shape); }
  // Fills value from (seed, name) and zeroes grad.
  void initialize(std::uint64_t seed) const;
};

}  // namespace parascope
