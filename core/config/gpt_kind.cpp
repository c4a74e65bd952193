// The GPT (core/model/gpt.h) as a model kind: byte-level text, tensor and pipeline parallel.
#include <algorithm>
#include <cstdio>

#include "core/common/error.h"
#include "core/config/config.h"
#include "core/config/json_reader.h"
#include "core/config/model_kind.h"
#include "core/data/text_dataset.h"
#include "core/kernels/attention.h"
#include "core/model/gpt.h"
#include "core/model/gpt_layers.h"
#include "core/parallel/tensor_parallel.h"

namespace parascope {

namespace {

class GptKind final : public ModelKind {
 public:
  std::string_view name() const override { return "gpt"; }
  std::string_view dataType() const override { return "text"; }
  std::string_view target() const override { return "tokens"; }
  bool classifies() const override { return false; }
  bool splitsLayers() const override { return true; }

  std::vector<ConfigKey> keys() const override {
    const GptConfig g;
    auto derived = [](ConfigKey k, const char* words) {
      k.fallback = nullptr;
      k.derived = words;
      return k;
    };
    auto flag = [](const char* path, bool fallback, const char* help) {
      ConfigKey k;
      k.path = path;
      k.type = KeyType::Boolean;
      k.fallback = fallback;
      k.help = help;
      return k;
    };
    auto row = [](const char* path, int fallback, std::int64_t min, std::int64_t max,
                  const char* help) {
      ConfigKey k;
      k.path = path;
      k.type = KeyType::Integer;
      k.fallback = fallback;
      k.intMin = min;
      k.intMax = max;
      k.help = help;
      return k;
    };
    return {row("model.vocab_size", g.vocabSize, 2, 1 << 20, "(gpt) vocabulary size"),
            row("model.context_length", g.contextLength, 1, 1 << 16, "(gpt) tokens per sample"),
            row("model.hidden_size", g.hiddenSize, 1, 1 << 16,
                "(gpt) width; divisible by `num_attention_heads`"),
            row("model.num_attention_heads", g.numHeads, 1, 1024, "(gpt) attention heads"),
            row("model.num_layers", g.numLayers, 1, 1024, "(gpt) transformer blocks"),
            row("model.mlp_ratio", g.mlpRatio, 1, 64, "(gpt) MLP width over hidden size"),
            derived(row("model.num_query_groups", 0, 1, 1024,
                        "(gpt) key-value heads, each shared by a group of query heads "
                        "(grouped-query attention); divides `num_attention_heads`. Planned "
                        "(`plan`, `simulate`), not trained by this engine"),
                    "the head count"),
            derived(row("model.ffn_hidden_size", 0, 1, 1 << 20,
                        "(gpt) MLP width, instead of `mlp_ratio` x `hidden_size`. Planned, not "
                        "trained by this engine"),
                    "`mlp_ratio` x `hidden_size`"),
            flag("model.gated_linear_unit", g.gatedLinearUnit,
                 "(gpt) SwiGLU: the MLP's first product gated, two matrices of its width. "
                 "Planned, not trained by this engine")};
  }

  void read(JsonReader& r, ModelSpec& m) const override {
    GptConfig& g = m.gpt;
    g.vocabSize = static_cast<int>(r.integer("vocab_size"));
    g.contextLength = static_cast<int>(r.integer("context_length"));
    g.hiddenSize = static_cast<int>(r.integer("hidden_size"));
    g.numHeads = static_cast<int>(r.integer("num_attention_heads"));
    g.numLayers = static_cast<int>(r.integer("num_layers"));
    g.mlpRatio = static_cast<int>(r.integer("mlp_ratio"));
    g.numQueryGroups = static_cast<int>(r.integer("num_query_groups", 0));
    g.ffnHiddenSize = static_cast<int>(r.integer("ffn_hidden_size", 0));
    g.gatedLinearUnit = r.boolean("gated_linear_unit");
    validate(g);
  }

