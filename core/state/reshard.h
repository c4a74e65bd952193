// Moving training state between two layouts. In one process: the owned slices of every rank of
// the old layout, indexed by (tensor, field), and copies from them straight into a rank of the
// new layout's memory, with no buffer (in-process ranks share an address space). Across
// processes (MPI): a plan of slice copies computed from the two layouts' descriptions, executed
// as point-to-point transfers through a fixed pair of buffers. Either way a rank touches only the
// elements it holds; no tensor is assembled anywhere. Checkpoints read the same descriptions from
// files (checkpoint.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/comm/communicator.h"
#include "core/state/training_state.h"
#include "core/tensor/allocator.h"

namespace parascope {

class StateIndex {
 public:
  // The owned slices of `ranks` (one RankState per rank of a layout). Throws std::logic_error if
  // two owned slices overlap or a (tensor, field) of the model is not covered exactly once: a
  // layout's description is wrong.
  explicit StateIndex(const std::vector<const RankState*>& ranks);

  // Fills `dest` (F32, or BF16 / F16 rounded to nearest even) from the owned slices covering it;
  // returns the bytes written.
  std::int64_t copyInto(const StateSlice& dest) const;

 private:
  struct Piece {
    std::int64_t begin = 0, count = 0;
    const float* data = nullptr;
  };
  std::unordered_map<std::string, std::array<std::vector<Piece>, kStateFieldCount>> pieces_;
};

// Every slice of `to` filled from `from`; bytes written.
std::int64_t copyState(const StateIndex& from, const RankState& to);

// Where a slice lies, without its memory: what a reshard plan is computed from. `tensor` indexes
// the model's logical tensors (RankState::tensors, the same list on every rank).
struct SliceExtent {
  int tensor = 0;
  StateField field = StateField::Param;
  std::int64_t begin = 0, count = 0;
};

// One run of elements moving from slice `fromSlice` of rank `from` (old layout, an owned slice)
// to slice `toSlice` of rank `to` (new layout), at element offsets within those slices.
struct SliceCopy {
  int from = 0, to = 0;
  std::size_t fromSlice = 0, toSlice = 0;
  std::int64_t fromOffset = 0, toOffset = 0, count = 0;
};

// The copies that fill every slice of `after` (per rank of the new layout) from the owned slices
// of `before` (per rank of the old layout): a pure function of the two layouts, the same on every
// rank that computes it. Ordered by (to, toSlice, toOffset), so the copies between one pair of
// ranks form the same stream on the sending and the receiving side. Throws std::logic_error if
// an element of `after` has no owner in `before`.
std::vector<SliceCopy> planReshard(const std::vector<std::vector<SliceExtent>>& before,
                                   const std::vector<std::vector<SliceExtent>>& after);

// The transfer buffers' size: a reshard across processes holds one such buffer for sending and
// one for receiving, whatever the model's size.
inline constexpr std::size_t kReshardBufferBytes = std::size_t{4} << 20;

// Moves the state from `before` (this rank's slices in the old layout; its owned slices are read)
// into every slice of `after` (this rank's slices in the new layout), over `world`, whose ranks
// are the same in both layouts (an MPI job keeps its processes). Collective. The ranks exchange
// their slice descriptions, each computes the plan, copies its own elements directly and
// exchanges the rest with every other rank in turn through two buffers of `bufferBytes` taken
// from `scratch` (MemoryCategory::CommBuffer): the extra memory of a reshard beyond the two
// layouts' own state is 2 x bufferBytes per rank. Returns the bytes written into `after`.
std::int64_t reshardOver(Communicator& world, const RankState& before, const RankState& after,
                         Allocator& scratch, std::size_t bufferBytes = kReshardBufferBytes);

}  // namespace parascope
