#include "core/data/text_dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/common/error.h"
#include "core/common/random.h"

namespace parascope {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kBlock = 16 * 1024;
// The corpus is held in memory per rank (docs/limits.md).
constexpr std::uintmax_t kMaxTextBytes = std::uintmax_t{4} << 30;

std::vector<fs::path> textFiles(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw UserError("data.path: '" + path + "' does not exist");
  if (fs::is_regular_file(st)) return {fs::path(path)};
  if (!fs::is_directory(st)) {
    throw UserError("data.path: '" + path + "' is neither a regular file nor a directory");
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(
           path, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::end(it); it.increment(ec)) {
    std::error_code entryEc;  // an unreadable entry (e.g. under /proc) is skipped, not fatal
    if (it->is_symlink(entryEc) || !it->is_regular_file(entryEc) || entryEc) continue;
    const fs::path& p = it->path();
    if (p.extension() == ".dat" || p.filename().string().starts_with(".")) continue;
    files.push_back(p);
  }
  if (ec) throw UserError("data.path: cannot read directory '" + path + "': " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::vector<std::uint8_t> readTextCorpus(const std::string& path, int* files) {
  *files = 0;
  std::vector<std::uint8_t> text;
  for (const fs::path& f : textFiles(path)) {
    // At most the size the file system states: files under /proc state 0 and never end.
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(f, ec);
    if (ec) continue;
    if (text.size() + size > kMaxTextBytes) {
      throw UserError("data.path: '" + path + "' holds more than " +
                      std::to_string(kMaxTextBytes >> 30) +
                      " GiB of text, the limit for a text corpus");
    }
    std::ifstream in(f, std::ios::binary);
    if (!in) throw UserError("data.path: cannot read '" + f.string() + "'");
    const std::size_t at = text.size();
    text.resize(at + size);
    in.read(reinterpret_cast<char*>(text.data() + at), static_cast<std::streamsize>(size));
    text.resize(at + static_cast<std::size_t>(in.gcount()));
    ++*files;
  }
  return text;
}

TextDataset::TextDataset(const std::string& path, int sequenceLength, double validationFraction,
                         std::uint64_t seed)
    : path_(path), sequenceLength_(sequenceLength), seed_(seed) {
  std::vector<std::uint8_t> text = readTextCorpus(path, &files_);
  const auto window = static_cast<std::size_t>(sequenceLength) + 1;
  if (text.empty()) {
    throw UserError("data.path: '" + path + "' holds no text (0 bytes in " +
                    std::to_string(files_) + " files); need at least " +
                    std::to_string(2 * window) + " bytes");
  }
  const auto every = static_cast<std::size_t>(
      validationFraction > 0 ? std::max(2.0, std::round(1.0 / validationFraction)) : 0);
  for (std::size_t b = 0; b * kBlock < text.size(); ++b) {
    auto first = text.begin() + static_cast<std::ptrdiff_t>(b * kBlock);
    auto last = text.begin() + static_cast<std::ptrdiff_t>(std::min(text.size(), (b + 1) * kBlock));
    auto& dst = every != 0 && b % every == every - 1 ? validation_ : train_;
    dst.insert(dst.end(), first, last);
  }
  // A corpus smaller than k blocks still gets a validation split: its last tenth or so.
  if (every != 0 && validation_.empty()) {
    const std::size_t n = std::max(window, train_.size() / every);
    if (train_.size() >= n + window) {
      validation_.assign(train_.end() - static_cast<std::ptrdiff_t>(n), train_.end());
      train_.resize(train_.size() - n);
    }
  }
  const std::string need =
      "; need at least " + std::to_string(window) + " bytes (model.context_length + 1) per split";
  if (train_.size() < window) {
    throw UserError("data.path: '" + path + "' is too short for training (" +
                    std::to_string(train_.size()) + " bytes)" + need);
  }
  if (every != 0 && validation_.size() < window) {
    throw UserError("data.path: '" + path + "' is too short for a validation split (" +
                    std::to_string(validation_.size()) + " bytes)" + need);
  }
  maxByte_ = *std::max_element(text.begin(), text.end());
}

Batch TextDataset::batch(Split split, std::int64_t firstSample, int rows,
                         Allocator& allocator) const {
  const auto& bytes = split == Split::Train ? train_ : validation_;
  if (bytes.empty()) throw UserError("data: no validation split (data.validation_fraction is 0)");
  const int T = sequenceLength_;
  Batch b;
  b.inputs = Tensor::empty({rows, T}, DType::I32, MemoryCategory::Workspace, allocator);
  b.targets = Tensor::empty({rows, T}, DType::I32, MemoryCategory::Workspace, allocator);
  auto* in = b.inputs.data<std::int32_t>();
  auto* tg = b.targets.data<std::int32_t>();
  const std::uint64_t positions = bytes.size() - static_cast<std::size_t>(T);
  const std::uint64_t stream = mixSeed(seed_, split == Split::Train ? 1 : 2);
  for (int r = 0; r < rows; ++r) {
    Rng rng(mixSeed(stream, static_cast<std::uint64_t>(firstSample + r)));
    const std::size_t at = rng.below(positions);
    for (int t = 0; t < T; ++t) {
      in[r * T + t] = bytes[at + t];
      tg[r * T + t] = bytes[at + t + 1];
    }
  }
  return b;
}

std::int64_t TextDataset::samples(Split split) const {
  const auto& bytes = split == Split::Train ? train_ : validation_;
  return bytes.size() <= static_cast<std::size_t>(sequenceLength_)
             ? 0
             : static_cast<std::int64_t>(bytes.size()) - sequenceLength_;
}

std::int64_t TextDataset::bytes(Split split) const {
  return static_cast<std::int64_t>(split == Split::Train ? train_.size() : validation_.size());
}

std::string TextDataset::describe() const {
  return "text " + path_ + " (" + std::to_string(files_) + " files, " +
         std::to_string(train_.size()) + " train / " + std::to_string(validation_.size()) +
         " validation bytes)";
}

}  // namespace parascope
