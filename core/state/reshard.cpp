#include "core/state/reshard.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/kernels/precision.h"

namespace parascope {

namespace {

// Writes n f32 elements into `dest` from its element `at` on, rounded if `dest` is 16-bit.
void store(const StateSlice& dest, std::int64_t at, const float* src, std::int64_t n) {
  const std::size_t width = dtypeSize(dest.dtype);
  char* out = static_cast<char*>(dest.data) + static_cast<std::size_t>(at) * width;
  if (dest.dtype == DType::F32) {
    std::memcpy(out, src, static_cast<std::size_t>(n) * sizeof(float));
  } else {
    kernels::narrow(src, reinterpret_cast<std::uint16_t*>(out), n, dest.dtype);
  }
}

}  // namespace

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
  std::int64_t at = dest.begin;
  const std::int64_t end = dest.begin + dest.count;
  for (; at < end; ++it) {
    if (it == list.end() || it->begin > at) {
      throw std::logic_error("no state for " + dest.tensor + " element " + std::to_string(at));
    }
    const std::int64_t n = std::min(end, it->begin + it->count) - at;
    store(dest, at - dest.begin, it->data + (at - it->begin), n);
    at += n;
  }
  return dest.count * static_cast<std::int64_t>(dtypeSize(dest.dtype));
}

std::int64_t copyState(const StateIndex& from, const RankState& to) {
  std::int64_t bytes = 0;
  for (const StateSlice& s : to.slices) bytes += from.copyInto(s);
  return bytes;
}

std::vector<SliceCopy> planReshard(const std::vector<std::vector<SliceExtent>>& before,
                                   const std::vector<std::vector<SliceExtent>>& after) {
  struct Owner {
    std::int64_t begin = 0, count = 0;
    int rank = 0;
    std::size_t slice = 0;
  };
  std::map<std::pair<int, StateField>, std::vector<Owner>> owners;
  for (std::size_t r = 0; r < before.size(); ++r) {
    for (std::size_t i = 0; i < before[r].size(); ++i) {
      const SliceExtent& e = before[r][i];
      owners[{e.tensor, e.field}].push_back({e.begin, e.count, static_cast<int>(r), i});
    }
  }
  for (auto& [key, list] : owners) {
    std::sort(list.begin(), list.end(),
              [](const Owner& a, const Owner& b) { return a.begin < b.begin; });
    for (std::size_t i = 1; i < list.size(); ++i) {
      if (list[i].begin < list[i - 1].begin + list[i - 1].count) {
        throw std::logic_error("reshard: tensor " + std::to_string(key.first) + " (" +
                               stateFieldName(key.second) + ") element " +
                               std::to_string(list[i].begin) + " is owned twice");
      }
    }
  }
  std::vector<SliceCopy> plan;
  for (std::size_t to = 0; to < after.size(); ++to) {
    for (std::size_t j = 0; j < after[to].size(); ++j) {
      const SliceExtent& dest = after[to][j];
      const auto found = owners.find({dest.tensor, dest.field});
      const std::int64_t end = dest.begin + dest.count;
      std::int64_t at = dest.begin;
      if (found != owners.end()) {
        const std::vector<Owner>& list = found->second;
        auto it = std::upper_bound(list.begin(), list.end(), at,
                                   [](std::int64_t x, const Owner& o) { return x < o.begin; });
        if (it != list.begin()) --it;
        for (; at < end && it != list.end() && it->begin <= at; ++it) {
          const std::int64_t n = std::min(end, it->begin + it->count) - at;
          if (n <= 0) continue;
          plan.push_back(
              {it->rank, static_cast<int>(to), it->slice, j, at - it->begin, at - dest.begin, n});
          at += n;
        }
      }
      if (at < end) {
        throw std::logic_error("reshard: tensor " + std::to_string(dest.tensor) + " (" +
                               stateFieldName(dest.field) + ") element " + std::to_string(at) +
                               " is owned by no rank of the old layout");
      }
    }
  }
  return plan;
}

namespace {

// Every rank's extents, in rank order (allGather of fixed-width records padded to the longest).
std::vector<std::vector<SliceExtent>> allExtents(Communicator& world,
                                                 const std::vector<SliceExtent>& mine) {
  if (world.size() == 1) return {mine};
  constexpr std::size_t kWords = 4;  // tensor, field, begin, count
  const auto size = static_cast<std::size_t>(world.size());
  const auto count = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> counts(size);
  world.allGather(&count, counts.data(), 1, DType::I64);
  const auto longest = static_cast<std::size_t>(*std::max_element(counts.begin(), counts.end()));
  std::vector<std::vector<SliceExtent>> all(size);
  if (longest == 0) return all;
  std::vector<std::int64_t> packed(longest * kWords);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    packed[i * kWords] = mine[i].tensor;
    packed[i * kWords + 1] = static_cast<std::int64_t>(mine[i].field);
    packed[i * kWords + 2] = mine[i].begin;
    packed[i * kWords + 3] = mine[i].count;
  }
  std::vector<std::int64_t> gathered(packed.size() * size);
  world.allGather(packed.data(), gathered.data(), packed.size(), DType::I64);
  for (std::size_t r = 0; r < size; ++r) {
    const std::int64_t* at = gathered.data() + r * packed.size();
    for (std::int64_t i = 0; i < counts[r]; ++i, at += kWords) {
      all[r].push_back({static_cast<int>(at[0]), static_cast<StateField>(at[1]), at[2], at[3]});
    }
  }
  return all;
}

