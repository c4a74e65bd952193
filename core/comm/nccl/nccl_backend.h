// The NCCL backend: one rank per GPU; buffers are device pointers and operations are enqueued
// on the communicator's own CUDA stream, completion tracked by a CUDA event per operation.
// Built only where the CUDA toolkit and NCCL are found (PARASCOPE_HAVE_NCCL).
#pragma once

#include "core/comm/communicator.h"

namespace parascope {

// Creates this rank's NCCL communicator on GPU `device`, exchanging NCCL's unique id over
// `bootstrap` (any backend: the MPI world, an in-process world). Collective over bootstrap.
Communicator ncclCommunicator(Communicator& bootstrap, int device, CommOptions options = {});

}  // namespace parascope
