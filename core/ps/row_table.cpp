#include "core/ps/row_table.h"

#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/common/random.h"
#include "core/ps/row_rule.h"

namespace parascope::ps {

namespace {
std::uint64_t slotHash(std::int64_t row) {
  auto s = static_cast<std::uint64_t>(row);
  return splitMix64(s);
}
}  // namespace

RowTable::Chunk::Chunk(Allocator* allocator, std::size_t floats, MemoryCategory category)
    : allocator_(allocator),
      bytes_(floats * sizeof(float)),
      category_(category),
      data_(allocator != nullptr ? static_cast<float*>(allocator->allocate(bytes_, category))
                                 : new float[floats]) {}

RowTable::Chunk::~Chunk() {
  if (allocator_ != nullptr) {
    allocator_->deallocate(data_, bytes_, category_);
  } else {
    delete[] data_;
  }
}

RowTable::RowTable(int dim, const TableSpec& spec, std::uint64_t seed, std::uint32_t tableId,
                   RowInit init, Allocator* allocator)
    : dim_(dim),
      stride_(dim + spec.stateFloats(dim)),
      spec_(spec),
      seed_(mixSeed(seed, tableId)),
      init_(std::move(init)),
      keys_(1024, -1),
      index_(1024, 0),
      allocator_(allocator) {}

std::int64_t RowTable::bytes() const {
  return static_cast<std::int64_t>(values_.size() * kChunkRows * stride_ * sizeof(float) +
                                   keys_.size() * (sizeof(std::int64_t) + sizeof(std::uint32_t)) +
                                   rows_.capacity() * sizeof(std::int64_t));
}

std::int64_t RowTable::slotOf(std::int64_t row) const {
  const std::size_t mask = keys_.size() - 1;
  std::size_t slot = slotHash(row) & mask;
  while (keys_[slot] != row && keys_[slot] != -1) slot = (slot + 1) & mask;
  return static_cast<std::int64_t>(slot);
}

void RowTable::grow() {
  std::vector<std::int64_t> keys(keys_.size() * 2, -1);
  std::vector<std::uint32_t> index(keys.size(), 0);
  keys_.swap(keys);
  index_.swap(index);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == -1) continue;
    const auto slot = static_cast<std::size_t>(slotOf(keys[i]));
    keys_[slot] = keys[i];
    index_[slot] = index[i];
  }
}

std::size_t RowTable::at(std::int64_t row) {
  if (row < 0) throw std::logic_error("RowTable: a row id must be >= 0");
  auto slot = static_cast<std::size_t>(slotOf(row));
  if (keys_[slot] == row) return index_[slot];
  if ((rows_.size() + 1) * 2 > keys_.size()) {  // at most half full: probes stay short
    grow();
    slot = static_cast<std::size_t>(slotOf(row));
  }
  keys_[slot] = row;
  index_[slot] = static_cast<std::uint32_t>(rows_.size());
  rows_.push_back(row);
  if (rows_.size() > values_.size() * kChunkRows) {
    values_.push_back(
        std::make_unique<Chunk>(allocator_, kChunkRows * dim_, MemoryCategory::Parameter));
    if (stateFloats() > 0) {
      states_.push_back(std::make_unique<Chunk>(allocator_, kChunkRows * stateFloats(),
                                                MemoryCategory::OptimizerState));
    }
  }
  const std::size_t i = rows_.size() - 1;
  initialValues(row, values(i));
  if (stateFloats() > 0) initRuleState(spec_, dim_, state(i));
  return i;
}

void RowTable::initialValues(std::int64_t row, float* out) const {
  if (init_) {
    init_(row, out);
    return;
  }
  Rng rng(mixSeed(seed_, static_cast<std::uint64_t>(row)));
  for (int i = 0; i < dim_; ++i) {
    out[i] = spec_.initialRange == 0
                 ? 0.0f
                 : static_cast<float>((2 * rng.uniform() - 1) * spec_.initialRange);
  }
}

void RowTable::peek(std::span<const std::int64_t> rows, float* out) const {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    prefetch(rows, i);
    if (const float* r = find(rows[i])) {
      std::memcpy(out + i * dim_, r, sizeof(float) * dim_);
    } else {
      initialValues(rows[i], out + i * dim_);
    }
  }
}

// A request's rows are scattered over a table far larger than the caches: each row costs a miss
// on its index slot and one on its data. The row kAhead places on is looked for (its slot's line
// fetched) and the one kAhead / 2 on is found and its data fetched, so the misses overlap.
void RowTable::prefetch(std::span<const std::int64_t> rows, std::size_t i) const {
  constexpr std::size_t kAhead = 16;
  if (i + kAhead < rows.size()) {
    const std::size_t slot = slotHash(rows[i + kAhead]) & (keys_.size() - 1);
    __builtin_prefetch(&keys_[slot]);
    __builtin_prefetch(&index_[slot]);
  }
  if (i + kAhead / 2 < rows.size()) {
    const std::int64_t row = rows[i + kAhead / 2];
    const auto slot = static_cast<std::size_t>(slotOf(row));
    if (keys_[slot] == row) {
      const float* v = values(index_[slot]);
      for (int f = 0; f < dim_; f += 16) __builtin_prefetch(v + f, 1);
      if (const float* st = state(index_[slot])) {
        for (int f = 0; f < stateFloats(); f += 16) __builtin_prefetch(st + f, 1);
      }
    }
  }
}

void RowTable::pull(std::span<const std::int64_t> rows, float* out) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    prefetch(rows, i);
    std::memcpy(out + i * dim_, values(at(rows[i])), sizeof(float) * dim_);
  }
}

void RowTable::apply(std::span<const std::int64_t> rows, const float* grads) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    prefetch(rows, i);
    const std::size_t r = at(rows[i]);
    applyRule(spec_, dim_, values(r), state(r), grads + i * dim_);
  }
}

void RowTable::add(std::span<const std::int64_t> rows, const float* deltas, float scale) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    float* r = values(at(rows[i]));
    const float* d = deltas + i * dim_;
    for (int j = 0; j < dim_; ++j) r[j] += scale * d[j];
  }
}

void RowTable::set(std::int64_t row, const float* from) {
  std::memcpy(values(at(row)), from, sizeof(float) * dim_);
}

void RowTable::setRaw(std::int64_t row, const float* data) {
  const std::size_t r = at(row);
  std::memcpy(values(r), data, sizeof(float) * dim_);
  if (stateFloats() > 0) std::memcpy(state(r), data + dim_, sizeof(float) * stateFloats());
}

const float* RowTable::find(std::int64_t row) const {
  const auto slot = static_cast<std::size_t>(slotOf(row));
  return keys_[slot] == row ? values(index_[slot]) : nullptr;
}

void RowTable::forEach(const std::function<void(std::int64_t, const float*)>& fn) const {
  std::vector<float> data(static_cast<std::size_t>(stride_));
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    std::memcpy(data.data(), values(i), sizeof(float) * dim_);
    if (stateFloats() > 0) {
      std::memcpy(data.data() + dim_, state(i), sizeof(float) * stateFloats());
    }
    fn(rows_[i], data.data());
  }
}

}  // namespace parascope::ps
