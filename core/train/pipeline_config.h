// The pipeline part of a training config, checked against the rest of it: which layouts fit the
// model, which schedules fit the micro-batches, and which features do not combine with a
// pipeline in this build (ZeRO 2 and 3, mixed precision, the classifier beyond one stage).
// Also which model layers a world rank builds. Parsing of the keys is in
// core/parallel/pipeline_layout.h; running the steps in pipeline_trainer.h.
#pragma once

#include <vector>

#include "core/train/config.h"

namespace parascope {

// The model's layer list as a layout reads it (GPT: E, num_layers x t, L).
LayerSequence layerSequence(const ModelSpec& model);

// Resolves c.pipeline.stages and checks the combination; UserError naming the keys.
void resolvePipeline(TrainConfig& c);

// Layers of the whole model that world rank `worldRank` builds (all of them without a pipeline).
std::vector<int> pipelineRankLayers(const TrainConfig& c, int worldRank);

}  // namespace parascope
