#include "core/state/reshard.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/kernels/precision.h"

namespace parascope {

StateIndex::StateIndex(const std::vector<const RankState*>& ranks) {
  for (const RankState* r : ranks) {
    for (const StateSlice& s : r->slices) {
      if (!s.owned) continue;
      pieces_[s.tensor][static_cast<std::size_t>(s.field)].push_back(
          {s.begin, s.count, static_cast<const float*>(s.data)});
    }
  }
  if (ranks.empty()) return;
  for (const LogicalTensor& t : ranks.front()->tensors) {
    auto found = pieces_.find(t.name);
    for (int f = 0; f < kStateFieldCount; ++f) {
      const std::string what =
          "state of " + t.name + " (" + stateFieldName(static_cast<StateField>(f)) + ")";
      if (found == pieces_.end()) throw std::logic_error(what + ": no rank owns it");
      std::vector<Piece>& list = found->second[static_cast<std::size_t>(f)];
      std::sort(list.begin(), list.end(),
                [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
      std::int64_t next = 0;
      for (const Piece& p : list) {
        if (p.begin != next) {
          throw std::logic_error(what + ": elements from " +
                                 std::to_string(std::min(next, p.begin)) +
                                 (p.begin < next ? " owned twice" : " owned by no rank"));
        }
        next = p.begin + p.count;
      }
      if (next != shapeNumel(t.shape)) {
        throw std::logic_error(what + ": owned up to element " + std::to_string(next) + " of " +
                               std::to_string(shapeNumel(t.shape)));
      }
    }
  }
}

std::int64_t StateIndex::copyInto(const StateSlice& dest) const {
  auto found = pieces_.find(dest.tensor);
  if (found == pieces_.end()) throw std::logic_error("no state for tensor " + dest.tensor);
  const std::vector<Piece>& list = found->second[static_cast<std::size_t>(dest.field)];
  // The piece holding dest.begin, then its successors until dest's end.
  auto it = std::upper_bound(list.begin(), list.end(), dest.begin,
                             [](std::int64_t at, const Piece& p) { return at < p.begin; });
  if (it == list.begin()) throw std::logic_error("no state for tensor " + dest.tensor);
  --it;
  const std::size_t width = dtypeSize(dest.dtype);
  std::int64_t at = dest.begin;
  const std::int64_t end = dest.begin + dest.count;
  for (; at < end; ++it) {
    if (it == list.end() || it->begin > at) {
      throw std::logic_error("no state for " + dest.tensor + " element " + std::to_string(at));
    }
    const std::int64_t n = std::min(end, it->begin + it->count) - at;
    const float* src = it->data + (at - it->begin);
    char* out = static_cast<char*>(dest.data) + static_cast<std::size_t>(at - dest.begin) * width;
    if (dest.dtype == DType::F32) {
      std::memcpy(out, src, static_cast<std::size_t>(n) * sizeof(float));
    } else {
      kernels::narrow(src, reinterpret_cast<std::uint16_t*>(out), n, dest.dtype);
    }
    at += n;
  }
  return dest.count * static_cast<std::int64_t>(width);
}

std::int64_t copyState(const StateIndex& from, const RankState& to) {
  std::int64_t bytes = 0;
  for (const StateSlice& s : to.slices) bytes += from.copyInto(s);
  return bytes;
}

}  // namespace parascope
