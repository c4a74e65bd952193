// Starting an in-process world: one thread per rank, each with its rank's Communicator. The
// first rank to throw (or to return while peers still wait for it) makes every peer's pending
// and later operation fail within milliseconds; runInProcess then rethrows that first failure.
// No process launching here (MPI worlds come from mpirun, see mpi/mpi_backend.h).
#pragma once

#include <functional>

#include "core/comm/communicator.h"

namespace parascope {

// Runs fn(comm) on `size` new threads (ranks 0..size-1 of a world named "world") and joins
// them. Throws the first rank's exception, if any; UserError if size < 1.
void runInProcess(int size, const std::function<void(Communicator&)>& fn,
                  const CommOptions& options = {});

}  // namespace parascope
