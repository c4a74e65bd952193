// What a run is, in words and numbers, for reports: the model's description and parameter
// count, and the model FLOPs per target that MFU figures divide by.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/config.h"
#include "core/model/model.h"

namespace parascope {

// The whole logical model's parameters, whichever part of it `model` (one rank's) holds.
std::int64_t modelParameters(const TrainConfig& config, const Model& model);
// "gpt, 3.22M parameters (4 layers, width 256, 4 heads, context 128, vocab 256)".
std::string describeModel(const TrainConfig& config, const Model& model);
// The strategy in Megatron's terms, for switch reports and chart markers:
// "D2 T2 P2 1f1b v2 m4 ZeRO-1 SP bf16 recompute=full" (only what is not the default after D T P).
std::string describeStrategy(const TrainConfig& config);
// GPT: 6 N + 12 L T C per target (GptConfig::flopsPerToken); 0 for other models.
double modelFlopsPerToken(const TrainConfig& config);

}  // namespace parascope
