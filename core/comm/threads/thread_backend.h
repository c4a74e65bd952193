// The in-process backend: ranks are threads of one process and collectives read and write each
// other's buffers directly (shared memory, no sockets, no staging copy through a central
// buffer). Waits are spin-then-yield-then-futex; a failed or exited rank makes every waiting
// peer fail within milliseconds. Algorithms and byte counts: docs/communication.md.
#pragma once

#include <memory>
#include <vector>

#include "core/comm/comm_backend.h"

namespace parascope {

class ThreadWorld;

// One backend per rank of a new in-process world of `size` ranks (group name "world").
std::vector<std::shared_ptr<CommBackend>> makeThreadBackends(
    const std::shared_ptr<ThreadWorld>& world);

// A size-1 group named "self": what a default Communicator is.
std::shared_ptr<CommBackend> makeSelfBackend();

}  // namespace parascope