  // The embedding, the blocks, the head.
  LayerSequence layers(const ModelSpec& m) const override { return {1, m.gpt.numLayers, 1, true}; }

  // Megatron's block: column-parallel qkv and fc, row-parallel proj and fc2, the attention core
  // over the rank's heads; the embedding and the head split the vocabulary. Element-wise bytes
  // count each kernel's f32 reads and writes (layernorms, biases, softmax, gelu, residuals).
  std::vector<LayerWork> layerWork(const TrainConfig& c) const override {
    const GptConfig& g = c.model.gpt;
    // Under context parallelism a rank holds T of each sequence's `keys` tokens; its queries
    // attend to every key.
    const double t = c.parallel.tensor, B = c.microBatch, keys = g.contextLength;
    const double T = keys / c.parallel.context;
    const double C = g.hiddenSize, F = static_cast<double>(g.ffnWidth()), V = g.vocabSize;
    // The fused QKV's and the MLP's first product's widths (grouped-query attention, SwiGLU).
    const double Q = static_cast<double>(g.qkvRows()), R = static_cast<double>(g.fcRows());
    const double N = B * T, local = c.parallel.sequenceParallel ? N / t : N;
    const double heads = g.numHeads / t, hd = g.headSize();
    const CommOp enter = CommOp::AllGather;
    const CommOp leave = c.parallel.sequenceParallel ? CommOp::ReduceScatter : CommOp::AllReduce;
    auto regionEntry = [&](LayerWork& w) {
      if (c.parallel.sequenceParallel && t > 1) w.collectives.push_back({enter, N * C});
    };
    auto regionExit = [&](LayerWork& w) {
      if (t > 1) w.collectives.push_back({leave, N * C});
    };
    std::vector<LayerWork> work;
    LayerWork embedding;
    embedding.elementwiseBytes = 4 * 3 * N * C;  // two rows read, their sum written
    regionExit(embedding);
    work.push_back(embedding);
    LayerWork block;
    const double scores = B * heads * T * keys;
    block.gemms = {{N, Q / t, C},
                   {T, keys, hd, B * heads, false},
                   {T, hd, keys, B * heads, false},
                   {N, C, C / t},
                   {N, R / t, C},
                   {N, C, F / t}};
    const double softmax = 4 * 3 * scores;
    // Biases on the QKV, projection and first MLP outputs; the activation reads the first
    // product's output (both halves under SwiGLU) and writes F wide.
    block.elementwiseBytes = 4 * (2 * 2 * local * C + 2 * 3 * local * C) +
                             4 * (N * Q / t + N * C / t + N * (2 * R + F) / t) + softmax;
    block.recomputedBytes = softmax;
    regionEntry(block);
    // Ring attention: every rank's keys and values (Q - C wide: the fused product's part after
    // the queries) pass each rank of the context group.
    if (c.parallel.context > 1) block.collectives.push_back({enter, B * keys * (Q - C) / t, true});
    regionExit(block);
    regionEntry(block);
    regionExit(block);
    for (int i = 0; i < g.numLayers; ++i) work.push_back(block);
    LayerWork head;
    head.gemms = {{N, V / t, C}};
    head.elementwiseBytes = 4 * (2 * local * C + 3 * N * V / t);
    regionEntry(head);
    if (t > 1) {
      head.collectives.push_back({CommOp::AllReduce, N});      // row maxima
      head.collectives.push_back({CommOp::AllReduce, 2 * N});  // sums and target logits
    }
    work.push_back(head);
    return work;
  }

  int targetsPerSample(const ModelSpec& m) const override { return m.gpt.contextLength; }
  // Token ids in, next token ids out: int32 each (text_dataset.cpp).
  double batchBytes(const TrainConfig& config) const override {
    return static_cast<double>(config.microBatch) * config.model.gpt.contextLength * (4 + 4);
  }
  double flopsPerTarget(const ModelSpec& m) const override { return m.gpt.flopsPerToken(); }

