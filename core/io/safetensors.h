// Safetensors files (the Hugging Face format): an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the
// raw little-endian tensor bytes. Reading parses the header under the JSON limits
// (core/common/bounded_json.h) and validates every offset and size against the file (tensors
// disjoint, shapes within 2^40 elements) before allocating; writing goes through OutputFile
// (core/common/output_file.h): checked path, temporary file, fsync, rename.
#pragma once

#include <cstddef>
#include <cstdint>
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

// A safetensors file's validated header, for reading parts of tensors without loading the file.
// Throws UserError naming the file and what is wrong (missing, truncated, bad header, ...).
class SafetensorsReader {
 public:
  struct Entry {
    DType dtype = DType::F32;
    Shape shape;
    std::uint64_t offset = 0;  // of the first element, from the start of the file
  };
  explicit SafetensorsReader(std::string path);
  const std::string& path() const { return path_; }
  const std::map<std::string, Entry>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Reads `bytes` raw bytes from `offset` of the file.
  void readBytes(std::uint64_t offset, void* out, std::size_t bytes, const std::string& what) const;
  // Elements [begin, begin + count) of floating tensor `name` in row-major order, as f32 (bf16 /
  // f16 widened exactly).
  void readF32(const std::string& name, std::int64_t begin, std::int64_t count, float* out) const;

 private:
  std::string path_;
  std::map<std::string, Entry> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Throws UserError naming the file and what is wrong (missing, truncated, bad header, ...).
SafetensorsFile readSafetensors(const std::string& path,
                                MemoryCategory category = MemoryCategory::Workspace,
                                Allocator& allocator = defaultAllocator());

void writeSafetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// One tensor for writeSafetensorsEntries: raw little-endian elements, not owned.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  const void* data = nullptr;  // numel(shape) * dtypeSize(dtype) bytes
};

// Where writeSafetensorsEntries put things: the whole file's CRC-32 (zlib's) and size, and each
// entry's absolute byte offset in the file (header included) and its data's CRC-32, in the order
// given.
struct SafetensorsWritten {
  std::uint32_t crc32 = 0;
  std::uint64_t bytes = 0;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> entryCrc32;
};

// As writeSafetensors, from borrowed memory, the data in the order given; for checkpoint shards,
// whose readers need each tensor's place and the file's checksum. Names must be distinct.
SafetensorsWritten writeSafetensorsEntries(const std::string& path,
                                           const std::vector<SafetensorsEntry>& entries,
                                           const std::map<std::string, std::string>& metadata = {});

// Copies every parameter's value from the file (f32, or bf16/f16 widened). The file must hold
// exactly the model's parameters with their full shapes; otherwise UserError naming the first
// missing, unexpected or mis-shaped tensor.
void loadWeights(Model& model, const std::string& path);
void saveWeights(const Model& model, const std::string& path);

}  // namespace parascope
