#include "core/io/safetensors.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/common/bounded_json.h"
#include "core/common/crc32.h"
#include "core/common/error.h"
#include "core/common/output_file.h"

namespace parascope {

namespace {

std::string fileTypeName(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
  }
  return "?";
}

DType parseFileType(const std::string& path, const std::string& name, const std::string& t) {
  if (t == "F32") return DType::F32;
  if (t == "BF16") return DType::BF16;
  if (t == "F16") return DType::F16;
  if (t == "I32") return DType::I32;
  if (t == "I64") return DType::I64;
  throw UserError(path + ": tensor '" + name + "' has dtype " + t +
                  "; supported: F32, BF16, F16, I32, I64");
}

}  // namespace

namespace {

struct HeaderEntry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin, end;
};

// One tensor's header entry, checked against the data section; nothing is allocated here.
HeaderEntry parseEntry(const std::string& path, const std::string& name, const nlohmann::json& e,
                       std::uint64_t dataSize) {
  if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() || !e.contains("shape") ||
      !e["shape"].is_array() || !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
      e["data_offsets"].size() != 2) {
    throw UserError(path + ": tensor '" + name +
                    "' needs dtype (string), shape (array) and data_offsets ([begin, end])");
  }
  HeaderEntry out{name, parseFileType(path, name, e["dtype"].get<std::string>()), {}, 0, 0};
  // Every dimension and every partial product stays within 2^40, checked before multiplying,
  // so the product never wraps.
  std::uint64_t numel = 1;
  for (const auto& d : e["shape"]) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (1ull << 40)) {
      throw UserError(path + ": tensor '" + name + "' has an invalid shape " +
                      describeJson(e["shape"]));
    }
    out.shape.push_back(d.get<std::int64_t>());
    const std::uint64_t dim = d.get<std::uint64_t>();
    if (dim != 0 && numel > (1ull << 40) / dim) {
      throw UserError(path + ": tensor '" + name + "' is too large");
    }
    numel *= dim;
  }
  const auto& off = e["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
    throw UserError(path + ": tensor '" + name + "' has non-integer data_offsets");
  }
  out.begin = off[0].get<std::uint64_t>();
  out.end = off[1].get<std::uint64_t>();
  if (out.begin > out.end || out.end > dataSize ||
      out.end - out.begin != numel * dtypeSize(out.dtype)) {
    throw UserError(path + ": tensor '" + name + "' data_offsets [" + std::to_string(out.begin) +
                    ", " + std::to_string(out.end) + ") do not match its " + std::to_string(numel) +
                    " " + fileTypeName(out.dtype) + " elements within the file's " +
                    std::to_string(dataSize) + " data bytes (truncated file?)");
  }
  return out;
}

// Tensors may not share bytes: overlapping ranges would let a small file claim many times its
// size in memory.
void checkDisjoint(const std::string& path, std::vector<HeaderEntry>& entries) {
  std::sort(entries.begin(), entries.end(),
            [](const HeaderEntry& a, const HeaderEntry& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    const HeaderEntry& prev = entries[i - 1];
    if (entries[i].begin < prev.end) {
      throw UserError(path + ": tensors '" + prev.name + "' and '" + entries[i].name +
                      "' overlap in the data section (data_offsets [" + std::to_string(prev.begin) +
                      ", " + std::to_string(prev.end) + ") and [" +
                      std::to_string(entries[i].begin) + ", " + std::to_string(entries[i].end) +
                      "))");
    }
  }
}

}  // namespace

