// The in-process collective algorithms over shared memory. Each publishes its input, works on
// peers' buffers directly, and ends with a barrier after which no peer touches its buffers.
// The per-peer bytes they move are accounted in comm_bytes.cpp under the same names.
#include <cstring>

#include "core/comm/reduce_kernels.h"
#include "core/comm/threads/thread_group.h"

namespace parascope {
namespace {

char* at(void* p, std::size_t bytes) {
  return static_cast<char*>(p) + bytes;
}
const char* at(const void* p, std::size_t bytes) {
  return static_cast<const char*>(p) + bytes;
}

}  // namespace

void ThreadComm::copyBuffer(void* dst, const void* src, std::size_t bytes) const {
  if (bytes == 0 || dst == src) return;
  if (device_ != nullptr && (device_->holds(dst) || device_->holds(src))) {
    device_->copy(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

std::shared_ptr<const void> ThreadComm::deviceMark(const CommArgs& a) const {
  if (device_ == nullptr || !(device_->holds(a.send) || device_->holds(a.recv))) return nullptr;
  return device_->mark();
}

void ThreadComm::reduceInto(void* const* dsts, int ndst, const void* const* srcs, int nsrc,
                            std::size_t count, DType type, ReduceOp op, int divisor) const {
  if (count == 0) return;
  if (device_ != nullptr) {
    const bool onDevice = device_->holds(dsts[0]);
    bool mixed = false;
    for (int i = 0; i < ndst; ++i) mixed |= device_->holds(dsts[i]) != onDevice;
    for (int i = 0; i < nsrc; ++i) mixed |= device_->holds(srcs[i]) != onDevice;
    if (mixed) {
      throw CommError(prefix(CommOp::AllReduce) +
                      ": a reduction over host and device buffers at once; every rank's buffers "
                      "must be in the same memory");
    }
    if (onDevice) {
      device_->reduce(dsts, ndst, srcs, nsrc, count, type, op, divisor);
      return;
    }
  }
  if (ndst == 1) {
    reduceBuffers(dsts[0], srcs, nsrc, count, type, op, divisor);
  } else {
    reduceBuffers(dsts, ndst, srcs, nsrc, count, type, op, divisor);
  }
}

void ThreadComm::execute(const CommArgs& a) {
  if (group_->broken.load()) {
    std::lock_guard lock(group_->brokenMutex);
    throw CommError(prefix(a.op) + " failed: the group is unusable after an earlier failure (" +
                    group_->brokenReason + ")");
  }
  if (group_->world->failed())
    throw CommError(prefix(a.op) + " failed: " + group_->world->failure());
  switch (a.op) {
    case CommOp::Broadcast: broadcast(a); break;
    case CommOp::Reduce: reduce(a); break;
    case CommOp::AllReduce:
      if (algorithmFor(a, size()) == CommAlgorithm::Chunked)
        allReduceChunked(a);
      else
        allReduceDirect(a);
      break;
    case CommOp::Gather: gather(a); break;
    case CommOp::AllGather: allGather(a); break;
    case CommOp::Scatter: scatter(a); break;
    case CommOp::ReduceScatter: reduceScatter(a); break;
    case CommOp::AllToAll: allToAll(a); break;
    case CommOp::Send:
    case CommOp::Recv: break;  // point-to-point never reaches the collective path
  }
}

const void* ThreadComm::scratchCopy(const void* src, std::size_t bytes) {
  if (device_ != nullptr && device_->holds(src)) {  // peers read it where the input is
    if (deviceScratchBytes_ < bytes) {
      deviceScratch_ = device_->allocate(bytes);
      deviceScratchBytes_ = bytes;
    }
    copyBuffer(deviceScratch_.get(), src, bytes);
    return deviceScratch_.get();
  }
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  copyBuffer(scratch_.data(), src, bytes);
  return scratch_.data();
}

void ThreadComm::broadcast(const CommArgs& a) {
  publish(a, a.send);
  if (rank_ != a.root) copyBuffer(a.recv, slot(a.root).src, a.count * dtypeSize(a.dtype));
  barrier(a.op, true);
}

// Rank i reduces chunk i of every input straight into the root's output.
void ThreadComm::reduce(const CommArgs& a) {
  publish(a, a.send);
  const std::size_t es = dtypeSize(a.dtype);
  const ElementRange c = chunkOf(a.count, size(), rank_, a.dtype);
  for (int p = 0; p < size(); ++p) sources_[p] = at(slot(p).src, c.begin * es);
  void* dst = at(slot(a.root).args.recv, c.begin * es);
  reduceInto(&dst, 1, sources_.data(), size(), c.count, a.dtype, a.reduce, size());
  barrier(a.op, true);
}

// In place, peers would read this rank's input while it is overwritten: they read a copy.
void ThreadComm::allReduceDirect(const CommArgs& a) {
  const std::size_t bytes = a.count * dtypeSize(a.dtype);
  publish(a, a.send == a.recv && size() > 1 ? scratchCopy(a.send, bytes) : a.send);
  for (int p = 0; p < size(); ++p) sources_[p] = slot(p).src;
  reduceInto(&a.recv, 1, sources_.data(), size(), a.count, a.dtype, a.reduce, size());
  barrier(a.op, true);
}

// Rank i reduces chunk i of all inputs and writes it into every rank's output: a reduce-
// scatter and an all-gather fused into one pass, reading each input once and writing each
// output once. In place is safe: only rank i reads or writes chunk i of any buffer.
void ThreadComm::allReduceChunked(const CommArgs& a) {
  publish(a, a.send);
  const std::size_t es = dtypeSize(a.dtype);
  const ElementRange mine = chunkOf(a.count, size(), rank_, a.dtype);
  for (int p = 0; p < size(); ++p) {
    sources_[p] = at(slot(p).src, mine.begin * es);
    outputs_[p] = at(slot(p).args.recv, mine.begin * es);
  }
  reduceInto(outputs_.data(), size(), sources_.data(), size(), mine.count, a.dtype, a.reduce,
             size());
  barrier(a.op, true);
}

// Every rank writes its contribution into the root's output.
void ThreadComm::gather(const CommArgs& a) {
  publish(a, a.send);
  const std::size_t bytes = a.count * dtypeSize(a.dtype);
  copyBuffer(at(slot(a.root).args.recv, bytes * static_cast<std::size_t>(rank_)), a.send, bytes);
  barrier(a.op, true);
}

// Every rank reads its share from the root's input.
void ThreadComm::scatter(const CommArgs& a) {
  publish(a, a.send);
  const std::size_t bytes = a.count * dtypeSize(a.dtype);
  copyBuffer(a.recv, at(slot(a.root).src, bytes * static_cast<std::size_t>(rank_)), bytes);
  barrier(a.op, true);
}

// In place each input already sits at this rank's slice of its output, which no peer writes.
void ThreadComm::allGather(const CommArgs& a) {
  publish(a, a.send);
  const std::size_t bytes = a.count * dtypeSize(a.dtype);
  for (int p = 0; p < size(); ++p)
    copyBuffer(at(a.recv, bytes * static_cast<std::size_t>(p)), p == rank_ ? a.send : slot(p).src,
               bytes);
  barrier(a.op, true);
}

// Rank i reduces block i of every input; in place its output is its own block i.
void ThreadComm::reduceScatter(const CommArgs& a) {
  publish(a, a.send);
  const std::size_t offset = a.count * dtypeSize(a.dtype) * static_cast<std::size_t>(rank_);
  for (int p = 0; p < size(); ++p) sources_[p] = at(slot(p).src, offset);
  reduceInto(&a.recv, 1, sources_.data(), size(), a.count, a.dtype, a.reduce, size());
  barrier(a.op, true);
}

// Block j of rank i's input goes to block i of rank j's output; in place peers read a copy.
void ThreadComm::allToAll(const CommArgs& a) {
  const std::size_t bytes = a.count * dtypeSize(a.dtype);
  const std::size_t total = bytes * static_cast<std::size_t>(size());
  publish(a, a.send == a.recv && size() > 1 ? scratchCopy(a.send, total) : a.send);
  const std::size_t mine = bytes * static_cast<std::size_t>(rank_);
  for (int p = 0; p < size(); ++p)
    copyBuffer(at(a.recv, bytes * static_cast<std::size_t>(p)), at(slot(p).src, mine), bytes);
  barrier(a.op, true);
}

}  // namespace parascope
