// The training configuration: model, data, batch sizes, optimizer, schedule. JSON keys follow
// what users know from DeepSpeed (train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, optimizer.params, scheduler, gradient_clipping) and Megatron
// (train_iters, eval_interval, eval_iters, log_interval). Every key is validated; see
// docs/config.md for the full list. This module (core/config/) is the one place configs are
// read: the document (config_document.cpp), the strategy keys (strategy_config.h), the pipeline
// keys (pipeline_config.h), typed key lookup (json_reader.h), and what a run's ranks agree on
// (config_agreement.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/model_kind.h"
#include "core/kernels/adamw.h"
#include "core/model/gpt.h"
#include "core/model/mlp.h"
#include "core/parallel/pipeline_layout.h"
#include "core/parallel/strategy.h"
#include "core/tensor/allocator.h"

namespace parascope {

struct ModelSpec {
  const ModelKind* kind = &gptModelKind();  // model.type (core/config/model_kind.h)
  GptConfig gpt;
  MlpConfig mlp;
};

struct DataSpec {
  enum class Kind : std::uint8_t { Text, Idx };
  Kind kind = Kind::Text;
  std::string path = "/usr/share/games/fortunes";
  double validationFraction = 0.1;
};

struct ScheduleSpec {
  enum class Kind : std::uint8_t { Constant, WarmupLR, WarmupCosineLR };
  Kind kind = Kind::Constant;
  int warmupSteps = 0;
  int totalSteps = 0;     // cosine horizon; defaults to train_iters
  double minRatio = 0.0;  // cosine floor as a fraction of the peak lr
};

struct TrainConfig {
  ModelSpec model;
  DataSpec data;
  kernels::AdamWHyper adamw;
  ScheduleSpec schedule;
  ParallelStrategy parallel;      // degrees, ZeRO, precision, buckets, backend
  PipelineSpec pipeline;          // schedule, virtual stages, layout, recompute
  double gradientClipping = 0.0;  // 0 disables
  int microBatch = 8;
  int gradientAccumulation = 1;
  int globalBatch = 8;
  int trainIters = 100;
  int evalInterval = 50;
  int evalIters = 8;  // validation batches per evaluation; 0 = the whole split (images)
  int logInterval = 10;
  std::uint64_t seed = 1234;
  std::int64_t memoryLimitBytes = 0;  // memory_limit_bytes: per rank, tracked memory; 0 = none
  std::string saveWeights;            // safetensors path written after training; empty = none
  std::string initWeights;  // safetensors of the full weights a fresh run starts from; empty = none
  Device device;            // device: where the ranks compute (a CUDA device: the first GPU)
  // The validated document this config was read from (overrides applied): what a checkpoint
  // records and a strategy switch edits.
  nlohmann::json document;
};

// In-process ranks are threads of one process, each holding its own model: beyond this a run
// exhausts the machine before it teaches anything (docs/limits.md).
inline constexpr int kMaxThreadRanks = 256;

// Reads and validates; throws UserError naming the key. worldSize > 0: the number of ranks is
// fixed from outside (mpirun) and the parallel degrees must fill it; 0: data_parallel_size
// decides how many ranks run.
TrainConfig parseTrainConfig(const nlohmann::json& j, int worldSize = 0);

// UserError naming the key for what the planner models but this engine does not train (context
// parallelism, and the model kind's own: ModelKind::checkTrainable). Called before a run or a
// switch builds anything.
void checkTrainable(const TrainConfig& config);

// In-process ranks that may share one GPU (core/cuda/kernels.h's kMaxReduceBuffers: a
// reduction's sources are one per rank).
inline constexpr int kMaxGpuRanks = 8;

// UserError for a run on `device` that it does not train yet: on a GPU, other models, more ranks
// than share one, another communication type, ZeRO-Offload and ZeRO-Infinity (all of what is
// refused named in one line); or any GPU in a build without CUDA. Nothing for the CPU.
void checkDeviceSupport(const TrainConfig& config, Device device);

// Reads a config file under the JSON limits (core/common/bounded_json.h): a missing, oversized
// or special file, a syntax error (with line and column), a duplicate key or a document that is
// not an object is a UserError naming the file.
nlohmann::json readJsonFile(const std::string& path);

// Applies "a.b.c=value" (value parsed as JSON under the same limits, else taken as a string) to
// the document.
void applyOverride(nlohmann::json& j, const std::string& assignment);

// Sets the dotted `path` ("zero_optimization.stage") of `document` to `value`, making the objects
// on the way. UserError "<what> has an empty key" or "<what>: 'a.b' is not an object".
void setConfigValue(nlohmann::json& document, const std::string& path, nlohmann::json value,
                    const std::string& what);

// Learning rate at a 0-based step.
double learningRate(const TrainConfig& c, int step);

}  // namespace parascope
