// The Open MPI backend: one process per rank, started with `mpirun -np N`. Operations are MPI's
// own non-blocking collectives (MPI_Ibcast, MPI_Iallreduce, ...) and MPI_Isend/MPI_Irecv; sub-
// groups come from MPI_Comm_split. bf16/f16 reduce through user-defined MPI operations that
// combine in f32. Waits poll MPI_Test against CommOptions::timeout.
#pragma once

#include <chrono>
#include <string>

#include "core/comm/communicator.h"

namespace parascope {

// True when this process was started by Open MPI's mpirun.
bool launchedByMpirun();

// Ranks of this job on this machine (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE; 1 when unknown):
// the processes that share its memory.
int mpiRanksOnThisNode();

// Initialises MPI once per process (MPI_THREAD_SERIALIZED; finalised at exit) and returns the
// communicator over MPI_COMM_WORLD, named "world". Only the rank's own thread may use it.
Communicator mpiWorld(CommOptions options = {});

// Ends this process's part of an MPI run after a failure. Tells every other rank why (their
// pending and later operations then fail at once with a CommError naming this rank and the
// reason), waits up to `grace` for them to confirm, and aborts the job with `exitCode` (2 for
// a user error, 128 + signal after a stop signal, else 1). A rank that is failing because a
// peer failed confirms to that peer and waits for it to end the job, so every rank's report is
// printed. Returns at once when no MPI world is running.
void failMpiWorld(const std::string& reason, int exitCode = 1,
                  std::chrono::milliseconds grace = std::chrono::seconds(4));

}  // namespace parascope
