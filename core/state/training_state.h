// The training state by logical tensor, whatever the layout. Every rank describes what it holds
// as slices: contiguous runs of one logical tensor's elements (row-major order of its full shape,
// docs/weights.md) for one field — the f32 parameter (the master copy under mixed precision) or
// AdamW's first or second moment — with a pointer to its memory. Resharding (a live strategy
// switch) and checkpoints (save under one layout, load under another) both move slices between
// two such descriptions (reshard.h); neither ever assembles a whole tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace parascope {

// PyTorch's names for AdamW's state, so a checkpoint reads like an optimizer state_dict.
enum class StateField : std::uint8_t { Param, ExpAvg, ExpAvgSq };
inline constexpr int kStateFieldCount = 3;
const char* stateFieldName(StateField f);  // "param", "exp_avg", "exp_avg_sq"

struct StateSlice {
  std::string tensor;  // logical tensor name
  StateField field = StateField::Param;
  std::int64_t begin = 0;  // first element, in the logical tensor's row-major order
  std::int64_t count = 0;
  // This rank's memory for the run. F32 everywhere, except mixed precision's stored bf16 / fp16
  // parameters, which are only ever written (rounded to nearest even from the f32 master).
  void* data = nullptr;
  DType dtype = DType::F32;
  // This rank is the one its elements are saved from and copied from (an F32 slice): of all
  // ranks' slices of a (tensor, field), the owned ones cover every element exactly once. Replicas
  // (data-parallel copies without ZeRO, tensor-parallel copies of whole tensors, a pipeline's
  // second copy of a tied embedding) and 16-bit stored parameters are not owned.
  bool owned = false;
};

struct LogicalTensor {
  std::string name;
  Shape shape;  // full logical shape
};

// Everything besides the tensors that a run needs to continue. The data position is the next
// global sample (each step takes global_batch of them, in the dataset's seeded order); the seed
// fixes every random stream, so it is the config's.
struct TrainingCounters {
  int step = 0;     // optimizer steps done, skipped ones included
  int skipped = 0;  // fp16 steps skipped on overflow (the lr schedule does not count them)
  std::int64_t nextSample = 0;
  double lossScale = 1;  // fp16's loss scaler
  // Whether the scaler fields are a dynamic scaler's (fp16 without a static loss_scale). A run
  // that scales dynamically carries them on; any other start keeps its own config's scale
  // (2^initial_scale_power, or the static loss_scale).
  bool dynamicScale = false;
  int hysteresis = 1;
  long scalerIteration = 0;
  long lastOverflow = -1;
};

// One rank's part of the state: the model's logical tensors (the same list on every rank of a
// run), the slices it holds (replicas included: a data-parallel replica holds the same elements as
// its peers) and the counters (equal on every rank).
struct RankState {
  std::vector<LogicalTensor> tensors;
  std::vector<StateSlice> slices;
  TrainingCounters counters;
};

// The model's logical tensors in model order (names and shapes of docs/weights.md), whatever
// part of them a rank holds. An MLP's input size is the dataset's (the trainer's config has it).
std::vector<LogicalTensor> logicalTensors(const TrainConfig& config);

}  // namespace parascope
