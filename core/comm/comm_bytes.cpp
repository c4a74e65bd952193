// Per-peer byte accounting of the direct and chunked algorithms.
#include "core/comm/comm_bytes.h"

#include <algorithm>

#include "core/comm/collective_traits.h"

namespace parascope {

std::string_view commAlgorithmName(CommAlgorithm a) {
  return a == CommAlgorithm::Direct ? "direct" : "chunked";
}

ElementRange chunkOf(std::size_t count, int n, int i, DType t) {
  const std::size_t align = 64 / dtypeSize(t);
  const auto un = static_cast<std::size_t>(n);
  std::size_t per = (count + un - 1) / un;
  per = (per + align - 1) / align * align;
  const std::size_t begin = std::min(count, per * static_cast<std::size_t>(i));
  return {begin, std::min(per, count - begin)};
}

CommAlgorithm algorithmFor(const CommArgs& args, int size) {
  constexpr std::size_t kDirectAllReduceBytes = 32 * 1024;
  if (args.op == CommOp::Reduce) return CommAlgorithm::Chunked;
  if (args.op == CommOp::AllReduce && size > 1 &&
      args.count * dtypeSize(args.dtype) > kDirectAllReduceBytes)
    return CommAlgorithm::Chunked;
  return CommAlgorithm::Direct;
}

namespace {

// S to or from each peer as the operation's row says; root is the peer of send/recv.
void fillDirect(CommRecord& r, std::uint64_t s) {
  const CollectiveTraits& t = commTraits(r.op);
  const bool rankIsRoot = r.rank == r.root;
  for (int p = 0; p < r.size; ++p) {
    if (p == r.rank) continue;
    const auto up = static_cast<std::size_t>(p);
    if (movesBytes(t.sent, rankIsRoot, p == r.root)) r.sentTo[up] = s;
    if (movesBytes(t.received, rankIsRoot, p == r.root)) r.receivedFrom[up] = s;
  }
}

void fillChunked(CommRecord& r, std::size_t count) {
  const std::size_t esize = dtypeSize(r.dtype);
  const std::uint64_t mine = chunkOf(count, r.size, r.rank, r.dtype).count * esize;
  for (int p = 0; p < r.size; ++p) {
    if (p == r.rank) continue;
    const std::uint64_t theirs = chunkOf(count, r.size, p, r.dtype).count * esize;
    const auto up = static_cast<std::size_t>(p);
    if (r.op == CommOp::AllReduce) {
      // p reads my chunk p and writes its reduced chunk p into my output; I do the same with
      // chunk r in p's buffers.
      r.sentTo[up] = r.receivedFrom[up] = theirs + mine;
    } else {
      // Reduce: p reads my chunk p; everyone writes its reduced chunk into the root.
      r.sentTo[up] = theirs + (p == r.root ? mine : 0);
      r.receivedFrom[up] = mine + (r.rank == r.root ? theirs : 0);
    }
  }
}

}  // namespace

CommRecord makeRecord(std::string_view backend, const std::string& group, int rank, int size,
                      const CommArgs& args, CommAlgorithm algorithm) {
  CommRecord r;
  r.op = args.op;
  r.group = group;
  r.backend = std::string(backend);
  r.algorithm = std::string(commAlgorithmName(algorithm));
  r.rank = rank;
  r.size = size;
  r.root = args.root;
  r.dtype = args.dtype;
  r.count = args.count;
  const std::uint64_t s = args.count * dtypeSize(args.dtype);
  r.bytes = messageBytes(args.op, args.count, args.dtype, size);
  r.sentTo.assign(static_cast<std::size_t>(size), 0);
  r.receivedFrom.assign(static_cast<std::size_t>(size), 0);
  if (algorithm == CommAlgorithm::Chunked)
    fillChunked(r, args.count);
  else
    fillDirect(r, s);
  r.startNs = commNowNs();
  return r;
}

}  // namespace parascope
