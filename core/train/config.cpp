#include "core/train/config.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/common/error.h"
#include "core/common/json_reader.h"
#include "core/model/gpt_tensor_parallel.h"
#include "core/train/pipeline_config.h"

namespace parascope {

namespace {

void parseModel(JsonReader r, ModelSpec& m) {
  const std::string type = r.choice("type", "gpt", {"gpt", "mlp"});
  if (type == "gpt") {
    m.kind = ModelSpec::Kind::Gpt;
    GptConfig& g = m.gpt;
    g.vocabSize = static_cast<int>(r.integer("vocab_size", g.vocabSize, 2, 1 << 20));
    g.contextLength = static_cast<int>(r.integer("context_length", g.contextLength, 1, 1 << 16));
    g.hiddenSize = static_cast<int>(r.integer("hidden_size", g.hiddenSize, 1, 1 << 16));
    g.numHeads = static_cast<int>(r.integer("num_attention_heads", g.numHeads, 1, 1024));
    g.numLayers = static_cast<int>(r.integer("num_layers", g.numLayers, 1, 1024));
    g.mlpRatio = static_cast<int>(r.integer("mlp_ratio", g.mlpRatio, 1, 64));
    validate(g);
  } else {
    m.kind = ModelSpec::Kind::Mlp;
    const std::vector<std::int64_t> hidden = r.integers("hidden_sizes", {256}, 16, 1, 1 << 16);
    m.mlp.hiddenSizes.assign(hidden.begin(), hidden.end());
  }
  r.finish();
}

void parseData(JsonReader r, DataSpec& d) {
  const std::string type = r.choice("type", "text", {"text", "idx"});
  d.kind = type == "text" ? DataSpec::Kind::Text : DataSpec::Kind::Idx;
  d.path = r.string("path", d.kind == DataSpec::Kind::Text ? "/usr/share/games/fortunes"
                                                           : "/usr/share/datasets/fashion-mnist");
  if (d.kind == DataSpec::Kind::Text) {
    d.validationFraction = r.number("validation_fraction", 0.1, 0.0, 0.5);
  }
  r.finish();
}

void parseOptimizer(JsonReader r, kernels::AdamWHyper& h) {
  r.choice("type", "AdamW", {"AdamW"});
  JsonReader p = r.object("params");
  h.lr = static_cast<float>(p.number("lr", 1e-3, 0.0, 10.0));
  const auto betas = p.numbers("betas", {0.9, 0.999}, 2, 0.0, 0.999999);
  h.beta1 = static_cast<float>(betas[0]);
  h.beta2 = static_cast<float>(betas[1]);
  h.eps = static_cast<float>(p.number("eps", 1e-8, 0.0, 1.0));
  h.weightDecay = static_cast<float>(p.number("weight_decay", 0.01, 0.0, 10.0));
  p.finish();
  r.finish();
}

void parseSchedule(JsonReader r, ScheduleSpec& s, int trainIters) {
  const std::string type = r.choice("type", "constant", {"constant", "WarmupLR", "WarmupCosineLR"});
  s.kind = type == "constant"   ? ScheduleSpec::Kind::Constant
           : type == "WarmupLR" ? ScheduleSpec::Kind::WarmupLR
                                : ScheduleSpec::Kind::WarmupCosineLR;
  JsonReader p = r.object("params");
  if (s.kind != ScheduleSpec::Kind::Constant) {
    s.warmupSteps = static_cast<int>(p.integer("warmup_num_steps", 0, 0, 1 << 30));
  }
  if (s.kind == ScheduleSpec::Kind::WarmupCosineLR) {
    s.totalSteps = static_cast<int>(p.integer("total_num_steps", trainIters, 1, 1 << 30));
    s.minRatio = p.number("cos_min_ratio", 0.0, 0.0, 1.0);
  }
  p.finish();
  r.finish();
}

// train_batch_size = micro x accumulation x data_parallel_size: given two, the third is
// derived; given all three, they must agree.
void resolveBatch(JsonReader& r, TrainConfig& c) {
  const long dp = c.parallel.data;
  long global = r.integer("train_batch_size", 0, 1, 1 << 24);
  long micro = r.integer("train_micro_batch_size_per_gpu", 0, 1, 1 << 20);
  long accum = r.integer("gradient_accumulation_steps", 0, 1, 1 << 20);
  auto describe = [&] {
    auto v = [](long x) { return x ? std::to_string(x) : std::string("unset"); };
    return "train_batch_size (" + v(global) + "), train_micro_batch_size_per_gpu (" + v(micro) +
           ") and gradient_accumulation_steps (" + v(accum) + ") with data-parallel size " +
           std::to_string(dp);
  };
  if (global != 0 && micro == 0) {
    if (accum == 0) accum = 1;
    micro = global % (accum * dp) == 0 ? global / (accum * dp) : 0;
  } else if (global != 0 && accum == 0) {
    accum = global % (micro * dp) == 0 ? global / (micro * dp) : 0;
  } else {
    if (micro == 0) micro = 8;
    if (accum == 0) accum = 1;
    if (global == 0) global = micro * accum * dp;
  }
  if (micro == 0 || accum == 0 || global != micro * accum * dp) {
    throw UserError("config: " + describe() +
                    " are inconsistent: train_batch_size must equal micro-batch x accumulation "
                    "steps x data-parallel size");
  }
  c.microBatch = static_cast<int>(micro);
  c.gradientAccumulation = static_cast<int>(accum);
  c.globalBatch = static_cast<int>(global);
}

}  // namespace

TrainConfig parseTrainConfig(const nlohmann::json& j, int worldSize) {
  TrainConfig c;
  JsonReader r(j, "");
  parseModel(r.object("model"), c.model);
  parseData(r.object("data"), c.data);
  if ((c.model.kind == ModelSpec::Kind::Gpt) != (c.data.kind == DataSpec::Kind::Text)) {
    throw UserError("config: model.type \"" +
                    std::string(c.model.kind == ModelSpec::Kind::Gpt ? "gpt" : "mlp") +
                    "\" needs data.type \"" +
                    (c.model.kind == ModelSpec::Kind::Gpt ? "text" : "idx") + "\"");
  }
  c.parallel = parseStrategy(r, worldSize);
  if (c.parallel.tensor > 1) {
    if (c.model.kind != ModelSpec::Kind::Gpt)
      throw UserError("config: tensor_model_parallel_size (" + std::to_string(c.parallel.tensor) +
                      ") > 1 needs model.type \"gpt\"; the mlp classifier runs with 1");
    validateTensorParallel(c.model.gpt, c.parallel.tensor, c.parallel.sequenceParallel);
  }
  resolveBatch(r, c);
  c.pipeline = parsePipelineSpec(r, j, c.parallel.pipeline);
  c.trainIters = static_cast<int>(r.integer("train_iters", c.trainIters, 1, 1 << 30));
  parseOptimizer(r.object("optimizer"), c.adamw);
  parseSchedule(r.object("scheduler"), c.schedule, c.trainIters);
  c.gradientClipping = r.number("gradient_clipping", 0.0, 0.0, 1e6);
  c.evalInterval = static_cast<int>(r.integer("eval_interval", c.evalInterval, 0, 1 << 30));
  c.evalIters = static_cast<int>(r.integer("eval_iters", c.evalIters, 0, 1 << 20));
  c.logInterval = static_cast<int>(r.integer("log_interval", c.logInterval, 1, 1 << 30));
  c.seed = static_cast<std::uint64_t>(r.integer("seed", 1234, 0, INT64_MAX));
  c.saveWeights = r.string("save_weights", "");
  r.finish();
  resolvePipeline(c);
  return c;
}

nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open config file");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  try {
    return nlohmann::json::parse(s);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based; turn it into the line and column an editor shows.
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < s.size(); ++i) {
      column = s[i] == '\n' ? 1 : column + 1;
      line += s[i] == '\n';
    }
    const std::string what = e.what();
    throw UserError(path + ": malformed JSON at line " + std::to_string(line) + ", column " +
                    std::to_string(column) + ": " + what.substr(what.find(':') + 2));
  }
}

void applyOverride(nlohmann::json& j, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UserError("override '" + assignment + "' must look like key.path=value");
  }
  const std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  nlohmann::json* node = &j;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot - start);
    if (key.empty()) throw UserError("override '" + assignment + "' has an empty key");
    if (!node->is_object()) {
      throw UserError("override '" + assignment + "': '" + path.substr(0, start - 1) +
                      "' is not an object");
    }
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = nlohmann::json::object();
    start = dot + 1;
  }
}

double learningRate(const TrainConfig& c, int step) {
  const double peak = c.adamw.lr;
  const ScheduleSpec& s = c.schedule;
  if (s.kind == ScheduleSpec::Kind::Constant) return peak;
  if (step < s.warmupSteps) return peak * (step + 1) / s.warmupSteps;
  if (s.kind == ScheduleSpec::Kind::WarmupLR) return peak;
  const double span = std::max(1, s.totalSteps - s.warmupSteps);
  const double progress = std::min(1.0, (step - s.warmupSteps) / span);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return peak * (s.minRatio + (1.0 - s.minRatio) * cosine);
}

}  // namespace parascope
