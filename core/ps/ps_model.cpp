#include "core/ps/ps_model.h"

#include <cstring>
#include <numeric>

#include "core/comm/communicator.h"
#include "core/config/config.h"
#include "core/config/pipeline_config.h"
#include "core/kernels/sgemm_library.h"
#include "core/model/model.h"
#include "core/ps/ps_protocol.h"
#include "core/ps/skip_gram.h"
#include "core/ps/word2vec_corpus.h"
#include "core/tensor/allocator.h"

namespace parascope::ps {

namespace {

class Word2VecModel final : public PsModel {
 public:
  Word2VecModel(const PsConfig& c, const Word2VecCorpus& corpus) : c_(c), corpus_(corpus) {}

  const std::vector<std::int64_t>& prepare(Split split, int t, int worker) override {
    if (split == Split::Train) {
      corpus_.batch(split, t, static_cast<std::int64_t>(worker) * c_.microBatch, c_.microBatch,
                    batch_);
    } else {
      corpus_.batch(split, t, 0, c_.microBatch * c_.ps.workers, batch_);
    }
    distinctRows(batch_.inputRows, rows_);
    return rows_.rows;
  }

  double forwardBackward(const float* in, const float* dense, float* dIn, float* dDense) override {
    if (batch_.pairs == 0) return 0;
    const auto pairs = static_cast<double>(batch_.pairs);
    const double sum = skipGramForwardBackward(c_.model, batch_, rows_, in, dense, dIn, dDense,
                                               static_cast<float>(1.0 / pairs));
    return sum / pairs;
  }

  double lossSum(const float* in, const float* dense, std::int64_t* targets) override {
    *targets = batch_.pairs;
    return skipGramLoss(c_.model, batch_, rows_, in, dense);
  }

 private:
  const PsConfig& c_;
  const Word2VecCorpus& corpus_;
  Word2VecBatch batch_;
  RowSet rows_;
};

// The GPT on one rank, in f32, built by the engine's kind: its layers run the batch, and its
// parameters are filled from the tables before each pass. The tied LM head multiplies by every
// row of wte and writes a gradient for every row, so a step touches the whole vocabulary.
class GptModel final : public PsModel {
 public:
  GptModel(const PsConfig& c, Allocator& allocator)
      : c_(c), config_(engineConfig(c)), allocator_(allocator), model_(allocator) {
    kernels::setBlasThreads(1);  // as the engine's ranks: the ranks are the parallelism
    built_ = gptModelKind().build(model_, config_, Communicator(), allocator_,
                                  pipelineRankLayers(config_, 0));
    rows_.resize(static_cast<std::size_t>(c.gpt.vocabSize));
    std::iota(rows_.begin(), rows_.end(), std::int64_t{0});
  }

  const std::vector<std::int64_t>& prepare(Split split, int t, int worker) override {
    // As the engine's data-parallel rank `worker` of worker_num draws its micro-batch, and as its
    // evaluation draws validation windows.
    const std::int64_t micro = c_.microBatch;
    const std::int64_t first = split == Split::Train
                                   ? (static_cast<std::int64_t>(t) * c_.ps.workers + worker) * micro
                                   : static_cast<std::int64_t>(t) * micro;
    batch_ = built_.dataset->batch(split, first, c_.microBatch, model_.allocator());
    return rows_;
  }

  double forwardBackward(const float* in, const float* dense, float* dIn, float* dDense) override {
    load(in, dense);
    model_.zeroGrad();
    const auto targets = static_cast<double>(batch_.targets.numel());
    batch_.lossWeight = static_cast<float>(1.0 / targets);
    const MicroBatchResult r = model_.forwardBackward(batch_);
    visit([&](Parameter& p, float* sparse, std::size_t offset) {
      const float* g = p.grad.data<float>();
      float* to = sparse != nullptr ? dIn : dDense + offset;
      for (std::int64_t i = 0; i < p.grad.numel(); ++i) to[i] += g[i];
    });
    return r.lossSum / targets;
  }

  double lossSum(const float* in, const float* dense, std::int64_t* targets) override {
    load(in, dense);
    const MicroBatchResult r = model_.evaluate(batch_);
    *targets = r.targets;
    return r.lossSum;
  }

 private:
  // Every parameter in the model's order with, for wte, a non-null marker, and for the others
  // their offset in the dense table (laid end to end, as PsConfig::tables counts them).
  template <class F>
  void visit(F f) {
    std::size_t offset = 0;
    for (Parameter& p : model_.parameters()) {
      if (p.name == "wte.weight") {
        f(p, p.value.data<float>(), 0);
        continue;
      }
      f(p, nullptr, offset);
      offset += static_cast<std::size_t>(p.value.numel());
    }
  }

  void load(const float* in, const float* dense) {
    visit([&](Parameter& p, float* sparse, std::size_t offset) {
      const float* from = sparse != nullptr ? in : dense + offset;
      std::memcpy(p.value.data<float>(), from,
                  sizeof(float) * static_cast<std::size_t>(p.value.numel()));
    });
  }

  const PsConfig& c_;
  TrainConfig config_;
  // The rank's, as each of the engine's ranks has one: its trace counters are this rank's memory,
  // not every rank's of the process.
  Allocator& allocator_;
  Model model_;
  BuiltModel built_;
  Batch batch_;
  std::vector<std::int64_t> rows_;
};

}  // namespace

TrainConfig engineConfig(const PsConfig& c) {
  TrainConfig t;
  t.model.kind = &gptModelKind();
  t.model.gpt = c.gpt;
  t.data = c.data;
  t.seed = c.seed;
  t.microBatch = c.microBatch;
  t.globalBatch = c.microBatch * c.ps.workers;
  t.trainIters = c.trainIters;
  return t;
}

void checkPsData(const PsConfig& c) {
  if (!c.isGpt()) return;
  // The layers without parameter memory: what is checked is the text, as the engine's build
  // checks it (a missing path, a byte past the vocabulary).
  Allocator allocator;
  Model model(allocator, DType::F32, ModelStorage{.values = false, .gradients = false});
  TrainConfig config = engineConfig(c);
  (void)gptModelKind().build(model, config, Communicator(), allocator,
                             pipelineRankLayers(config, 0));
}

std::unique_ptr<PsModel> makePsModel(const PsConfig& c, const Word2VecCorpus* corpus,
                                     Allocator& allocator) {
  if (c.isGpt()) return std::make_unique<GptModel>(c, allocator);
  return std::make_unique<Word2VecModel>(c, *corpus);
}

RowInit initialRows(const PsConfig& c, std::uint32_t table, Allocator& allocator) {
  if (!c.isGpt()) return {};
  // Built in the rank's allocator while it draws the values, without gradients.
  Model model(allocator, DType::F32, ModelStorage{.values = true, .gradients = false});
  TrainConfig config = engineConfig(c);
  gptModelKind().addLayers(model, config, Communicator(), allocator, pipelineRankLayers(config, 0));
  model.initialize(c.seed);
  auto values = std::make_shared<std::vector<float>>();
  for (const Parameter& p : model.parameters()) {
    if ((p.name == "wte.weight") != (table == kSparseTable)) continue;
    const float* v = p.value.data<float>();
    values->insert(values->end(), v, v + p.value.numel());
  }
  const int dim = c.gpt.hiddenSize;
  values->resize((values->size() + dim - 1) / dim * dim, 0.0f);  // the dense table's last row
  return [values, dim](std::int64_t row, float* out) {
    std::memcpy(out, values->data() + static_cast<std::size_t>(row) * dim, sizeof(float) * dim);
  };
}

}  // namespace parascope::ps