SafetensorsReader::SafetensorsReader(std::string path) : path_(std::move(path)) {
  const std::string& p = path_;
  // Judged before it is opened: opening a FIFO would wait for a writer forever.
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    throw UserError(p + ": cannot open safetensors file (" + std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    throw UserError(p + ": " +
                    (S_ISDIR(st.st_mode) ? "is a directory" : "is a device, FIFO or socket") +
                    ", not a safetensors file");
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) throw UserError(p + ": cannot open safetensors file (" + std::strerror(errno) + ")");
  in.seekg(0, std::ios::end);
  const auto fileSize = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char lenBytes[8];
  if (fileSize < 8 || !in.read(reinterpret_cast<char*>(lenBytes), 8)) {
    throw UserError(p + ": not a safetensors file (shorter than its 8-byte header length)");
  }
  std::uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i) headerLen = (headerLen << 8) | lenBytes[i];
  if (headerLen > kSafetensorsJsonLimits.maxBytes || headerLen > fileSize - 8) {
    throw UserError(p + ": header length " + std::to_string(headerLen) +
                    " exceeds the file size (" + std::to_string(fileSize) +
                    " bytes) or the 100 MiB limit; the file is truncated or not safetensors");
  }
  std::string header(headerLen, '\0');
  in.read(header.data(), static_cast<std::streamsize>(headerLen));
  // Malformed is "not a JSON object" as before; nesting, duplicate names and numbers beyond a
  // double are refused by name.
  const std::optional<nlohmann::json> j =
      parseBoundedJsonIfJson(header, p + ": header", kSafetensorsJsonLimits);
  if (!j || !j->is_object()) throw UserError(p + ": header is not a JSON object");
  const std::uint64_t dataSize = fileSize - 8 - headerLen;
  std::vector<HeaderEntry> entries;
  for (auto it = j->begin(); it != j->end(); ++it) {
    const std::string name = clipForMessage(it.key(), 200);
    const nlohmann::json& e = it.value();
    if (it.key() == "__metadata__") {
      if (!e.is_object()) throw UserError(p + ": __metadata__ must be an object");
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m.value().is_string()) {
          throw UserError(p + ": __metadata__." + clipForMessage(m.key()) + " must be a string");
        }
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    entries.push_back(parseEntry(p, name, e, dataSize));
    entries.back().name = it.key();
  }
  checkDisjoint(p, entries);
  for (const HeaderEntry& e : entries) {
    tensors_[e.name] = {e.dtype, e.shape, 8 + headerLen + e.begin};
  }
}

void SafetensorsReader::readBytes(std::uint64_t offset, void* out, std::size_t bytes,
                                  const std::string& what) const {
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in || !in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes))) {
    throw UserError(path_ + ": could not read " + what);
  }
}

void SafetensorsReader::readF32(const std::string& name, std::int64_t begin, std::int64_t count,
                                float* out) const {
  const auto found = tensors_.find(name);
  if (found == tensors_.end()) throw UserError(path_ + ": no tensor '" + name + "'");
  const Entry& e = found->second;
  if (!isFloating(e.dtype)) {
    throw UserError(path_ + ": tensor '" + name + "' is " + std::string(dtypeName(e.dtype)) +
                    ", expected a floating type");
  }
  if (begin < 0 || count < 0 || begin + count > shapeNumel(e.shape)) {
    throw std::logic_error("safetensors: elements outside tensor " + name);
  }
  const std::size_t width = dtypeSize(e.dtype);
  const std::uint64_t at = e.offset + static_cast<std::uint64_t>(begin) * width;
  const std::string what = "tensor '" + clipForMessage(name, 200) + "'";
  if (e.dtype == DType::F32) {
    readBytes(at, out, static_cast<std::size_t>(count) * width, what);
    return;
  }
  std::vector<std::uint16_t> raw(static_cast<std::size_t>(count));
  readBytes(at, raw.data(), raw.size() * width, what);
  convertToFloat(raw.data(), {out, raw.size()}, e.dtype);
}

SafetensorsFile readSafetensors(const std::string& path, MemoryCategory category,
                                Allocator& allocator) {
  const SafetensorsReader reader(path);
  SafetensorsFile file;
  file.metadata = reader.metadata();
  for (const auto& [name, e] : reader.tensors()) {
    Tensor t = Tensor::empty(e.shape, e.dtype, category, allocator);
    reader.readBytes(e.offset, t.raw(), static_cast<std::size_t>(t.numel()) * dtypeSize(e.dtype),
                     "tensor '" + clipForMessage(name, 200) + "'");
    file.tensors.emplace(name, std::move(t));
  }
  return file;
}

