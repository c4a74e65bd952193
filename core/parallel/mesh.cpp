#include "core/parallel/mesh.h"

#include <string>

#include "core/common/error.h"

namespace parascope {

MeshCoordinates meshCoordinates(int worldRank, int tensor, int data) {
  return {worldRank % tensor, (worldRank / tensor) % data, worldRank / (tensor * data)};
}

DeviceMesh::DeviceMesh(const Communicator& world, const ParallelStrategy& s) : world_(world) {
  if (s.worldSize() != world.size()) {
    throw UserError("tensor_model_parallel_size (" + std::to_string(s.tensor) +
                    ") x data_parallel_size (" + std::to_string(s.data) +
                    ") x pipeline_model_parallel_size (" + std::to_string(s.pipeline) +
                    ") = " + std::to_string(s.worldSize()) + " does not match the world of " +
                    std::to_string(world.size()) + " ranks");
  }
  const int T = s.tensor, D = s.data;
  at_ = meshCoordinates(world.rank(), T, D);
  // Color: the other two coordinates; key: this axis's coordinate (the order within the group).
  tensor_ = world.split(at_.data + D * at_.pipeline, at_.tensor);
  data_ = world.split(at_.tensor + T * at_.pipeline, at_.data);
  pipeline_ = world.split(at_.tensor + T * at_.data, at_.pipeline);
}

}  // namespace parascope
