// Strategy keys: degrees, ZeRO, precision and loss scaling, checked against each other.
#include "core/config/strategy_config.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "core/common/error.h"

namespace parascope {

namespace {

// What this build runs; the rest of the valid key space is refused by name before training.
constexpr int kMaxZeroStage = 3;

std::string str(long v) {
  return std::to_string(v);
}

void parseDegrees(JsonReader& top, ParallelStrategy& s, int worldSize) {
  s.tensor = static_cast<int>(top.integer("tensor_model_parallel_size"));
  s.pipeline = static_cast<int>(top.integer("pipeline_model_parallel_size"));
  s.context = static_cast<int>(top.integer("context_parallel_size"));
  const bool given = top.has("data_parallel_size");
  const long model = static_cast<long>(s.tensor) * s.context * s.pipeline;
  // The context degree is named only where it is set: the messages of runs without it stay
  // those of the three degrees the engine trains.
  const std::string context =
      s.context > 1 ? " x context_parallel_size (" + str(s.context) + ")" : "";
  if (worldSize > 0 && !given && worldSize % model != 0) {
    throw UserError("config: tensor_model_parallel_size (" + str(s.tensor) + ")" + context +
                    " x pipeline_model_parallel_size (" + str(s.pipeline) +
                    ") must divide the world of " + str(worldSize) + " ranks");
  }
  const long fallback = worldSize > 0 ? worldSize / model : 1;
  s.data = static_cast<int>(top.integer("data_parallel_size", fallback));
  if (worldSize > 0 && s.worldSize() != worldSize) {
    throw UserError("config: tensor_model_parallel_size (" + str(s.tensor) + ")" + context +
                    " x data_parallel_size (" + str(s.data) + ") x pipeline_model_parallel_size (" +
                    str(s.pipeline) + ") = " + str(s.worldSize()) + " must equal the world of " +
                    str(worldSize) +
                    " ranks; valid: data_parallel_size = " + str(worldSize / model) + " or unset");
  }
  s.sequenceParallel = top.boolean("sequence_parallel");
  if (s.sequenceParallel && s.tensor == 1) {
    throw UserError(
        "config: sequence_parallel = true needs tensor_model_parallel_size > 1 (it shards the "
        "tensor-parallel group's layernorm and residual regions); valid: false, or a tensor size "
        "of 2 or more");
  }
}

// `bufferElements`: offload_param's buffer_size, read where given.
OffloadSpec parseOffload(JsonReader o, std::int64_t* bufferElements) {
  OffloadSpec spec;
  const std::string device = o.choice("device");
  spec.device = device == "nvme"  ? OffloadDevice::Nvme
                : device == "cpu" ? OffloadDevice::Cpu
                                  : OffloadDevice::None;
  spec.nvmePath = o.string("nvme_path", "");
  spec.bufferCount = static_cast<int>(o.integer("buffer_count"));
  spec.pinMemory = o.boolean("pin_memory");
  if (bufferElements != nullptr) {
    *bufferElements = o.integer("buffer_size");
    // Read so that it is checked: DeepSpeed's configs carry it; this engine keeps no more than
    // the buffers in memory.
    (void)o.integer("max_in_cpu");
  }
  o.finish();
  if (spec.device == OffloadDevice::Nvme && spec.nvmePath.empty()) {
    throw UserError("config: " + o.keyPath("nvme_path") +
                    " is not set; device nvme swaps to files in that directory; valid: an "
                    "existing, writable directory on a local disk");
  }
  return spec;
}

void parseZero(JsonReader z, ParallelStrategy& s) {
  s.zeroStage = static_cast<int>(z.integer("stage"));
  if (s.zeroStage > kMaxZeroStage) {
    throw UserError("config: zero_optimization.stage = " + str(s.zeroStage) +
                    " is not available in this build yet; valid: 0.." + str(kMaxZeroStage));
  }
  s.bucketElements = z.integer("reduce_bucket_size");
  s.prefetchElements = z.integer("stage3_prefetch_bucket_size");
  s.maxLiveElements = z.integer("stage3_max_live_parameters");
  s.overlapComm = z.boolean("overlap_comm");
  s.subGroupElements = z.integer("sub_group_size");
  s.offloadOptimizer = parseOffload(z.object("offload_optimizer"), nullptr);
  s.offloadParam = parseOffload(z.object("offload_param"), &s.paramBufferElements);
  z.finish();
  const OffloadDevice optimizer = s.offloadOptimizer.device;
  if (optimizer != OffloadDevice::None && s.zeroStage == 0) {
    throw UserError("config: zero_optimization.offload_optimizer.device = " +
                    std::string(offloadDeviceName(optimizer)) +
                    " offloads ZeRO's optimizer shard, and stage 0 has none; valid: stage 1, 2 "
                    "or 3, or device none");
  }
  const OffloadDevice param = s.offloadParam.device;
  if (param != OffloadDevice::None && s.zeroStage != 3) {
    throw UserError("config: zero_optimization.offload_param.device = " +
                    std::string(offloadDeviceName(param)) +
                    " offloads ZeRO-3's parameter shard; valid: stage 3, or device none");
  }
}

void parseAio(JsonReader aio, AioSpec& a) {
  a.blockSize = aio.integer("block_size");
  a.queueDepth = static_cast<int>(aio.integer("queue_depth"));
  a.threadCount = static_cast<int>(aio.integer("thread_count"));
  a.singleSubmit = aio.boolean("single_submit");
  a.overlapEvents = aio.boolean("overlap_events");
  aio.finish();
  if (a.blockSize % 4096 != 0) {
    throw UserError("config: aio.block_size = " + str(static_cast<long>(a.blockSize)) +
                    " is not a multiple of 4096, the alignment direct I/O needs; valid: 4096, "
                    "8192, ... (default 1048576)");
  }
}

void parseLossScale(JsonReader& fp16, LossScaleSpec& l) {
  l.staticScale = fp16.number("loss_scale");
  l.initialScalePower = static_cast<int>(fp16.integer("initial_scale_power"));
  l.lossScaleWindow = static_cast<int>(fp16.integer("loss_scale_window"));
  l.hysteresis = static_cast<int>(fp16.integer("hysteresis"));
  l.consecutiveHysteresis = fp16.boolean("consecutive_hysteresis");
  l.minLossScale = fp16.number("min_loss_scale");
  if (l.minLossScale <= 0) {
    throw UserError("config: fp16.min_loss_scale = 0 would let the loss scale reach 0; valid: > 0");
  }
  const double initial = std::ldexp(1.0, l.initialScalePower);
  if (l.staticScale == 0 && l.minLossScale > initial) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "fp16.min_loss_scale (%g) exceeds the initial loss scale ",
                  l.minLossScale);
    throw UserError("config: " + std::string(buf) + "2^fp16.initial_scale_power = 2^" +
                    str(l.initialScalePower) + "; valid: min_loss_scale <= 2^initial_scale_power");
  }
}

