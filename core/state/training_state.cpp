#include "core/state/training_state.h"

namespace parascope {

const char* stateFieldName(StateField f) {
  switch (f) {
    case StateField::Param: return "param";
    case StateField::ExpAvg: return "exp_avg";
    case StateField::ExpAvgSq: return "exp_avg_sq";
  }
  return "?";
}

// The same names, shapes and order as the model's build creates (ModelKind::parameterShapes).
std::vector<LogicalTensor> logicalTensors(const TrainConfig& config) {
  std::vector<LogicalTensor> t;
  for (auto& [name, shape] : config.model.kind->parameterShapes(config.model))
    t.push_back({std::move(name), std::move(shape)});
  return t;
}

}  // namespace parascope
