// Per-peer byte accounting of each algorithm, written once and shared by the backends, plus the
// chunking the chunked algorithms use. Counts are what the algorithm moves between distinct
// ranks; a rank's copies within its own buffers count nothing. Formulas: docs/communication.md.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/comm/comm_backend.h"

namespace parascope {

enum class CommAlgorithm : std::uint8_t {
  Direct,   // every rank reads (or writes) each peer's part directly
  Chunked,  // reduce/allReduce: rank i reduces chunk i from all inputs (then all copy chunks)
};
std::string_view commAlgorithmName(CommAlgorithm a);

struct ElementRange {
  std::size_t begin = 0;
  std::size_t count = 0;
};
// Chunk i of count elements split over n ranks: ceil(count / n) rounded up to whole 64-byte
// lines, the last chunks shorter or empty.
ElementRange chunkOf(std::size_t count, int n, int i, DType t);

// The algorithm of an operation on a group of `size` ranks. Below 32 KiB an all-reduce reads
// every peer's whole input; above it each rank reduces one chunk and writes it to everyone (1/n
// of the reads per rank). A reduce is always chunked.
CommAlgorithm algorithmFor(const CommArgs& args, int size);

// The record of an operation this rank issues on a group of `size` ranks, including the bytes
// sent to and received from every peer for the algorithm; startNs is now.
CommRecord makeRecord(std::string_view backend, const std::string& group, int rank, int size,
                      const CommArgs& args, CommAlgorithm algorithm);

}  // namespace parascope
