#include "core/train/grad_norm.h"

#include <cmath>

#include "core/kernels/precision.h"

namespace parascope {

namespace {

// Sums one float over `group` (the communication layer reduces f32, not f64).
double sumOver(Communicator& group, double value) {
  if (group.size() == 1) return value;
  auto v = static_cast<float>(value);
  group.allReduce(&v, &v, 1, DType::F32, ReduceOp::Sum);
  return v;
}

}  // namespace

double globalGradientNorm(const Model& model, const GradientReducer* reducer, DeviceMesh& mesh,
                          int skip) {
  double whole = 0, split = 0;
  if (reducer != nullptr && reducer->sharded()) {
    const auto [w, s] = reducer->squaresBySplit(skip);
    float v[2] = {static_cast<float>(w), static_cast<float>(s)};
    mesh.data().allReduce(v, v, 2, DType::F32, ReduceOp::Sum);
    whole = v[0];
    split = v[1];
  } else {
    const auto& params = model.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (static_cast<int>(i) == skip) continue;
      const Parameter& p = params[i];
      // Through the model's kernels, on its device.
      (p.split.whole() ? whole : split) +=
          model.ops().sumOfSquares(p.storedGrad().raw(), p.numel(), p.storage);
    }
  }
  split = sumOver(mesh.tensor(), split);
  return std::sqrt(sumOver(mesh.pipeline(), whole + split));
}

}  // namespace parascope
