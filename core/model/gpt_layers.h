// The GPT's layers (gpt.h), split Megatron-style over a tensor-parallel group of t ranks:
// attention heads divided among ranks (QKV column-parallel, attention output row-parallel), the
// MLP's first matrix column-parallel and second row-parallel, the vocabulary split for the (tied)
// token embedding and the cross-entropy. Optionally sequence-parallel: layernorms and residuals
// work on 1/t of the token rows (tensor_parallel.h). Parameter names stay the logical ones; each
// rank stores its part (Parameter::split), initialised from the unsplit model's values. With
// t = 1 (buildGpt's size-1 group) these layers are the single-rank GPT: there they call the fused
// kernels (embedding, softmax + cross-entropy, GEMM with bias) instead of the split paths.
#pragma once

#include <memory>
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
// as buildGpt takes them). The layers share `region`, so it lives as long as the model does.
void buildGptTensorParallel(Model& model, const GptConfig& c,
                            const std::shared_ptr<TensorParallelRegion>& region,
                            const std::vector<int>& layers);

// Collective over the tensor group: every parameter's logical value (split ones assembled from
// every rank's part), in model order, in Workspace memory.
std::vector<std::pair<std::string, Tensor>> gatherParameterValues(const Model& model,
                                                                  Communicator& group);

}  // namespace parascope