  std::int64_t parameters(const ModelSpec& m, const Model&) const override {
    const GptConfig& g = m.gpt;
    return g.nonEmbeddingPositionParameters() +
           static_cast<std::int64_t>(g.contextLength) * g.hiddenSize;
  }

  void checkTrainable(const ModelSpec& m) const override {
    const GptConfig& g = m.gpt;
    auto refuse = [](const std::string& setting, const std::string& what,
                     const std::string& valid) {
      throw UserError("config: " + setting + " (" + what +
                      ") is modeled by the planner (parascope-cli plan and simulate) but not "
                      "trained by this engine; valid for training: " +
                      valid);
    };
    if (g.queryGroups() != g.numHeads)
      refuse("model.num_query_groups = " + std::to_string(g.numQueryGroups),
             "grouped-query attention", "unset, or " + std::to_string(g.numHeads) + " (the heads)");
    if (g.gatedLinearUnit) refuse("model.gated_linear_unit = true", "SwiGLU", "false");
    const std::int64_t ratioWidth = static_cast<std::int64_t>(g.mlpRatio) * g.hiddenSize;
    if (g.ffnWidth() != ratioWidth)
      refuse("model.ffn_hidden_size = " + std::to_string(g.ffnHiddenSize),
             "an MLP width other than model.mlp_ratio x model.hidden_size",
             "unset, or " + std::to_string(ratioWidth));
  }

  std::string describe(const ModelSpec& m, double millions) const override {
    const GptConfig& g = m.gpt;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "gpt, %.2fM parameters (%d layers, width %d, %d heads, context %d, vocab %d)",
                  millions, g.numLayers, g.hiddenSize, g.numHeads, g.contextLength, g.vocabSize);
    return buf;
  }

