// Rank backend and offload device names; the strategy's keys are read in
// core/config/strategy_config.cpp.
#include "core/parallel/strategy.h"

#include <string>

#include "core/common/error.h"

namespace parascope {

std::string_view rankBackendName(RankBackend b) {
  return b == RankBackend::Threads ? "threads" : "mpi";
}

std::string_view offloadDeviceName(OffloadDevice d) {
  return d == OffloadDevice::None ? "none" : d == OffloadDevice::Cpu ? "cpu" : "nvme";
}

RankBackend parseRankBackend(const std::string& name) {
  if (name == "threads") return RankBackend::Threads;
  if (name == "mpi") return RankBackend::Mpi;
  throw UserError("backend '" + name + "' is not known; valid: threads, mpi");
}

}  // namespace parascope
