#include "core/train/flat_layout.h"

namespace parascope {

FlatLayout makeFlatLayout(const Model& model, int shards) {
  FlatLayout l;
  l.shards = shards;
  const auto& params = model.parameters();
  l.offset.resize(params.size());
  for (std::size_t i = params.size(); i-- > 0;) {
    l.offset[i] = l.used;
    l.used += params[i].numel();
  }
  l.total = (l.used + shards - 1) / shards * shards;
  return l;
}

namespace {

Tensor flatten(Model& model, const FlatLayout& layout, Tensor Parameter::*member,
               MemoryCategory category) {
  Tensor flat = Tensor::zeros({layout.total}, DType::F32, category, model.allocator());
  std::size_t i = 0;
  for (Parameter& p : model.parameters()) {
    Tensor view = flat.slice(layout.offset[i++], p.numel()).view(p.shape);
    view.copyFrom(p.*member);
    p.*member = view;  // releases the parameter's own storage
  }
  return flat;
}

}  // namespace

Tensor flattenValues(Model& model, const FlatLayout& layout) {
  return flatten(model, layout, &Parameter::value, MemoryCategory::Parameter);
}

Tensor flattenGradients(Model& model, const FlatLayout& layout) {
  Tensor flat = flatten(model, layout, &Parameter::grad, MemoryCategory::Gradient);
  flat.zero();
  return flat;
}

}  // namespace parascope