  // The tensors gpt_layers.cpp allocates, in their order. Token rows: N in the micro-batch, R
  // outside the tensor-parallel region (N / t under sequence parallelism), so a region's gathered
  // copies (N C) are transient and the stage boundary is R C.
  std::vector<LayerActivations> layerActivations(const TrainConfig& c) const override {
    const GptConfig& g = c.model.gpt;
    // A rank's T of each sequence's `keys` tokens, as in layerWork.
    const double t = c.parallel.tensor, B = c.microBatch, keys = g.contextLength;
    const double T = keys / c.parallel.context;
    const double C = g.hiddenSize, F = static_cast<double>(g.ffnWidth()), V = g.vocabSize;
    const double qkvWidth = static_cast<double>(g.qkvRows());
    const double fcWidth = static_cast<double>(g.fcRows());
    const bool sp = c.parallel.sequenceParallel && t > 1;
    const double N = B * T, R = sp ? N / t : N, NC = N * C, RC = R * C;
    const double gathered = sp ? NC : 0;  // one gathered copy, under sequence parallelism
    // A layernorm's output with its per-row mean and reciprocal deviation.
    const double layernorm = R * (C + 2);
    std::vector<LayerActivations> layers;

    // The token rows of the local vocabulary shard, summed over the group (reduce-scattered
    // into R rows under sequence parallelism); its backward gathers the gradient again.
    LayerActivations embedding;
    embedding.output = RC;
    embedding.forwardPeak = NC + (sp ? RC : 0);
    embedding.backwardPeak = gathered;
    embedding.keepsOutputGradient = true;  // its weight half is the whole backward
    embedding.weightHalfPeak = gathered;
    layers.push_back(embedding);

    // Kept: both layernorms, qkv, the attention core's row statistics and output, x2, fc and
    // gelu. Sequence parallelism adds the row-parallel products' full outputs until the forward
    // ends.
    LayerActivations block;
    const double heads = g.numHeads / t, stats = B * heads * T * 2, core = N * C / t;
    // Under context parallelism, every rank's keys and values, gathered for the attention core
    // (transient), and in backward once more with their gradients.
    const double ring = c.parallel.context > 1 ? B * keys * (qkvWidth - C) / t : 0;
    // fc: the first MLP product's output (both halves under SwiGLU); act: the activation's.
    const double qkv = N * qkvWidth / t, fc = N * fcWidth / t, act = N * F / t;
    const double kept = 2 * layernorm + qkv + stats + core + RC + fc + act;
    const bool selective = c.pipeline.recompute == Recompute::Selective;
    const double dropped = selective ? stats + core : 0;
    // In Block::forward's order: ln1 with its mean and rstd, qkv, [the attention output], x2,
    // ln2 with its mean and rstd, fc and gelu; the attention statistics stay f32.
    block.keptTensors = {RC, R, R, qkv};
    if (!selective) block.keptTensors.push_back(core);
    block.keptTensors.insert(block.keptTensors.end(), {RC, RC, R, R, fc, act});
    // The attention core's scratch for a pass (KernelOps::attentionScratch): on the CPU a row
    // block's scores against every key (with their gradients in backward) and a head's keys and
    // values copied for its products; none for a GPU's fused kernels.
    const bool cpu = c.device.kind == Device::Kind::Cpu;
    auto scratch = [&](bool backward) {
      return cpu ? static_cast<double>(
                       kernels::attentionScratch(static_cast<int>(keys), g.headSize(), backward))
                 : 0.0;
    };
    block.output = RC;
    block.kept = kept - dropped;
    // The larger of the forward's end and its attention core, whose scratch goes when it returns
    // (ln1, qkv, the statistics, the output and the scratch then live).
    block.forwardPeak = std::max(kept + RC + 2 * gathered + ring,
                                 layernorm + qkv + stats + core + scratch(false) + ring);
    block.inputGradient = RC;
    // The input half restores what selective recompute dropped (its forward scratch gone again
    // before anything larger), then allocates dfc, dln2 and dln1 in full rows, dx2 and dx, datty,
    // dqkv and attention's backward scratch; under sequence parallelism also the gathered dy and
    // dx2 and the scattered dln2 and dln1.
    block.inputHalfPeak = dropped + fc + 2 * NC + 2 * RC + core + qkv + scratch(true) + 2 * ring +
                          (sp ? 2 * NC + 2 * RC : 0);
    // It frees the statistics, qkv, fc and its scratch; the weight half gets what its
    // products need: ln1, ln2, the attention output, x2, gelu, dfc, dqkv, dln2, dx2, dln1 (and
    // under sequence parallelism the gathered dy and dx2), and dy.
    block.keptForWeight = 2 * layernorm + core + fc + act + qkv + 4 * RC + 2 * gathered;
    block.keepsOutputGradient = true;
    block.weightHalfPeak = gathered;  // each layernorm output gathered again, one at a time
    block.backwardPeak =
        std::max(block.inputHalfPeak, block.keptForWeight - block.kept + RC + gathered);
    for (int i = 0; i < g.numLayers; ++i) layers.push_back(block);

    // Kept: the final layernorm and the probabilities of the local vocabulary shard, which the
    // backward turns into the logits' gradient. In f32 they are the logits themselves, become the
    // probabilities and then the gradient in place. Under mixed precision they are stored in the
    // compute type, and the f32 logits (their gradient in backward) are a chunk of rows at a time
    // (headChunkRows); the weight products need the layernorm's output gathered again under
    // sequence parallelism. Forward allocates the probabilities, the losses, the gathered
    // layernorm output and the chunk, and for each chunk, split, its row maxima and sums.
    LayerActivations head;
    const double part = V / t, probabilities = N * part;
    const bool low = c.parallel.compute != DType::F32;
    const double rows =
        headChunkRows(static_cast<int>(N), static_cast<int>(part), c.parallel.compute);
    const double chunk = low ? rows * part : 0;
    head.kept = layernorm + probabilities;
    head.keptLow = low ? probabilities : 0;
    head.keptTensors = {RC, R, R};  // ln_f with its mean and rstd
    if (!low) head.keptTensors.push_back(probabilities);
    head.output = N;
    head.forwardPeak = head.kept + N + gathered + chunk + (t > 1 ? 3 * rows : 0);
    head.inputGradient = RC;
    // dln in full rows with the chunk (and, for the whole backward, the gathered layernorm
    // output), then dln scattered under sequence parallelism and dx; dln stays for the weight
    // half, which holds the chunk and the gathered output again.
    const double layernormPhase = NC + RC + (sp ? RC : 0);
    head.inputHalfPeak = std::max(NC + chunk, layernormPhase);
    head.backwardPeak = std::max(NC + gathered + chunk, layernormPhase);
    head.keptForWeight = head.kept + RC;
    head.weightHalfPeak = gathered + chunk;
    layers.push_back(head);
    return layers;
  }

