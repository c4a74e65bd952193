#include "core/model/parameter.h"

#include <algorithm>
#include <vector>

#include "core/common/random.h"

namespace parascope {

Shape TensorSplit::localShape(const Shape& full) const {
  Shape s = full;
  if (!whole()) s[static_cast<std::size_t>(dim)] /= parts;
  return s;
}

void copySplitPart(const float* full, float* local, const Shape& fullShape, const TensorSplit& s) {
  forEachSplitRun(fullShape, s, [&](std::int64_t f, std::int64_t l, std::int64_t n) {
    std::copy(full + f, full + f + n, local + l);
  });
}

void placeSplitPart(const float* local, float* full, const Shape& fullShape, const TensorSplit& s) {
  forEachSplitRun(fullShape, s, [&](std::int64_t f, std::int64_t l, std::int64_t n) {
    std::copy(local + l, local + l + n, full + f);
  });
}

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

void Parameter::initialValues(std::uint64_t seed, const Tensor& into) const {
  if (into.device().kind != Device::Kind::Cpu) {  // drawn on the host, as every rank draws them
    const Tensor drawn = Tensor::empty(into.shape(), into.dtype(), MemoryCategory::Workspace);
    initialValues(seed, drawn);
    into.copyFrom(drawn);
    return;
  }
  Rng rng(mixSeed(seed, hashName(name)));
  const std::int64_t n = numel();
  if (storage == DType::F32 && split.whole()) {
    fill(into.data<float>(), n, init, rng);
  } else {
    // The logical tensor's values, then this rank's part of them, then its stored type.
    std::vector<float> full(static_cast<std::size_t>(shapeNumel(fullShape)));
    fill(full.data(), shapeNumel(fullShape), init, rng);
    std::vector<float> part;
    if (!split.whole()) {
      part.resize(static_cast<std::size_t>(n));
      copySplitPart(full.data(), part.data(), fullShape, split);
    } else {
      part = std::move(full);
    }
    if (storage == DType::F32)
      std::copy(part.begin(), part.end(), into.data<float>());
    else
      convertFromFloat(part, into.data<std::uint16_t>(), storage);
  }
}

}  // namespace parascope
