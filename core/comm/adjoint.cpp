// Adjoint operations: each is one call of its partner (the traits table's adjoint) with the
// gradient buffers swapped in.
#include "core/comm/adjoint.h"

#include <cstring>

#include "core/comm/collective_traits.h"
#include "core/comm/device_buffers.h"
#include "core/common/error.h"

namespace parascope {

namespace {

// Gradient buffers may be a GPU's (in-process ranks sharing one): then written through the
// world's DeviceBuffers, after the rank's kernels launched so far have run (they may still read
// or write them).
const DeviceBuffers* deviceOf(const Communicator& comm, const void* a, const void* b) {
  const DeviceBuffers* device = comm.options().deviceBuffers.get();
  if (device == nullptr || !(device->holds(a) || device->holds(b))) return nullptr;
  device->waitFor(device->mark());
  return device;
}

}  // namespace

CommOp adjointOf(CommOp op) {
  return commTraits(op).adjoint;
}

CommHandle adjointAsync(Communicator& comm, const CommArgs& f, const void* gradOut, void* gradIn) {
  const bool linear =
      f.reduce == ReduceOp::Sum || (f.op == CommOp::AllReduce && f.reduce == ReduceOp::Avg);
  if (commTraits(f.op).reduces && !linear)
    throw UserError("[adjoint of " + std::string(commOpName(f.op)) + "] reduction '" +
                    std::string(reduceOpName(f.reduce)) +
                    "' is not linear; adjoints exist for sum (and avg for allReduce)");
  const std::size_t bytes = f.count * dtypeSize(f.dtype);
  switch (f.op) {
    case CommOp::Broadcast: {
      // Only the root's input reached the outputs: it gets the sum, the others zeros.
      auto h = comm.reduceAsync(gradOut, gradIn, f.count, f.dtype, ReduceOp::Sum, f.root);
      if (comm.rank() != f.root && bytes > 0) {
        if (const DeviceBuffers* device = deviceOf(comm, gradIn, gradIn)) {
          device->zero(gradIn, bytes);
        } else {
          std::memset(gradIn, 0, bytes);
        }
      }
      return h;
    }
    case CommOp::Reduce:
      if (comm.rank() == f.root && bytes > 0 && gradIn != gradOut) {
        if (const DeviceBuffers* device = deviceOf(comm, gradIn, gradOut)) {
          device->copy(gradIn, gradOut, bytes);
        } else {
          std::memcpy(gradIn, gradOut, bytes);
        }
      }
      return comm.broadcastAsync(gradIn, f.count, f.dtype, f.root);
    case CommOp::AllReduce: return comm.allReduceAsync(gradOut, gradIn, f.count, f.dtype, f.reduce);
    case CommOp::Gather: return comm.scatterAsync(gradOut, gradIn, f.count, f.dtype, f.root);
    case CommOp::Scatter: return comm.gatherAsync(gradOut, gradIn, f.count, f.dtype, f.root);
    case CommOp::AllGather:
      return comm.reduceScatterAsync(gradOut, gradIn, f.count, f.dtype, ReduceOp::Sum);
    case CommOp::ReduceScatter: return comm.allGatherAsync(gradOut, gradIn, f.count, f.dtype);
    case CommOp::AllToAll: return comm.allToAllAsync(gradOut, gradIn, f.count, f.dtype);
    case CommOp::Send: return comm.recvAsync(gradIn, f.count, f.dtype, f.root);
    case CommOp::Recv: return comm.sendAsync(gradOut, f.count, f.dtype, f.root);
  }
  throw UserError("adjointAsync: unknown operation");
}

}  // namespace parascope