  bool shapesFromData() const override { return false; }

  std::vector<std::pair<std::string, Shape>> parameterShapes(const ModelSpec& m) const override {
    const GptConfig& g = m.gpt;
    const std::int64_t C = g.hiddenSize, F = g.ffnWidth(), Q = g.qkvRows(), R = g.fcRows();
    std::vector<std::pair<std::string, Shape>> t;
    t.push_back({"wte.weight", {g.vocabSize, C}});
    t.push_back({"wpe.weight", {g.contextLength, C}});
    for (int i = 0; i < g.numLayers; ++i) {
      const std::string p = "h." + std::to_string(i) + ".";
      t.push_back({p + "ln_1.weight", {C}});
      t.push_back({p + "ln_1.bias", {C}});
      t.push_back({p + "attn.c_attn.weight", {Q, C}});
      t.push_back({p + "attn.c_attn.bias", {Q}});
      t.push_back({p + "attn.c_proj.weight", {C, C}});
      t.push_back({p + "attn.c_proj.bias", {C}});
      t.push_back({p + "ln_2.weight", {C}});
      t.push_back({p + "ln_2.bias", {C}});
      t.push_back({p + "mlp.c_fc.weight", {R, C}});
      t.push_back({p + "mlp.c_fc.bias", {R}});
      t.push_back({p + "mlp.c_proj.weight", {C, F}});
      t.push_back({p + "mlp.c_proj.bias", {C}});
    }
    t.push_back({"ln_f.weight", {C}});
    t.push_back({"ln_f.bias", {C}});
    return t;
  }

  BuiltModel build(Model& model, TrainConfig& config, const Communicator& tensorGroup,
                   Allocator& allocator, const std::vector<int>& layers) const override {
    const GptConfig& g = config.model.gpt;
    auto text = std::make_unique<TextDataset>(config.data.path, g.contextLength,
                                              config.data.validationFraction, config.seed);
    if (text->maxByte() >= g.vocabSize) {
      throw UserError("data.path: '" + config.data.path + "' contains byte value " +
                      std::to_string(text->maxByte()) + " but model.vocab_size is " +
                      std::to_string(g.vocabSize) + "; byte-level text needs vocab_size 256");
    }
    BuiltModel built;
    built.dataset = std::move(text);
    built.region = region(model, config, tensorGroup, allocator, layers);
    return built;
  }

  void addLayers(Model& model, const TrainConfig& config, const Communicator& tensorGroup,
                 Allocator& allocator, const std::vector<int>& layers) const override {
    region(model, config, tensorGroup, allocator, layers);
  }

 private:
  // Without tensor parallelism the tensor group has size 1: the same layers, unsplit.
  static std::shared_ptr<TensorParallelRegion> region(Model& model, const TrainConfig& config,
                                                      const Communicator& tensorGroup,
                                                      Allocator& allocator,
                                                      const std::vector<int>& layers) {
    auto region = std::make_shared<TensorParallelRegion>(
        tensorGroup, config.parallel.sequenceParallel, allocator);
    buildGptTensorParallel(model, config.model.gpt, region, layers);
    return region;
  }
};

}  // namespace

const ModelKind& gptModelKind() {
  static const GptKind kind;
  return kind;
}

}  // namespace parascope
