// Internals of the in-process backend shared by thread_backend.cpp (synchronisation, requests,
// worker, point-to-point) and thread_collectives.cpp (the algorithms). Not a public header.
//
// Protocol: every rank of a group owns a slot. An operation publishes its arguments and input
// pointer in the slot and passes a barrier; then ranks read and write each other's buffers
// directly in phases separated by barriers; the last barrier guarantees no peer still touches
// this rank's buffers when the operation returns. A barrier is a per-slot progress counter:
// collectives run in the same order on every rank, so the counters advance in lockstep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/comm_backend.h"
#include "core/comm/comm_bytes.h"
#include "core/comm/device_buffers.h"
#include "core/comm/threads/thread_world.h"
#include "core/trace/trace.h"

namespace parascope {

struct ThreadGroup;
class ThreadRequest;

struct alignas(64) ThreadSlot {
  std::atomic<std::uint64_t> progress{0};  // barriers this rank has arrived at
  std::atomic<std::uint64_t> bailedAt{0};  // barrier at which this rank gave up, 0 if never
  // Written by the owner before an operation's first barrier, read by peers until its last.
  CommArgs args;
  const void* src = nullptr;  // the input peers read (a scratch copy when in place needs one)
  bool isSplit = false;
  int color = 0;
  int key = 0;
  std::shared_ptr<ThreadGroup> child;  // split: the new group, published by its first member
};

// A posted send or receive waiting for its match on a (source, destination) channel.
struct ThreadPost {
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  DType dtype = DType::F32;
  std::shared_ptr<ThreadRequest> request;
};

struct ThreadChannel {
  std::mutex mutex;
  std::deque<ThreadPost> sends;
  std::deque<ThreadPost> recvs;
};

struct ThreadGroup {
  ThreadGroup(std::shared_ptr<ThreadWorld> w, std::string n, std::vector<int> ranks);
  std::shared_ptr<ThreadWorld> world;
  std::string name;
  std::vector<int> worldRanks;  // group rank -> world rank
  std::unique_ptr<ThreadSlot[]> slots;
  std::unique_ptr<ThreadChannel[]> channels;  // [source * size + destination]
  // Set when a rank gave up mid-operation: the lockstep is lost, later operations fail at once.
  std::atomic<bool> broken{false};
  std::mutex brokenMutex;
  std::string brokenReason;
};

// Completion state shared by the issuing rank and the thread that runs or matches the
// operation. For point-to-point, the waiter itself detects a dead peer and withdraws its post.
class ThreadRequest final : public CommRequest {
 public:
  // owner: the world rank that waits for it.
  ThreadRequest(std::shared_ptr<ThreadWorld> world, std::shared_ptr<ThreadGroup> p2pGroup,
                int p2pPeer, int owner)
      : world_(std::move(world)), group_(std::move(p2pGroup)), peer_(p2pPeer), owner_(owner) {}
  bool test() override;
  void wait() override;
  void cancel() override;
  void complete(std::exception_ptr error);
  ThreadChannel* channel = nullptr;  // point-to-point only
  bool isSend = false;
  // The issuing rank's device work before the operation (DeviceBuffers::mark), when its buffers
  // are a device's: waited for before any rank touches them.
  std::shared_ptr<const void> deviceMark;

 private:
  bool peerGone() const;
  void withdraw(const std::string& reason);
  std::atomic<int> state_{0};  // 0 pending, 1 done, 2 failed; error_ is written before 2
  std::exception_ptr error_;
  std::shared_ptr<ThreadWorld> world_;
  std::shared_ptr<ThreadGroup> group_;
  int peer_;
  int owner_;
};

class ThreadComm final : public CommBackend {
 public:
  ThreadComm(std::shared_ptr<ThreadGroup> group, int rank);
  ~ThreadComm() override;
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(group_->worldRanks.size()); }
  std::string_view kind() const override { return "threads"; }
  std::shared_ptr<CommRequest> start(const CommArgs& args, bool blocking) override;
  std::shared_ptr<CommBackend> split(int color, int key) override;

 private:
  // thread_collectives.cpp
  void execute(const CommArgs& a);
  void broadcast(const CommArgs& a);
  void reduce(const CommArgs& a);
  void allReduceDirect(const CommArgs& a);
  void allReduceChunked(const CommArgs& a);
  void gather(const CommArgs& a);
  void allGather(const CommArgs& a);
  void scatter(const CommArgs& a);
  void reduceScatter(const CommArgs& a);
  void allToAll(const CommArgs& a);
  const void* scratchCopy(const void* src, std::size_t bytes);
  // This operation's copies and reductions: host memory's, or through the world's DeviceBuffers
  // where the buffers are a GPU's.
  void copyBuffer(void* dst, const void* src, std::size_t bytes) const;
  void reduceInto(void* const* dsts, int ndst, const void* const* srcs, int nsrc, std::size_t count,
                  DType type, ReduceOp op, int divisor) const;
  // The mark an operation on these buffers waits for: null unless one of them is the device's.
  std::shared_ptr<const void> deviceMark(const CommArgs& a) const;
  // thread_backend.cpp
  void publish(const CommArgs& a, const void* src, bool isSplit = false);
  void barrier(CommOp op, bool afterData);
  void checkAgreement(const CommArgs& a, bool isSplit);
  [[noreturn]] void bail(CommOp op, ThreadWorld::WaitResult why, std::uint64_t target,
                         bool afterData);
  std::string prefix(CommOp op) const;
  std::shared_ptr<CommRequest> startPointToPoint(const CommArgs& a);
  void run(const CommArgs& a, ThreadRequest& request);
  void workerLoop();
  void drain();
  void withdrawPosts();
  ThreadSlot& slot(int p) const { return group_->slots[p]; }
  int worldRank() const { return group_->worldRanks[static_cast<std::size_t>(rank_)]; }

  std::shared_ptr<ThreadGroup> group_;
  int rank_;
  std::uint64_t step_ = 0;  // barriers passed; equal on every rank between operations
  std::vector<std::byte> scratch_;
  const DeviceBuffers* device_;  // the world's (CommOptions::deviceBuffers), or null
  std::shared_ptr<void> deviceScratch_;
  std::size_t deviceScratchBytes_ = 0;
  std::vector<const void*> sources_;
  std::vector<void*> outputs_;

  // Asynchronous collectives run here in issue order; blocking ones run on the caller's thread
  // when nothing is queued (pending_ == 0), which keeps the order and saves a thread hop.
  std::mutex queueMutex_;
  std::condition_variable queueCv_;
  struct Task {
    CommArgs args;
    std::shared_ptr<ThreadRequest> request;
    // The issuing thread's trace tags: what the worker records and launches for the operation
    // (a GPU's copies and reductions) is the issuing rank's, in its step.
    trace::Context context;
  };
  std::deque<Task> queue_;
  std::atomic<int> pending_{0};
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace parascope
