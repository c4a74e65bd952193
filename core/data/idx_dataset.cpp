#include "core/data/idx_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>

#include "core/common/error.h"
#include "core/common/random.h"

namespace parascope {

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

// Reads exactly n bytes or throws naming the file and what went wrong.
void readExactly(gzFile f, const std::string& path, void* out, std::size_t n, const char* what) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int got = gzread(f, p, chunk);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      throw UserError(path + ": gzip error while reading the " + what + ": " + msg);
    }
    if (got == 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      throw UserError(
          path + ": truncated: the file ends inside the " + what +
          (code != Z_OK && msg != nullptr && *msg ? std::string(" (") + msg + ")" : std::string()));
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
}

}  // namespace

IdxArray readIdx(const std::string& path, int expectedRank) {
  if (!std::filesystem::is_regular_file(path)) {
    throw UserError(path +
                    ": IDX file not found (install the dataset-fashion-mnist package or "
                    "point data.path at a directory holding the four *-ubyte.gz files)");
  }
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (!f) throw UserError(path + ": cannot open");
  unsigned char magic[4];
  readExactly(f.get(), path, magic, 4, "magic number");
  const int rank = magic[3];
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || rank != expectedRank) {
    char got[16];
    std::snprintf(got, sizeof got, "%02x%02x%02x%02x", magic[0], magic[1], magic[2], magic[3]);
    char want[16];
    std::snprintf(want, sizeof want, "000008%02x", expectedRank);
    throw UserError(path + ": wrong IDX magic number 0x" + got + "; expected 0x" + want +
                    " (unsigned bytes, " + std::to_string(expectedRank) + " dimensions)");
  }
  IdxArray a;
  std::size_t total = 1;
  for (int i = 0; i < rank; ++i) {
    unsigned char d[4];
    readExactly(f.get(), path, d, 4, "header");
    const std::uint32_t dim = (std::uint32_t{d[0]} << 24) | (std::uint32_t{d[1]} << 16) |
                              (std::uint32_t{d[2]} << 8) | d[3];
    if (dim == 0 || dim > (1u << 26)) {
      throw UserError(path + ": dimension " + std::to_string(i) + " is " + std::to_string(dim) +
                      "; expected 1.." + std::to_string(1u << 26));
    }
    a.dims.push_back(dim);
    total *= dim;
    if (total > (std::size_t{1} << 33)) throw UserError(path + ": data larger than 8 GiB");
  }
  // The header's claim is not trusted with an allocation: the buffer grows only as the file
  // delivers bytes, so a short file claiming gigabytes fails as truncated after using its size.
  constexpr std::size_t kBlock = std::size_t{16} << 20;
  while (a.data.size() < total) {
    const std::size_t have = a.data.size(), take = std::min(kBlock, total - have);
    a.data.resize(have + take);
    readExactly(f.get(), path, a.data.data() + have, take, "data");
  }
  return a;
}

IdxDataset::Part IdxDataset::load(const std::string& images, const std::string& labels) {
  IdxArray img = readIdx(images, 3);
  IdxArray lab = readIdx(labels, 1);
  if (img.dims[0] != lab.dims[0]) {
    throw UserError(images + " holds " + std::to_string(img.dims[0]) + " images but " + labels +
                    " holds " + std::to_string(lab.dims[0]) + " labels");
  }
  Part p;
  p.count = img.dims[0];
  p.pixels = std::move(img.data);
  p.labels = std::move(lab.data);
  return p;
}

IdxDataset::IdxDataset(const std::string& directory, std::uint64_t seed)
    : directory_(directory), seed_(seed) {
  const std::string d = directory + "/";
  train_ = load(d + "train-images-idx3-ubyte.gz", d + "train-labels-idx1-ubyte.gz");
  test_ = load(d + "t10k-images-idx3-ubyte.gz", d + "t10k-labels-idx1-ubyte.gz");
  features_ = static_cast<int>(train_.pixels.size() / static_cast<std::size_t>(train_.count));
  if (test_.pixels.size() / static_cast<std::size_t>(test_.count) !=
      static_cast<std::size_t>(features_)) {
    throw UserError(directory + ": training and test images differ in size");
  }
  classes_ = 1 + std::max(*std::max_element(train_.labels.begin(), train_.labels.end()),
                          *std::max_element(test_.labels.begin(), test_.labels.end()));
  double sum = 0, sq = 0;
  for (std::uint8_t v : train_.pixels) {
    const double x = v / 255.0;
    sum += x;
    sq += x * x;
  }
  const auto n = static_cast<double>(train_.pixels.size());
  mean_ = static_cast<float>(sum / n);
  invStd_ = static_cast<float>(1.0 / std::sqrt(std::max(1e-12, sq / n - (sum / n) * (sum / n))));
}

std::int64_t IdxDataset::trainIndex(std::int64_t sample) const {
  const std::int64_t epoch = sample / train_.count;
  if (epoch != epoch_) {  // a fresh permutation per epoch: Fisher-Yates from (seed, epoch)
    order_.resize(static_cast<std::size_t>(train_.count));
    std::iota(order_.begin(), order_.end(), 0);
    Rng rng(mixSeed(seed_, static_cast<std::uint64_t>(epoch)));
    for (std::size_t i = order_.size() - 1; i > 0; --i) {
      std::swap(order_[i], order_[rng.below(i + 1)]);
    }
    epoch_ = epoch;
  }
  return order_[static_cast<std::size_t>(sample % train_.count)];
}

Batch IdxDataset::batch(Split split, std::int64_t firstSample, int rows,
                        Allocator& allocator) const {
  const Part& part = split == Split::Train ? train_ : test_;
  Batch b;
  b.inputs = Tensor::empty({rows, features_}, DType::F32, MemoryCategory::Workspace, allocator);
  b.targets = Tensor::empty({rows}, DType::I32, MemoryCategory::Workspace, allocator);
  float* x = b.inputs.data<float>();
  auto* y = b.targets.data<std::int32_t>();
  std::unique_lock<std::mutex> lock(epochMutex_, std::defer_lock);
  if (split == Split::Train) lock.lock();
  for (int r = 0; r < rows; ++r) {
    const std::int64_t s = firstSample + r;
    const std::int64_t i = split == Split::Train ? trainIndex(s) : s % part.count;
    const std::uint8_t* px = part.pixels.data() + i * features_;
    for (int k = 0; k < features_; ++k) x[r * features_ + k] = (px[k] / 255.0f - mean_) * invStd_;
    y[r] = part.labels[static_cast<std::size_t>(i)];
  }
  return b;
}

std::int64_t IdxDataset::samples(Split split) const {
  return split == Split::Train ? train_.count : test_.count;
}

std::string IdxDataset::describe() const {
  return "images " + directory_ + " (" + std::to_string(train_.count) + " train / " +
         std::to_string(test_.count) + " test, " + std::to_string(features_) + " features, " +
         std::to_string(classes_) + " classes)";
}

}  // namespace parascope
