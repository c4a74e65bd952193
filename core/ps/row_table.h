// A shard of a sparse table: rows created when first touched (as Paddle's memory sparse table),
// each with its values and its update rule's state, found through an open-addressing index. A new
// row's values come from (seed, table, row) alone, so a table split over any number of servers
// holds the same values as one. Not thread-safe: one server (or worker) thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/config/ps_config.h"
#include "core/tensor/allocator.h"

namespace parascope::ps {

// A row's initial values (dim floats), written to `out`.
using RowInit = std::function<void(std::int64_t row, float* out)>;

class RowTable {
 public:
  // A new row's values come from `init`, or when it is empty uniformly from (seed, tableId, row)
  // in [-initial_range, initial_range].
  // `allocator`, where given, holds the rows (values as Parameter memory, the rule's state as
  // OptimizerState), so that the rank's memory counters show them; it outlives the table.
  RowTable(int dim, const TableSpec& spec, std::uint64_t seed, std::uint32_t tableId,
           RowInit init = {}, Allocator* allocator = nullptr);

  int dim() const { return dim_; }
  // Floats a row keeps: its values, then its rule's state.
  int stride() const { return stride_; }
  std::int64_t size() const { return static_cast<std::int64_t>(rows_.size()); }
  // Bytes held: values, state and the index.
  std::int64_t bytes() const;

  // Copies each row's values to out (rows.size() x dim), creating the rows not yet held.
  void pull(std::span<const std::int64_t> rows, float* out);
  // As pull, but a row not held is not created: its initial values are copied out instead.
  void peek(std::span<const std::int64_t> rows, float* out) const;
  // Applies the table's rule to each row with its gradient (rows.size() x dim).
  void apply(std::span<const std::int64_t> rows, const float* grads);
  // Adds scale * delta to each row's values (geo mode's merged changes).
  void add(std::span<const std::int64_t> rows, const float* deltas, float scale);
  // Overwrites a row's values, creating it with a fresh state if absent.
  void set(std::int64_t row, const float* from);

  // A held row's values; null if the row was never touched.
  const float* find(std::int64_t row) const;
  // Every held row, in the order they were created, with its values then its state (stride
  // floats, gathered into one run).
  void forEach(const std::function<void(std::int64_t row, const float* data)>& fn) const;
  // Sets a row's values and state (stride floats), as forEach gave them.
  void setRaw(std::int64_t row, const float* data);

 private:
  std::size_t at(std::int64_t row);  // the row's index in rows_; creates the row when absent
  void prefetch(std::span<const std::int64_t> rows, std::size_t i) const;
  void initialValues(std::int64_t row, float* out) const;
  std::int64_t slotOf(std::int64_t row) const;
  void grow();

  int dim_;
  int stride_;
  TableSpec spec_;
  std::uint64_t seed_;
  RowInit init_;
  std::vector<std::int64_t> keys_;    // -1: empty
  std::vector<std::uint32_t> index_;  // the row's position in rows_
  std::vector<std::int64_t> rows_;
  // Rows in chunks of kChunkRows, in creation order: a growing table neither copies its rows nor
  // holds twice their memory while it grows, and a row's address stays put. Values and state in
  // chunks of their own (applyRule takes them apart).
  static constexpr std::size_t kChunkRows = 4096;
  class Chunk {
   public:
    Chunk(Allocator* allocator, std::size_t floats, MemoryCategory category);
    ~Chunk();
    Chunk(const Chunk&) = delete;
    Chunk& operator=(const Chunk&) = delete;
    float* data() const { return data_; }

   private:
    Allocator* allocator_;
    std::size_t bytes_;
    MemoryCategory category_;
    float* data_;
  };
  int stateFloats() const { return stride_ - dim_; }
  float* values(std::size_t i) const {
    return values_[i / kChunkRows]->data() + (i % kChunkRows) * dim_;
  }
  float* state(std::size_t i) const {
    return states_.empty() ? nullptr
                           : states_[i / kChunkRows]->data() + (i % kChunkRows) * stateFloats();
  }
  Allocator* allocator_;
  std::vector<std::unique_ptr<Chunk>> values_, states_;
};

}  // namespace parascope::ps
