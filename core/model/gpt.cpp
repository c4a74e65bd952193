#include "core/model/gpt.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/common/error.h"
#include "core/model/gpt_layers.h"

namespace parascope {

std::int64_t GptConfig::nonEmbeddingPositionParameters() const {
  const std::int64_t C = hiddenSize, F = ffnWidth(), Q = qkvRows(), R = fcRows();
  const std::int64_t perBlock =
      2 * C + (Q * C + Q) + (C * C + C) + 2 * C + (R * C + R) + (C * F + C);
  return static_cast<std::int64_t>(vocabSize) * C + numLayers * perBlock + 2 * C;
}

double GptConfig::flopsPerToken() const {
  return 6.0 * static_cast<double>(nonEmbeddingPositionParameters()) +
         12.0 * numLayers * contextLength * hiddenSize;
}

int headChunkRows(int rows, int vocabulary, DType compute) {
  if (compute == DType::F32) return rows;
  constexpr long kMostBytes = 256L << 20;
  const long eighth = (static_cast<long>(rows) + 7) / 8;
  const long fit = kMostBytes / (4L * std::max(vocabulary, 1));
  return static_cast<int>(std::max(1L, std::min(eighth, fit)));
}

void validate(const GptConfig& c) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw UserError("config: " + what);
  };
  need(c.numHeads > 0 && c.hiddenSize % c.numHeads == 0,
       "model.hidden_size (" + std::to_string(c.hiddenSize) +
           ") must be divisible by model.num_attention_heads (" + std::to_string(c.numHeads) + ")");
  need(c.numQueryGroups == 0 ||
           (c.numQueryGroups <= c.numHeads && c.numHeads % c.numQueryGroups == 0),
       "model.num_query_groups (" + std::to_string(c.numQueryGroups) +
           ") must divide model.num_attention_heads (" + std::to_string(c.numHeads) + ")");
}

void buildGpt(Model& m, const GptConfig& c) {
  std::vector<int> all(static_cast<std::size_t>(c.numLayers) + 2);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  buildGpt(m, c, all);
}

bool holdsLayer(const std::vector<int>& layers, int i) {
  return std::find(layers.begin(), layers.end(), i) != layers.end();
}

void addGptParameters(Model& m, const GptConfig& c, const std::vector<int>& layers,
                      const GptSplits& split) {
  const int last = c.numLayers + 1;  // the head's index
  auto holds = [&](int layer) { return holdsLayer(layers, layer); };
  const std::int64_t C = c.hiddenSize, F = c.ffnWidth(), Q = c.qkvRows(), R = c.fcRows();
  using K = ParameterInit::Kind;
  const ParameterInit normal{K::Normal, 0.02f};
  // GPT-2: residual projections scaled by 1/sqrt(2 L) so the residual stream's variance stays
  // flat with depth.
  const ParameterInit projection{K::Normal, 0.02f / std::sqrt(2.0f * c.numLayers)};
  const ParameterInit zeros{K::Zeros, 0}, ones{K::Ones, 0};
  if (holds(0) || holds(last))
    m.addParameter("wte.weight", {c.vocabSize, C}, normal, true, split.vocabulary);
  if (holds(0)) m.addParameter("wpe.weight", {c.contextLength, C}, normal, true);
  for (int i = 0; i < c.numLayers; ++i) {
    if (!holds(i + 1)) continue;
    const std::string p = "h." + std::to_string(i) + ".";
    m.addParameter(p + "ln_1.weight", {C}, ones, false);
    m.addParameter(p + "ln_1.bias", {C}, zeros, false);
    m.addParameter(p + "attn.c_attn.weight", {Q, C}, normal, true, split.qkv);
    m.addParameter(p + "attn.c_attn.bias", {Q}, zeros, false, split.qkv);
    m.addParameter(p + "attn.c_proj.weight", {C, C}, projection, true, split.rows);
    m.addParameter(p + "attn.c_proj.bias", {C}, zeros, false);
    m.addParameter(p + "ln_2.weight", {C}, ones, false);
    m.addParameter(p + "ln_2.bias", {C}, zeros, false);
    m.addParameter(p + "mlp.c_fc.weight", {R, C}, normal, true, split.columns);
    m.addParameter(p + "mlp.c_fc.bias", {R}, zeros, false, split.columns);
    m.addParameter(p + "mlp.c_proj.weight", {C, F}, projection, true, split.rows);
    m.addParameter(p + "mlp.c_proj.bias", {C}, zeros, false);
  }
  if (holds(last)) {
    m.addParameter("ln_f.weight", {C}, ones, false);
    m.addParameter("ln_f.bias", {C}, zeros, false);
  }
}

void buildGpt(Model& m, const GptConfig& c, const std::vector<int>& layers) {
  // A default Communicator is the size-1 group "self": the tensor-parallel layers unsplit.
  buildGptTensorParallel(
      m, c, std::make_shared<TensorParallelRegion>(Communicator(), false, m.allocator()), layers);
}

}  // namespace parascope
