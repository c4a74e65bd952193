// Moving training state between layouts in one process: the owned slices of every rank of the
// old layout, indexed by (tensor, field), and copies from them straight into a rank of the new
// layout's memory. A rank's copy touches only the elements it holds (no tensor is assembled
// anywhere) and needs no buffer: in-process ranks share an address space. Checkpoints read the
// same descriptions from files (checkpoint.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/state/training_state.h"

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

}  // namespace parascope
