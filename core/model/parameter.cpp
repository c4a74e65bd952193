#include "core/model/parameter.h"

#include <vector>

#include "core/common/random.h"

namespace parascope {

namespace {

void fill(float* v, std::int64_t n, const ParameterInit& init, Rng& rng) {
  switch (init.kind) {
    case ParameterInit::Kind::Normal:
      for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(rng.normal() * init.scale);
      break;
    case ParameterInit::Kind::Uniform:
      for (std::int64_t i = 0; i < n; ++i) {
        v[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * init.scale);
      }
      break;
    case ParameterInit::Kind::Zeros:
      for (std::int64_t i = 0; i < n; ++i) v[i] = 0.0f;
      break;
    case ParameterInit::Kind::Ones:
      for (std::int64_t i = 0; i < n; ++i) v[i] = 1.0f;
      break;
  }
}

}  // namespace

void Parameter::initialize(std::uint64_t seed) const {
  Rng rng(mixSeed(seed, hashName(name)));
  const std::int64_t n = numel();
  if (storage == DType::F32) {
    fill(value.data<float>(), n, init, rng);
  } else {
    std::vector<float> full(static_cast<std::size_t>(n));
    fill(full.data(), n, init, rng);
    convertFromFloat(full, lowValue.data<std::uint16_t>(), storage);
  }
  storedGrad().zero();
}

}  // namespace parascope
