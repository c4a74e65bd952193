// The pipeline keys of a training config (schedule, virtual chunks, layer layout, recompute) and
// the layer layout itself: which contiguous range of a model's layers each virtual pipeline
// stage runs. Balanced by default (Megatron: transformer blocks split evenly, the embedding on
// the first stage, the head on the last), or given as Megatron's layout string or a list of
// layer counts. Checking only (the keys are read in core/config/pipeline_config.h); the executor
// (step_executor.h) runs the stages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/parallel/schedule.h"

namespace parascope {

enum class Recompute : std::uint8_t {
  None,
  Selective,  // the attention core (softmax(QK^T)V) is recomputed in backward
  Full,       // only each layer's input is kept; forward runs again in backward
};
std::string_view recomputeName(Recompute r);

struct LayerRange {
  int begin = 0;  // model layer indices [begin, end)
  int end = 0;
};

struct PipelineSpec {
  std::string schedule = "1f1b";  // pipeline_schedule
  int chunks = 1;                 // virtual_pipeline_model_parallel_size (v)
  // pipeline_model_parallel_layout: layers per virtual stage (from the list form or the string
  // form); empty = balanced.
  std::vector<int> layerCounts;
  std::string layoutText;                 // the string form as given, for messages
  Recompute recompute = Recompute::None;  // recompute_granularity
  // Steps run as pipeline programs: pipeline size or v > 1, recompute, a schedule or a layout
  // given.
  bool enabled = false;
  std::vector<LayerRange> stages;  // per virtual stage, resolved against the model (resolveLayout)
};

// How a model's layer list reads to a layout: `pre` layers before the repeated blocks (GPT: the
// embedding, letter E), `blocks` blocks (t), `post` after (GPT: the head, L). The string form
// is available when `lettered` (GPT).
struct LayerSequence {
  int pre = 0;
  int blocks = 0;
  int post = 0;
  bool lettered = false;
  int total() const { return pre + blocks + post; }
};

// One range per virtual stage (p * v of them, in stage order); every stage gets at least one
// layer. UserError naming the keys and the valid layouts when the layout does not fit.
std::vector<LayerRange> resolveLayout(const PipelineSpec& spec, int pipelineSize,
                                      const LayerSequence& layers);

// The model layers rank `rank` of `pipelineSize` holds, in increasing order (its chunks'
// ranges, chunk 0 first).
std::vector<int> rankLayers(const std::vector<LayerRange>& stages, int pipelineSize, int rank);
// The same layers as ranges of the rank's own model, which holds them back to back: one range
// per chunk, chunk 0 first.
std::vector<LayerRange> rankChunkRanges(const std::vector<LayerRange>& stages, int pipelineSize,
                                        int rank);

// Checks the schedule against the shape (p, m = micro-batches per step, v); the schedule's own
// message, prefixed with the keys that set the shape.
void checkPipelineShape(const PipelineSpec& spec, const PipelineShape& shape);

}  // namespace parascope
