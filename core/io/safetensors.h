// Safetensors files (the Hugging Face format): an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the
// raw little-endian tensor bytes. Reading parses the header under the JSON limits
// (core/common/bounded_json.h) and validates every offset and size against the file (tensors
// disjoint, shapes within 2^40 elements) before allocating; writing goes through OutputFile
// (core/common/output_file.h): checked path, temporary file, fsync, rename.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model.h"
#include "core/tensor/tensor.h"

namespace parascope {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Throws UserError naming the file and what is wrong (missing, truncated, bad header, ...).
SafetensorsFile readSafetensors(const std::string& path,
                                MemoryCategory category = MemoryCategory::Workspace,
                                Allocator& allocator = defaultAllocator());

void writeSafetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Copies every parameter's value from the file (f32, or bf16/f16 widened). The file must hold
// exactly the model's parameters with their full shapes; otherwise UserError naming the first
// missing, unexpected or mis-shaped tensor.
void loadWeights(Model& model, const std::string& path);
void saveWeights(const Model& model, const std::string& path);

}  // namespace parascope
