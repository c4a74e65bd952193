// The strategy keys of a config (Megatron's degrees, DeepSpeed's zero_optimization, fp16, bf16
// and communication_data_type, the rank backend), read into a ParallelStrategy
// (core/parallel/strategy.h). Every invalid or unavailable combination is refused before any
// rank starts, naming the keys.
#pragma once

#include "core/config/json_reader.h"
#include "core/parallel/strategy.h"

namespace parascope {

// Reads the strategy keys from the top level of a config. worldSize > 0 is a world whose size
// is fixed from outside (mpirun): data_parallel_size then defaults to what fills it and must
// match it. Throws UserError naming the keys for any invalid or unavailable combination.
ParallelStrategy parseStrategy(JsonReader& top, int worldSize);

}  // namespace parascope
