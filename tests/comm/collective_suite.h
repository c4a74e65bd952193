// The one collective suite every backend runs: each operation over every element type,
// reduction, in place and out of place, on counts from 0 to several MiB, checked element by
// element against expectations computed here from the inputs; plus split groups, many
// operations in flight, adjointness and per-peer byte consistency. Collective: every rank of
// the communicator calls the same function. Failures throw std::runtime_error naming the case.
#pragma once

#include <cstddef>
#include <vector>

#include "core/comm/communicator.h"

namespace parascope::commtest {

struct SuiteSizes {
  std::vector<std::size_t> counts;  // every type, reduction and placement
  std::vector<std::size_t> large;   // a few combinations only (f32 sum, bf16 avg, i64 max)
};
SuiteSizes defaultSizes();  // up to 1 Mi + 3 elements (4 MiB of f32)
SuiteSizes smallSizes();    // for sub-groups and slow configurations

// Where a backend's buffers live when not in host memory (NCCL: a GPU's). The suite fills and
// checks host mirrors and copies each buffer up before and down after the operation.
class BufferMemory {
 public:
  virtual ~BufferMemory() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* device, const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, const void* device, std::size_t bytes) = 0;
};

// memory: null for backends working on host memory.
void runCollectives(Communicator& comm, const SuiteSizes& sizes, BufferMemory* memory = nullptr);
// Splits into two interleaved groups (ordered by descending rank) and runs the suite in each.
void runSplitGroups(Communicator& comm, const SuiteSizes& sizes);
void runManyInFlight(Communicator& comm);
// sum over ranks <op(x), y> == sum over ranks <x, adjoint(y)>, exactly (integer-valued data).
void runAdjointness(Communicator& comm);
// Floating sums and averages combine the ranks in rank order (bf16 and f16 in f32, rounded
// once), on values of mixed magnitude whose sums round differently in other orders: bitwise the
// same result from every backend that keeps that order (all but NCCL). Host memory.
void runRankOrder(Communicator& comm);
// Every record's sentTo agrees with the peers' receivedFrom, for every operation.
void runByteConsistency(Communicator& comm);

}  // namespace parascope::commtest
