// The GPT of gpt.h split Megatron-style over a tensor-parallel group of t ranks: attention heads
// divided among ranks (QKV column-parallel, attention output row-parallel), the MLP's first
// matrix column-parallel and second row-parallel, the vocabulary split for the (tied) token
// embedding and the cross-entropy. Optionally sequence-parallel: layernorms and residuals work on
// 1/t of the token rows (tensor_parallel.h). Parameter names stay the logical ones; each rank
// stores its part (Parameter::split), initialised from the single-rank model's values.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/model/gpt.h"
#include "core/parallel/tensor_parallel.h"

namespace parascope {

// Throws UserError naming the sizes when the model cannot be split `tensor` ways (heads, MLP
// width, vocabulary, and with sequence parallelism the context length).
void validateTensorParallel(const GptConfig& c, int tensor, bool sequenceParallel);

// Builds this rank's parameters and layers: of the listed layers only (a pipeline rank's part,
// as buildGpt takes them). `region` must outlive the model.
void buildGptTensorParallel(Model& model, const GptConfig& c, TensorParallelRegion& region,
                            const std::vector<int>& layers);

// Collective over the tensor group: every parameter's logical value (split ones assembled from
// every rank's part), in model order, in Workspace memory.
std::vector<std::pair<std::string, Tensor>> gatherParameterValues(const Model& model,
                                                                  Communicator& group);

}  // namespace parascope
