// The pipeline keys of a config (pipeline_schedule, virtual_pipeline_model_parallel_size,
// pipeline_model_parallel_layout, recompute_granularity), checked against the model, the batch
// split and the other strategy keys: which layouts fit the model, which schedules fit the
// micro-batches, and that the classifier (MLP) does not run beyond one stage. Also which model
// layers a world rank builds. Layouts themselves are in core/parallel/pipeline_layout.h.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/config/json_reader.h"

namespace parascope {

// Reads pipeline_schedule, virtual_pipeline_model_parallel_size, pipeline_model_parallel_layout
// and recompute_granularity from the top level of `doc` (read through `top`, so that finish()
// knows them). UserError naming the key for a bad value.
PipelineSpec parsePipelineSpec(JsonReader& top, const nlohmann::json& doc, int pipelineSize);

// Resolves c.pipeline.stages and checks the combination; UserError naming the keys.
void resolvePipeline(TrainConfig& c);

// Layers of the whole model that world rank `worldRank` builds (all of them without a pipeline).
std::vector<int> pipelineRankLayers(const TrainConfig& c, int worldRank);

}  // namespace parascope
