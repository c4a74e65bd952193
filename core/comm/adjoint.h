// Adjoints of the linear communication operations, for differentiating through them in tensor
// and pipeline parallel layers: broadcast<->reduce, allReduce<->allReduce, gather<->scatter,
// allGather<->reduceScatter, allToAll<->allToAll, send<->recv. For every pair
// sum over ranks <op(x), y> == sum over ranks <x, adjoint(y)>.
#pragma once

#include "core/comm/communicator.h"

namespace parascope {

CommOp adjointOf(CommOp op);

// Issues the adjoint of `forward` (the arguments of a forward operation on this rank): gradOut
// is laid out like the forward's output on this rank (its recv buffer; broadcast: its buffer;
// null for send), gradIn like its input (its send buffer; null for recv). Ranks whose input
// does not reach any output (broadcast non-roots) get zeros. Reductions must be sum (allReduce
// also avg); UserError otherwise, since max/min are not linear.
CommHandle adjointAsync(Communicator& comm, const CommArgs& forward, const void* gradOut,
                        void* gradIn);

}  // namespace parascope
