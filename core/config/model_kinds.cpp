// The registry of model kinds.
#include "core/config/model_kind.h"

namespace parascope {

double LayerWork::flops() const {
  double sum = 0;
  for (const Gemm& g : gemms) sum += g.flops();
  return sum;
}

const std::vector<const ModelKind*>& modelKinds() {
  static const std::vector<const ModelKind*> kinds = {&gptModelKind(), &mlpModelKind()};
  return kinds;
}

const ModelKind* modelKindNamed(std::string_view name) {
  for (const ModelKind* kind : modelKinds())
    if (kind->name() == name) return kind;
  return nullptr;
}

std::string layerSplittingKinds() {
  std::string names;
  for (const ModelKind* kind : modelKinds()) {
    if (!kind->splitsLayers()) continue;
    names += (names.empty() ? "\"" : " or \"") + std::string(kind->name()) + "\"";
  }
  return names;
}

}  // namespace parascope
