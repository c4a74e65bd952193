// The device mesh: world rank = t + T (d + D p) for tensor rank t < T, data rank d < D and
// pipeline rank p < P, i.e. tensor fastest, then data, then pipeline (Megatron's order), so
// tensor-parallel peers are neighbours. Each axis is a sub-communicator from split(); ranks
// in one axis group differ only in that coordinate. See docs/data_parallel.md.
#pragma once

#include "core/comm/communicator.h"
#include "core/parallel/strategy.h"

namespace parascope {

struct MeshCoordinates {
  int tensor = 0;
  int data = 0;
  int pipeline = 0;
};

// Coordinates of a world rank; rank = tensor + T * (data + D * pipeline).
MeshCoordinates meshCoordinates(int worldRank, int tensor, int data);

class DeviceMesh {
 public:
  DeviceMesh() = default;  // one rank: every axis is a size-1 group
  // Collective over `world` (three splits). UserError if the degrees do not multiply to the
  // world size.
  DeviceMesh(const Communicator& world, const ParallelStrategy& s);

  const Communicator& world() const { return world_; }
  Communicator& tensor() { return tensor_; }
  Communicator& data() { return data_; }
  Communicator& pipeline() { return pipeline_; }
  MeshCoordinates coordinates() const { return at_; }

 private:
  Communicator world_, tensor_, data_, pipeline_;
  MeshCoordinates at_;
};

}  // namespace parascope