void parsePrecision(JsonReader& top, ParallelStrategy& s) {
  JsonReader fp16 = top.object("fp16");
  const bool half = fp16.boolean("enabled");
  parseLossScale(fp16, s.lossScale);
  fp16.finish();
  JsonReader bf16 = top.object("bf16");
  const bool brain = bf16.boolean("enabled");
  bf16.finish();
  if (half && brain) {
    throw UserError("config: fp16.enabled and bf16.enabled are both true; enable at most one");
  }
  s.compute = half ? DType::F16 : brain ? DType::BF16 : DType::F32;
  // Unset: gradients travel in the compute type, as DeepSpeed's default.
  const std::string fallback = half ? "fp16" : brain ? "bf16" : "fp32";
  const std::string comm = top.choice("communication_data_type", fallback);
  s.gradComm = comm == "fp32" ? DType::F32 : comm == "fp16" ? DType::F16 : DType::BF16;
}

}  // namespace

ParallelStrategy parseStrategy(JsonReader& top, int worldSize) {
  ParallelStrategy s;
  s.backend = parseRankBackend(top.choice("backend"));
  parseDegrees(top, s, worldSize);
  parseZero(top.object("zero_optimization"), s);
  parseAio(top.object("aio"), s.aio);
  parsePrecision(top, s);
  return s;
}

}  // namespace parascope