// The copies between one pair of ranks, in plan order: the same stream on both sides, consumed
// a buffer at a time (a copy may be split between two buffers).
class CopyStream {
 public:
  CopyStream(const std::vector<SliceCopy>& plan, int from, int to) {
    for (const SliceCopy& c : plan) {
      if (c.from == from && c.to == to) {
        copies_.push_back(&c);
        left_ += c.count;
      }
    }
  }
  std::int64_t left() const { return left_; }

  // Calls visit(copy, offset within the copy, elements) for the next `n` elements.
  template <typename Visit>
  void take(std::int64_t n, Visit visit) {
    left_ -= n;
    while (n > 0) {
      const SliceCopy& c = *copies_[next_];
      const std::int64_t k = std::min(n, c.count - done_);
      visit(c, done_, k);
      done_ += k;
      n -= k;
      if (done_ == c.count) {
        ++next_;
        done_ = 0;
      }
    }
  }

 private:
  std::vector<const SliceCopy*> copies_;
  std::size_t next_ = 0;
  std::int64_t done_ = 0, left_ = 0;
};

// A transfer buffer from the allocator, returned when the reshard ends (or fails).
class TransferBuffer {
 public:
  TransferBuffer(Allocator& allocator, std::size_t bytes)
      : allocator_(allocator),
        bytes_(bytes),
        data_(static_cast<float*>(allocator.allocate(bytes, MemoryCategory::CommBuffer))) {}
  ~TransferBuffer() { allocator_.deallocate(data_, bytes_, MemoryCategory::CommBuffer); }
  TransferBuffer(const TransferBuffer&) = delete;
  TransferBuffer& operator=(const TransferBuffer&) = delete;
  float* data() const { return data_; }

 private:
  Allocator& allocator_;
  std::size_t bytes_;
  float* data_;
};

}  // namespace

std::int64_t reshardOver(Communicator& world, const RankState& before, const RankState& after,
                         Allocator& scratch, std::size_t bufferBytes) {
  if (bufferBytes < sizeof(float)) throw std::logic_error("reshard: transfer buffer too small");
  std::map<std::string, int> ids;
  for (std::size_t i = 0; i < before.tensors.size(); ++i) {
    ids[before.tensors[i].name] = static_cast<int>(i);
  }
  auto extent = [&](const StateSlice& s) {
    const auto found = ids.find(s.tensor);
    if (found == ids.end()) throw std::logic_error("reshard: no logical tensor " + s.tensor);
    return SliceExtent{found->second, s.field, s.begin, s.count};
  };
  std::vector<const StateSlice*> owned;
  std::vector<SliceExtent> mineBefore, mineAfter;
  for (const StateSlice& s : before.slices) {
    if (!s.owned) continue;
    owned.push_back(&s);
    mineBefore.push_back(extent(s));
  }
  for (const StateSlice& s : after.slices) mineAfter.push_back(extent(s));
  const std::vector<SliceCopy> plan =
      planReshard(allExtents(world, mineBefore), allExtents(world, mineAfter));

  const int me = world.rank();
  const int n = world.size();
  auto source = [&](const SliceCopy& c, std::int64_t offset) {
    return static_cast<const float*>(owned[c.fromSlice]->data) + c.fromOffset + offset;
  };
  std::int64_t written = 0;
  auto put = [&](const SliceCopy& c, std::int64_t offset, const float* src, std::int64_t k) {
    const StateSlice& dest = after.slices[c.toSlice];
    store(dest, c.toOffset + offset, src, k);
    written += k * static_cast<std::int64_t>(dtypeSize(dest.dtype));
  };
  CopyStream local(plan, me, me);
  local.take(local.left(), [&](const SliceCopy& c, std::int64_t offset, std::int64_t k) {
    put(c, offset, source(c, offset), k);
  });
  if (n == 1) return written;

  // Round r: send to rank me + r while receiving from me - r, so every pair meets once and no
  // rank waits on one that is sending elsewhere.
  const auto chunk = static_cast<std::int64_t>(bufferBytes / sizeof(float));
  const TransferBuffer sending(scratch, bufferBytes), receiving(scratch, bufferBytes);
  for (int round = 1; round < n; ++round) {
    const int to = (me + round) % n;
    const int from = (me - round + n) % n;
    CopyStream out(plan, me, to), in(plan, from, me);
    while (out.left() > 0 || in.left() > 0) {
      CommHandle received, sent;
      const std::int64_t inCount = std::min(chunk, in.left());
      if (inCount > 0) {
        received =
            world.recvAsync(receiving.data(), static_cast<std::size_t>(inCount), DType::F32, from);
      }
      const std::int64_t outCount = std::min(chunk, out.left());
      if (outCount > 0) {
        float* packed = sending.data();
        out.take(outCount, [&](const SliceCopy& c, std::int64_t offset, std::int64_t k) {
          std::memcpy(packed, source(c, offset), static_cast<std::size_t>(k) * sizeof(float));
          packed += k;
        });
        sent = world.sendAsync(sending.data(), static_cast<std::size_t>(outCount), DType::F32, to);
      }
      if (received.valid()) {
        received.wait();
        const float* unpacked = receiving.data();
        in.take(inCount, [&](const SliceCopy& c, std::int64_t offset, std::int64_t k) {
          put(c, offset, unpacked, k);
          unpacked += k;
        });
      }
      if (sent.valid()) sent.wait();
    }
  }
  return written;
}

}  // namespace parascope
