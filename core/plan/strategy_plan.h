// A strategy as the engine would run it, without running it: per pipeline rank, the layers it
// holds, its step program (the schedule with its data-parallel work, exactly as the step executor
// builds it), its parameters and gradient buckets (the trainer's flat layout, from the rank's own
// model built without storage) and the per-layer work of the model kind. What the cost model,
// the simulator and the memory model read; every data-, context- and tensor-parallel rank of a
// pipeline rank runs the same program on equal shares, so one plan per pipeline rank describes
// them all.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/config.h"
#include "core/config/model_kind.h"
#include "core/parallel/instruction.h"
#include "core/parallel/pipeline_layout.h"
#include "core/parallel/schedule.h"
#include "core/train/flat_layout.h"

namespace parascope {

// One layer of a rank's model, as the memory model replays its passes.
struct PlannedLayer {
  std::int64_t parameterElements = 0;  // of the parameters it reads (a tied embedding's too)
  bool splitsBackward = false;         // its weight gradients come in the W half (Layer)
};

struct RankPlan {
  int pipelineRank = 0;
  std::vector<LayerRange> chunks;      // per chunk: whole-model layer indices, chunk 0 first
  Program program;                     // the executor's, data-parallel work included
  std::int64_t parameterElements = 0;  // the rank's model (one tensor rank's slices), unpadded
  // The flat layout's padded size and per-bucket sizes (elements), with data parallelism or ZeRO;
  // empty otherwise.
  std::int64_t flatElements = 0;
  std::vector<std::int64_t> bucketElements;
  // ZeRO-3: per chunk, the buckets its forward gathers (every bucket one of its layers reads).
  std::vector<std::vector<int>> chunkBuckets;
  std::int64_t largestParameterElements = 0;
  std::int64_t tiedEmbeddingElements = 0;  // wte on a pipeline's first or last rank, else 0
  // The rank's model layer by layer (its own indices), and the flat layout itself (with data
  // parallelism or ZeRO; else empty): what the memory model replays a step's buckets on.
  std::vector<PlannedLayer> modelLayers;
  FlatLayout layout;
};

struct StrategyPlan {
  TrainConfig config;
  PipelineShape shape;             // p, m, v of the step programs
  std::vector<LayerRange> stages;  // per virtual stage
  std::vector<LayerWork> layers;   // per model layer, one micro-batch on one tensor rank
  std::vector<RankPlan> ranks;     // per pipeline rank
  bool flat = false;               // gradients in buckets: data parallelism or ZeRO
  // Elements of the activation (and gradient) crossing a stage boundary for one micro-batch, as
  // the trainer shapes it (sequence parallelism: a tensor rank's share of the rows).
  double boundaryElements = 0;
  double targetsPerStep = 0;  // the global batch's targets (a GPT's tokens)
  int ranksPerPipelineRank() const { return config.parallel.ranksPerPipelineRank(); }
};

// `config` validated (parseTrainConfig). Builds each pipeline rank's model without storage and
// without data: milliseconds for the GPTs this machine trains.
StrategyPlan planStrategy(const TrainConfig& config);

}  // namespace parascope
