// How workers and servers talk, over the world Communicator's send/recv (no transport of its
// own). Every request is a header, then its payload, each a message of its own; send/recv pairs
// match in issue order per (source, destination), so a payload follows its header.
//   Pull:    ids[count]                       reply: header, rows[count x dim], dense slice
//   Push:    ids[count], gradients[count x dim], dense slice's gradient
//   GeoPush: ids[count], changes[count x dim],   dense slice's change
//   Gather:  (none)                           reply: header, ids[count], rows[count x dim], slice
//   Trained: (none) the worker's last push is sent
//   Done:    (none)
// The dense slice travels when flags has kDense. Rows are sharded by a hash of their id; the
// dense table in contiguous ranges of its rows (word2vec's output vectors, the GPT's parameters).
#pragma once

#include <array>
#include <cstdint>

#include "core/common/random.h"

namespace parascope::ps {

enum class Op : std::int64_t { Pull = 1, Push = 2, GeoPush = 3, Gather = 4, Trained = 5, Done = 6 };

inline constexpr std::int64_t kDense = 1;
// A pull of the trained tables (evaluation): answered once every worker has said Trained, so in
// every mode it sees every push applied.
inline constexpr std::int64_t kFinal = 2;
// A pull that must not create the rows it asks for (evaluation reads rows training may never
// have touched; their initial values come back, and the server's table stays as training left it).
inline constexpr std::int64_t kPeek = 4;

// Table ids in the rows' seeds: a row starts equal on any server, geo worker or collective worker.
inline constexpr std::uint32_t kSparseTable = 1;
inline constexpr std::uint32_t kDenseTable = 2;

// op, round (sync and geo: the push round a pull needs applied, or a push belongs to), count
// (rows), flags, version (a reply: the server's pushes applied so far; a push: the version its
// rows were pulled at).
struct Header {
  std::array<std::int64_t, 5> words{};
  Op op() const { return static_cast<Op>(words[0]); }
  std::int64_t round() const { return words[1]; }
  std::int64_t count() const { return words[2]; }
  bool dense() const { return (words[3] & kDense) != 0; }
  bool final() const { return (words[3] & kFinal) != 0; }
  bool peek() const { return (words[3] & kPeek) != 0; }
  std::int64_t version() const { return words[4]; }
  static Header make(Op op, std::int64_t round, std::int64_t count, std::int64_t flags,
                     std::int64_t version) {
    return {{static_cast<std::int64_t>(op), round, count, flags, version}};
  }
};

// The server that holds a sparse row. A hash of its own (not the row index's), so that a
// server's rows do not all fall in the same slots of its table.
inline int serverOf(std::int64_t row, int servers) {
  return static_cast<int>(mixSeed(static_cast<std::uint64_t>(row), 0x5e7e5) %
                          static_cast<std::uint64_t>(servers));
}

// Server s's rows of the dense table: [first, first + count).
struct WordRange {
  int first = 0, count = 0;
};
inline WordRange denseSlice(int vocab, int servers, int s) {
  const auto lo = static_cast<int>(static_cast<std::int64_t>(vocab) * s / servers);
  const auto hi = static_cast<int>(static_cast<std::int64_t>(vocab) * (s + 1) / servers);
  return {lo, hi - lo};
}

}  // namespace parascope::ps
