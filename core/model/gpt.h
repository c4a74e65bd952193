// GPT: decoder-only transformer, pre-LayerNorm blocks, learned position embeddings, LM head
// tied to the token embedding (as GPT-2 / nanoGPT). Layers: embedding, block.0 .. block.L-1,
// head (final LayerNorm, logits, cross-entropy). Parameter names and shapes (PyTorch nn.Linear
// layout, out x in) are listed in docs/weights.md. The layers are written once, tensor-parallel
// (gpt_layers.h); one rank runs them over a size-1 tensor group.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/model.h"

namespace parascope {

struct GptConfig {
  int vocabSize = 256;
  int contextLength = 128;
  int hiddenSize = 256;
  int numHeads = 4;
  int numLayers = 4;
  int mlpRatio = 4;  // MLP width = mlpRatio * hiddenSize, unless ffnHiddenSize says otherwise
  // Shapes today's large models use, which the planner models and the engine does not train
  // (checkTrainable refuses them): key-value heads shared by groups of query heads
  // (grouped-query attention; 0: one per head), the MLP's width (0: mlpRatio * hiddenSize), and
  // SwiGLU's gated first product (two matrices of that width).
  int numQueryGroups = 0;
  int ffnHiddenSize = 0;
  bool gatedLinearUnit = false;

  int headSize() const { return hiddenSize / numHeads; }
  int queryGroups() const { return numQueryGroups > 0 ? numQueryGroups : numHeads; }
  std::int64_t ffnWidth() const {
    return ffnHiddenSize > 0 ? ffnHiddenSize : static_cast<std::int64_t>(mlpRatio) * hiddenSize;
  }
  // Rows of the fused QKV weight: the queries' C and a key and a value per group.
  std::int64_t qkvRows() const {
    return hiddenSize + 2 * static_cast<std::int64_t>(queryGroups()) * headSize();
  }
  // Rows of the MLP's first weight: the width, twice under a gated linear unit.
  std::int64_t fcRows() const { return (gatedLinearUnit ? 2 : 1) * ffnWidth(); }
  // Whether the engine trains this shape (every model it builds is multi-head, GELU, mlp_ratio).
  bool engineTrains() const {
    return queryGroups() == numHeads && !gatedLinearUnit &&
           ffnWidth() == static_cast<std::int64_t>(mlpRatio) * hiddenSize;
  }
  // Parameters excluding the position embedding, as in the usual 6N FLOPs-per-token count.
  std::int64_t nonEmbeddingPositionParameters() const;
  // Model FLOPs per token for forward + backward: 6 N + 12 L T C (attention scores and mixing).
  double flopsPerToken() const;
};

// Throws UserError if the shape is inconsistent (width not divisible by heads, ...).
void validate(const GptConfig& c);

// The head holds its f32 logits, then their gradient, for this many of its `rows` token rows at a
// time, against `vocabulary` entries (a tensor rank's part). In f32, all of them: the
// probabilities are kept whole in their place. Under mixed precision (`compute` BF16 or F16) the
// probabilities are kept in the compute type and the rows go by chunks of an eighth, at most
// 256 MiB of f32, at least one row. The memory estimate (gpt_kind.cpp) sizes the head's chunk
// with it.
int headChunkRows(int rows, int vocabulary, DType compute);

// Builds the parameters (uninitialised: call Model::initialize) and the layers, for one rank:
// the layers own their size-1 tensor group.
void buildGpt(Model& model, const GptConfig& c);
// A pipeline rank's part: only the layers listed (increasing indices into embedding, block.0 ..
// block.L-1, head) and the parameters they use, named and ordered as in the whole model, so
// that Model::initialize gives them the same values.
void buildGpt(Model& model, const GptConfig& c, const std::vector<int>& layers);

// How the GPT's matrices are cut over a tensor-parallel group (parameter.h); whole by default.
struct GptSplits {
  TensorSplit vocabulary;  // wte rows
  TensorSplit qkv;         // attention QKV weight and bias: q | k | v blocks, by head
  TensorSplit columns;     // MLP first weight and bias: output features
  TensorSplit rows;        // attention output and MLP second weight: input features
};

// Declares the parameters the listed layers use (as buildGpt), cut as `splits` says.
void addGptParameters(Model& model, const GptConfig& c, const std::vector<int>& layers,
                      const GptSplits& splits = {});
// True if `layers` (as buildGpt takes them) holds layer index i.
bool holdsLayer(const std::vector<int>& layers, int i);

// Throws UserError naming the first id outside [0, vocab_size) and its position ("<what> 7 at
// position 3 is outside the vocabulary [0, 4)").
void checkTokens(const Tensor& tokens, const GptConfig& c, const char* what = "token id");
// A host batch for a model on another device: its tokens and targets checked on the host (the
// device's kernels index rows with them), then copied to `device`'s memory (Workspace).
Batch uploadBatch(const Batch& batch, const GptConfig& c, Allocator& device);

}  // namespace parascope
