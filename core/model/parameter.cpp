#include "core/model/parameter.h"

#include "core/common/random.h"

namespace parascope {

void Parameter::initialize(std::uint64_t seed) const {
  float* v = value.data<float>();
  const std::int64_t n = value.numel();
  Rng rng(mixSeed(seed, hashName(name)));
  switch (init.kind) {
    case ParameterInit::Kind::Normal:
      for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(rng.normal() * init.scale);
      break;
    case ParameterInit::Kind::Uniform:
      for (std::int64_t i = 0; i < n; ++i) {
        v[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * init.scale);
      }
      break;
    case ParameterInit::Kind::Zeros: value.zero(); break;
    case ParameterInit::Kind::Ones:
      for (std::int64_t i = 0; i < n; ++i) v[i] = 1.0f;
      break;
  }
  grad.zero();
}

}  // namespace parascope
