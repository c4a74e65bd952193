// Model descriptions and FLOP counts for the session's start report.
#include "core/session/run_summary.h"

#include <cstdio>

namespace parascope {

std::int64_t modelParameters(const TrainConfig& c, const Model& m) {
  if (c.model.kind != ModelSpec::Kind::Gpt) return m.parameterCount();
  const GptConfig& g = c.model.gpt;
  return g.nonEmbeddingPositionParameters() +
         static_cast<std::int64_t>(g.contextLength) * g.hiddenSize;
}

std::string describeModel(const TrainConfig& c, const Model& m) {
  char buf[256];
  const double millions = static_cast<double>(modelParameters(c, m)) / 1e6;
  if (c.model.kind == ModelSpec::Kind::Gpt) {
    const GptConfig& g = c.model.gpt;
    std::snprintf(buf, sizeof buf,
                  "gpt, %.2fM parameters (%d layers, width %d, %d heads, context %d, vocab %d)",
                  millions, g.numLayers, g.hiddenSize, g.numHeads, g.contextLength, g.vocabSize);
  } else {
    std::snprintf(buf, sizeof buf, "mlp, %.2fM parameters", millions);
  }
  return buf;
}

double modelFlopsPerToken(const TrainConfig& c) {
  return c.model.kind == ModelSpec::Kind::Gpt ? c.model.gpt.flopsPerToken() : 0.0;
}

}  // namespace parascope