SafetensorsWritten writeSafetensorsEntries(const std::string& path,
                                           const std::vector<SafetensorsEntry>& entries,
                                           const std::map<std::string, std::string>& metadata) {
  OutputFile out(path, "safetensors file");
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::uint64_t> sizes;
  std::uint64_t offset = 0;
  for (const SafetensorsEntry& e : entries) {
    std::uint64_t numel = 1;
    for (std::int64_t d : e.shape) numel *= static_cast<std::uint64_t>(d);
    sizes.push_back(numel * dtypeSize(e.dtype));
    if (header.contains(e.name)) {
      throw std::invalid_argument(path + ": tensor '" + e.name + "' given twice");
    }
    header[e.name] = {{"dtype", fileTypeName(e.dtype)},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + sizes.back()}}};
    offset += sizes.back();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  const std::uint64_t len = text.size();
  unsigned char lenBytes[8];
  for (int i = 0; i < 8; ++i) lenBytes[i] = static_cast<unsigned char>(len >> (8 * i));
  SafetensorsWritten written;
  const auto append = [&](const void* data, std::size_t bytes, std::uint32_t crc) {
    out.write(data, bytes);
    written.bytes += bytes;
    return crc32Update(crc, data, bytes);
  };
  written.crc32 = append(text.data(), text.size(), append(lenBytes, 8, 0));
  // Large tensors in blocks, so a stop signal is honoured within one block. Each entry's CRC is
  // its own (a checkpoint's reader checks a slice as it reads it); the file's joins them.
  constexpr std::size_t kBlock = std::size_t{8} << 20;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    written.offsets.push_back(written.bytes);
    const auto* bytes = static_cast<const char*>(entries[i].data);
    std::uint32_t crc = 0;
    for (std::size_t at = 0; at < sizes[i]; at += kBlock) {
      crc = append(bytes + at, std::min<std::size_t>(kBlock, sizes[i] - at), crc);
    }
    written.entryCrc32.push_back(crc);
    written.crc32 = crc32Combine(written.crc32, crc, static_cast<std::int64_t>(sizes[i]));
  }
  out.commit();
  return written;
}

void writeSafetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsEntry> entries;
  entries.reserve(tensors.size());
  for (const auto& [name, t] : tensors) entries.push_back({name, t.dtype(), t.shape(), t.raw()});
  writeSafetensorsEntries(path, entries, metadata);
}

void loadWeights(Model& model, const std::string& path) {
  SafetensorsFile file = readSafetensors(path);
  for (Parameter& p : model.parameters()) {
    auto it = file.tensors.find(p.name);
    if (it == file.tensors.end()) {
      throw UserError(path + ": missing tensor '" + p.name + "' of shape " + shapeString(p.shape));
    }
    const Tensor& t = it->second;
    if (t.shape() != p.shape || !isFloating(t.dtype())) {
      throw UserError(path + ": tensor '" + p.name + "' is " + std::string(dtypeName(t.dtype())) +
                      " " + shapeString(t.shape()) + ", expected a floating type of shape " +
                      shapeString(p.shape));
    }
    if (t.dtype() == DType::F32) {
      p.value.copyFrom(t);
    } else {
      // Widened on the host, then copied to where the parameter is (a GPU's memory, maybe).
      Tensor wide = Tensor::empty(p.shape, DType::F32, MemoryCategory::Workspace);
      convertToFloat(t.data<std::uint16_t>(),
                     {wide.data<float>(), static_cast<std::size_t>(t.numel())}, t.dtype());
      p.value.copyFrom(wide);
    }
    file.tensors.erase(it);
  }
  if (!file.tensors.empty()) {
    throw UserError(path + ": unexpected tensor '" + file.tensors.begin()->first +
                    "' (not a parameter of this model; see docs/weights.md for the names)");
  }
}

void saveWeights(const Model& model, const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const Parameter& p : model.parameters()) tensors.emplace_back(p.name, p.value.onHost());
  writeSafetensors(path, tensors, {{"format", "pt"}});
}

}  // namespace parascope
