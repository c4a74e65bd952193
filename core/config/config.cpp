// The whole config read and validated: model, data, batch sizes, optimizer and schedule here;
// the strategy keys in strategy_config.cpp, the pipeline keys in pipeline_config.cpp.
#include "core/config/config.h"

#include <cmath>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/config/pipeline_config.h"
#include "core/config/strategy_config.h"
#include "core/kernels/flash_attention.h"
#include "core/model/gpt_layers.h"

namespace parascope {

namespace {

void parseModel(JsonReader r, ModelSpec& m) {
  const std::string type = r.choice("type");
  m.kind = modelKindNamed(type);
  if (m.kind == nullptr) {
    throw UserError("config: model.type \"" + type +
                    "\" trains with parameter servers, through `parascope-cli train` "
                    "(docs/parameter_server.md); this run takes " +
                    layerSplittingKinds() + " or \"mlp\"");
  }
  m.kind->read(r, m);
  r.finish();
}

void parseData(JsonReader r, DataSpec& d) {
  const std::string type = r.choice("type");
  d.kind = type == "text" ? DataSpec::Kind::Text : DataSpec::Kind::Idx;
  d.path = r.string("path", d.kind == DataSpec::Kind::Text ? "/usr/share/games/fortunes"
                                                           : "/usr/share/datasets/fashion-mnist");
  if (d.kind == DataSpec::Kind::Text) {
    d.validationFraction = r.number("validation_fraction");
  }
  r.finish();
}

void parseOptimizer(JsonReader r, kernels::AdamWHyper& h) {
  r.choice("type");
  JsonReader p = r.object("params");
  h.lr = static_cast<float>(p.number("lr"));
  const auto betas = p.numbers("betas");
  h.beta1 = static_cast<float>(betas[0]);
  h.beta2 = static_cast<float>(betas[1]);
  h.eps = static_cast<float>(p.number("eps"));
  h.weightDecay = static_cast<float>(p.number("weight_decay"));
  p.finish();
  r.finish();
}

void parseSchedule(JsonReader r, ScheduleSpec& s, int trainIters) {
  const std::string type = r.choice("type");
  s.kind = type == "constant"   ? ScheduleSpec::Kind::Constant
           : type == "WarmupLR" ? ScheduleSpec::Kind::WarmupLR
                                : ScheduleSpec::Kind::WarmupCosineLR;
  JsonReader p = r.object("params");
  if (s.kind != ScheduleSpec::Kind::Constant) {
    s.warmupSteps = static_cast<int>(p.integer("warmup_num_steps"));
  }
  if (s.kind == ScheduleSpec::Kind::WarmupCosineLR) {
    s.totalSteps = static_cast<int>(p.integer("total_num_steps", trainIters));
    s.minRatio = p.number("cos_min_ratio");
  }
  p.finish();
  r.finish();
}

// train_batch_size = micro x accumulation x data_parallel_size: given two, the third is
// derived; given all three, they must agree.
void resolveBatch(JsonReader& r, TrainConfig& c) {
  const long dp = c.parallel.data;
  long global = r.integer("train_batch_size", 0);
  long micro = r.integer("train_micro_batch_size_per_gpu", 0);
  long accum = r.integer("gradient_accumulation_steps", 0);
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

// Context parallelism splits each sequence into 2 x cp chunks and gives a rank the i-th and the
// (2 cp - 1 - i)-th, so that causal attention's work is the same on every rank (Megatron's load
// balancing); under sequence parallelism a rank's tokens split again over the tensor group.
void validateContextParallel(const TrainConfig& c) {
  const int cp = c.parallel.context;
  if (!c.model.kind->splitsLayers())
    throw UserError("config: context_parallel_size (" + std::to_string(cp) +
                    ") > 1 needs model.type " + layerSplittingKinds() + "; valid for \"" +
                    std::string(c.model.kind->name()) + "\": 1");
  const int T = c.model.gpt.contextLength;
  if (T % (2 * cp) != 0)
    throw UserError("config: model.context_length (" + std::to_string(T) +
                    ") must be divisible by 2 x context_parallel_size (" + std::to_string(2 * cp) +
                    "): each rank holds two chunks of every sequence, one from each end");
  if (c.parallel.sequenceParallel && (T / cp) % c.parallel.tensor != 0)
    throw UserError(
        "config: with sequence_parallel, model.context_length / "
        "context_parallel_size (" +
        std::to_string(T / cp) + ") must be divisible by tensor_model_parallel_size (" +
        std::to_string(c.parallel.tensor) + ")");
}

}  // namespace

void checkTrainable(const TrainConfig& c) {
  if (c.parallel.context > 1)
    throw UserError("config: context_parallel_size = " + std::to_string(c.parallel.context) +
                    " (context parallelism) is modeled by the planner (parascope-cli plan and "
                    "simulate) but not trained by this engine; valid for training: unset, or 1");
  c.model.kind->checkTrainable(c.model);
  checkDeviceSupport(c, c.device);
}

void checkDeviceSupport(const TrainConfig& c, Device device) {
  if (device.kind == Device::Kind::Cpu) return;
#if !PARASCOPE_HAVE_CUDA
  throw UserError(
      "config: device \"cuda\" needs a build with CUDA (this one was built without the CUDA "
      "toolkit); valid here: \"cpu\"");
#endif
  std::vector<std::string> refused;
  if (c.model.kind->name() != std::string_view("gpt"))
    refused.push_back("model.type \"" + std::string(c.model.kind->name()) + "\"");
  // Data-, tensor- and pipeline-parallel ranks share the GPU (in-process; NCCL takes one rank per
  // GPU), each copying and reducing the others' buffers there: at most kMaxGpuRanks of them.
  const ParallelStrategy& s = c.parallel;
  if (s.worldSize() > kMaxGpuRanks)
    refused.push_back(std::to_string(s.worldSize()) + " ranks (at most " +
                      std::to_string(kMaxGpuRanks) + " share a GPU)");
  if (c.model.kind->name() == std::string_view("gpt")) {
    const GptConfig& g = c.model.gpt;
    const int hs = g.hiddenSize / g.numHeads;
    if (hs > kernels::kFlashMaxHeadSize)
      refused.push_back("attention heads of " + std::to_string(hs) +
                        " (model.hidden_size / model.num_attention_heads; at most " +
                        std::to_string(kernels::kFlashMaxHeadSize) + ")");
  }
  if (s.gradComm != s.compute) {
    refused.push_back(
        "communication_data_type \"" +
        c.document.value("communication_data_type", std::string(dtypeName(s.gradComm))) + "\"");
  }
  // ZeRO-Offload of the optimizer runs from a GPU (core/train/sharded_optimizer.h); the
  // parameters' offload and ZeRO-Infinity, through the host to NVMe, only on the CPU so far.
  if (s.offloadOptimizer.device == OffloadDevice::Nvme)
    refused.push_back("zero_optimization.offload_optimizer.device \"nvme\"");
  if (s.offloadParam.device != OffloadDevice::None) {
    refused.push_back("zero_optimization.offload_param.device \"" +
                      std::string(offloadDeviceName(s.offloadParam.device)) + "\"");
  }
  if (refused.empty()) return;
  std::string list;
  for (const std::string& r : refused) list += (list.empty() ? "" : ", ") + r;
  throw UserError(
      "config: device \"cuda\" runs the GPT with any parallel strategy, ZeRO and "
      "precision, but not yet: " +
      list);
}

TrainConfig parseTrainConfig(const nlohmann::json& j, int worldSize) {
  TrainConfig c;
  JsonReader r(j, "");
  if (r.has("parameter_server")) {
    throw UserError(
        "config: parameter_server puts the tables on server ranks, a run of `parascope-cli "
        "train` (docs/parameter_server.md); this one is collective: remove the block");
  }
  parseModel(r.object("model"), c.model);
  parseData(r.object("data"), c.data);
  const std::string_view dataType = c.data.kind == DataSpec::Kind::Text ? "text" : "idx";
  if (c.model.kind->dataType() != dataType) {
    throw UserError("config: model.type \"" + std::string(c.model.kind->name()) +
                    "\" needs data.type \"" + std::string(c.model.kind->dataType()) + "\"");
  }
  // parallel.auto is resolved before the config is read (autoParallel, core/plan/search.h): a
  // document still asking for it never reaches a run.
  JsonReader automatic = r.object("parallel");
  if (automatic.boolean("auto"))
    throw UserError(
        "config: parallel.auto = true is resolved by `parascope-cli train` before the run (it "
        "searches the strategies, as `parascope-cli plan` does); elsewhere give the strategy "
        "keys, or set parallel.auto to false");
  automatic.integer("world_size", 0);
  automatic.finish();
  c.parallel = parseStrategy(r, worldSize);
  if (worldSize == 0 && c.parallel.worldSize() > kMaxThreadRanks) {
    throw UserError(std::string("config: tensor_model_parallel_size x ") +
                    (c.parallel.context > 1 ? "context_parallel_size x " : "") +
                    "data_parallel_size x pipeline_model_parallel_size = " +
                    std::to_string(c.parallel.worldSize()) + " ranks, more than the " +
                    std::to_string(kMaxThreadRanks) +
                    " in-process ranks the threads backend runs; valid: at most " +
                    std::to_string(kMaxThreadRanks) + ", or more processes under mpirun");
  }
  if (c.parallel.tensor > 1) {
    if (!c.model.kind->splitsLayers())
      throw UserError("config: tensor_model_parallel_size (" + std::to_string(c.parallel.tensor) +
                      ") > 1 needs model.type " + layerSplittingKinds() + "; valid for \"" +
                      std::string(c.model.kind->name()) + "\": 1");
    validateTensorParallel(c.model.gpt, c.parallel.tensor, c.parallel.sequenceParallel);
  }
  if (c.parallel.context > 1) validateContextParallel(c);
  resolveBatch(r, c);
  c.pipeline = parsePipelineSpec(r, j, c.parallel.pipeline);
  c.trainIters = static_cast<int>(r.integer("train_iters"));
  parseOptimizer(r.object("optimizer"), c.adamw);
  parseSchedule(r.object("scheduler"), c.schedule, c.trainIters);
  c.gradientClipping = r.number("gradient_clipping");
  c.evalInterval = static_cast<int>(r.integer("eval_interval"));
  c.evalIters = static_cast<int>(r.integer("eval_iters"));
  c.logInterval = static_cast<int>(r.integer("log_interval"));
  c.seed = static_cast<std::uint64_t>(r.integer("seed"));
  c.memoryLimitBytes = r.integer("memory_limit_bytes");
  c.saveWeights = r.string("save_weights");
  c.initWeights = r.string("init_weights");
  if (r.choice("device") == "cuda") c.device = {Device::Kind::Cuda, 0};
  r.finish();
  resolvePipeline(c);
  c.document = j;
  return c;
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
