// Layer layouts: Megatron's layout strings, balanced splits, and the messages that say which
// layouts would be valid. The pipeline keys are read in core/config/pipeline_config.cpp.
#include "core/parallel/pipeline_layout.h"

#include <numeric>

#include "core/common/error.h"

namespace parascope {

namespace {

std::string str(long v) {
  return std::to_string(v);
}

// Megatron's string form: stages separated by '|', each a run of E (embedding), t (block) and L
// (head); "t*3" repeats a letter. Returns the letters per stage.
std::vector<std::string> splitLayoutString(const std::string& text) {
  std::vector<std::string> stages(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'L') {
      stages.back() += c;
    } else if (c == '*' && !stages.back().empty() && i + 1 < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      std::size_t end = i + 1;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      // Five digits or more is out of range; stol would overflow on a long run of digits.
      const long n = end - i - 1 > 4 ? 99999 : std::stol(text.substr(i + 1, end - i - 1));
      if (n < 1 || n > 4096) {
        throw UserError("config: pipeline_model_parallel_layout \"" + text + "\": repeat count " +
                        str(n) + " is out of range; allowed 1..4096");
      }
      stages.back().append(static_cast<std::size_t>(n - 1), stages.back().back());
      i = end - 1;
    } else if (c != ' ') {
      throw UserError("config: pipeline_model_parallel_layout \"" + text + "\": unexpected '" +
                      std::string(1, c) +
                      "'; allowed: E (embedding), t (transformer block), L (head), '|' between "
                      "stages, '*N' after a letter to repeat it");
    }
  }
  return stages;
}

// Block counts as even as possible (earlier stages take the remainder).
std::vector<int> evenBlocks(int blocks, int stages) {
  std::vector<int> out(static_cast<std::size_t>(stages), blocks / stages);
  for (int s = 0; s < blocks % stages; ++s) out[static_cast<std::size_t>(s)] += 1;
  return out;
}

// An example of a valid layout for the message when the balanced split does not exist.
std::string exampleLayout(const LayerSequence& seq, int stages) {
  std::vector<int> blocks = evenBlocks(seq.blocks, stages);
  std::string text, list;
  for (int s = 0; s < stages; ++s) {
    const int b = blocks[static_cast<std::size_t>(s)];
    const int n = b + (s == 0 ? seq.pre : 0) + (s == stages - 1 ? seq.post : 0);
    list += (s ? ", " : "") + str(n);
    text += (s ? "|" : "") + std::string(s == 0 ? seq.pre : 0, 'E') + std::string(b, 't') +
            std::string(s == stages - 1 ? seq.post : 0, 'L');
  }
  return seq.lettered ? "\"" + text + "\" or [" + list + "]" : "[" + list + "]";
}

std::string stagesText(const PipelineSpec& spec, int pipelineSize) {
  return "pipeline_model_parallel_size (" + str(pipelineSize) +
         ") x virtual_pipeline_model_parallel_size (" + str(spec.chunks) +
         ") = " + str(static_cast<long>(pipelineSize) * spec.chunks) + " virtual stages";
}

std::vector<int> countsFromString(const PipelineSpec& spec, int stages, const LayerSequence& seq) {
  const std::string& text = spec.layoutText;
  if (!seq.lettered) {
    throw UserError(
        "config: pipeline_model_parallel_layout as a string needs model.type gpt; "
        "give a list of layer counts per stage instead");
  }
  const std::vector<std::string> parts = splitLayoutString(text);
  const std::string want = std::string(static_cast<std::size_t>(seq.pre), 'E') +
                           std::string(static_cast<std::size_t>(seq.blocks), 't') +
                           std::string(static_cast<std::size_t>(seq.post), 'L');
  std::string got;
  std::vector<int> counts;
  for (const std::string& p : parts) {
    got += p;
    counts.push_back(static_cast<int>(p.size()));
  }
  if (got != want) {
    throw UserError("config: pipeline_model_parallel_layout \"" + text + "\" spells \"" + got +
                    "\" but the model is \"" + want + "\" (E embedding, " + str(seq.blocks) +
                    " x t, L head); e.g. " + exampleLayout(seq, stages));
  }
  return counts;
}

}  // namespace

std::string_view recomputeName(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "none";
}

std::vector<LayerRange> resolveLayout(const PipelineSpec& spec, int pipelineSize,
                                      const LayerSequence& seq) {
  const int stages = pipelineSize * spec.chunks;
  std::vector<int> counts = spec.layerCounts;
  if (!spec.layoutText.empty()) {
    counts = countsFromString(spec, stages, seq);
  } else if (counts.empty()) {
    if (seq.blocks % stages != 0 || (seq.blocks == 0 && stages > 1)) {
      throw UserError("config: model.num_layers (" + str(seq.blocks) + ") is not divisible by " +
                      stagesText(spec, pipelineSize) + "; valid: num_layers a multiple of " +
                      str(stages) + ", or pipeline_model_parallel_layout, e.g. " +
                      exampleLayout(seq, stages));
    }
    counts = evenBlocks(seq.blocks, stages);
    counts.front() += seq.pre;
    counts.back() += seq.post;
  }
  const long sum = std::accumulate(counts.begin(), counts.end(), 0L);
  if (static_cast<int>(counts.size()) != stages || sum != seq.total()) {
    throw UserError("config: pipeline_model_parallel_layout gives " +
                    str(static_cast<long>(counts.size())) + " stages with " + str(sum) +
                    " layers; need " + stagesText(spec, pipelineSize) + " covering all " +
                    str(seq.total()) + " model layers, e.g. " + exampleLayout(seq, stages));
  }
  std::vector<LayerRange> out;
  int begin = 0;
  for (int n : counts) {
    if (n < 1) {
      throw UserError("config: pipeline_model_parallel_layout leaves stage " +
                      str(static_cast<long>(out.size())) +
                      " without layers; every stage needs "
                      "at least one, e.g. " +
                      exampleLayout(seq, stages));
    }
    out.push_back({begin, begin + n});
    begin += n;
  }
  return out;
}

std::vector<int> rankLayers(const std::vector<LayerRange>& stages, int pipelineSize, int rank) {
  std::vector<int> out;
  for (std::size_t s = static_cast<std::size_t>(rank); s < stages.size();
       s += static_cast<std::size_t>(pipelineSize)) {
    for (int i = stages[s].begin; i < stages[s].end; ++i) out.push_back(i);
  }
  return out;
}

std::vector<LayerRange> rankChunkRanges(const std::vector<LayerRange>& stages, int pipelineSize,
                                        int rank) {
  std::vector<LayerRange> out;
  int local = 0;
  for (std::size_t s = static_cast<std::size_t>(rank); s < stages.size();
       s += static_cast<std::size_t>(pipelineSize)) {
    const int n = stages[s].end - stages[s].begin;
    out.push_back({local, local + n});
    local += n;
  }
  return out;
}

void checkPipelineShape(const PipelineSpec& spec, const PipelineShape& shape) {
  const ScheduleInfo& schedule = findSchedule(spec.schedule);
  try {
    if (const std::string problem = shapeProblem(shape); !problem.empty()) throw UserError(problem);
    schedule.checkShape(shape);
  } catch (const UserError& e) {
    throw UserError("config: pipeline_schedule \"" + spec.schedule +
                    "\" with pipeline_model_parallel_size " + str(shape.stages) +
                    ", gradient_accumulation_steps " + str(shape.microBatches) +
                    " (micro-batches per step) and virtual_pipeline_model_parallel_size " +
                    str(shape.chunks) + ": " + e.what());
  }
}

}  // namespace parascope
