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

// The same names, shapes and order as buildGpt / buildMlp (core/model) create.
std::vector<LogicalTensor> logicalTensors(const TrainConfig& config) {
  std::vector<LogicalTensor> t;
  if (config.model.kind == ModelSpec::Kind::Mlp) {
    const MlpConfig& m = config.model.mlp;
    std::int64_t in = m.inputSize;
    for (std::size_t i = 0; i < m.hiddenSizes.size(); ++i) {
      const std::string p = "fc." + std::to_string(i);
      const std::int64_t out = m.hiddenSizes[i];
      t.push_back({p + ".weight", {out, in}});
      t.push_back({p + ".bias", {out}});
      in = out;
    }
    t.push_back({"classifier.weight", {m.numClasses, in}});
    t.push_back({"classifier.bias", {m.numClasses}});
    return t;
  }
  const GptConfig& g = config.model.gpt;
  const std::int64_t C = g.hiddenSize, F = static_cast<std::int64_t>(g.mlpRatio) * C;
  t.push_back({"wte.weight", {g.vocabSize, C}});
  t.push_back({"wpe.weight", {g.contextLength, C}});
  for (int i = 0; i < g.numLayers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    t.push_back({p + "ln_1.weight", {C}});
    t.push_back({p + "ln_1.bias", {C}});
    t.push_back({p + "attn.c_attn.weight", {3 * C, C}});
    t.push_back({p + "attn.c_attn.bias", {3 * C}});
    t.push_back({p + "attn.c_proj.weight", {C, C}});
    t.push_back({p + "attn.c_proj.bias", {C}});
    t.push_back({p + "ln_2.weight", {C}});
    t.push_back({p + "ln_2.bias", {C}});
    t.push_back({p + "mlp.c_fc.weight", {F, C}});
    t.push_back({p + "mlp.c_fc.bias", {F}});
    t.push_back({p + "mlp.c_proj.weight", {C, F}});
    t.push_back({p + "mlp.c_proj.bias", {C}});
  }
  t.push_back({"ln_f.weight", {C}});
  t.push_back({"ln_f.bias", {C}});
  return t;
}

}  // namespace parascope
