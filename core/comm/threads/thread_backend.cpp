// In-process backend: barriers and failure handling, requests, the asynchronous worker,
// point-to-point channels and split. The collective algorithms are in thread_collectives.cpp.
#include "core/comm/threads/thread_backend.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <numeric>
#include <string>
#include <system_error>

#include "core/comm/collective_traits.h"
#include "core/comm/threads/thread_group.h"
#include "core/common/error.h"

namespace parascope {
namespace {

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s.empty() ? "none" : s;
}

std::string describe(const CommArgs& a, bool isSplit) {
  if (isSplit) return "split";
  std::string s = std::string(commOpName(a.op)) + " count " + std::to_string(a.count) + " " +
                  std::string(dtypeName(a.dtype));
  if (commTraits(a.op).reduces) s += " " + std::string(reduceOpName(a.reduce));
  if (a.root >= 0) s += " root " + std::to_string(a.root);
  return s;
}

bool agree(const CommArgs& a, bool aSplit, const CommArgs& b, bool bSplit) {
  if (aSplit || bSplit) return aSplit == bSplit;
  return a.op == b.op && a.count == b.count && a.dtype == b.dtype && a.reduce == b.reduce &&
         a.root == b.root;
}

}  // namespace

ThreadGroup::ThreadGroup(std::shared_ptr<ThreadWorld> w, std::string n, std::vector<int> ranks)
    : world(std::move(w)),
      name(std::move(n)),
      worldRanks(std::move(ranks)),
      slots(new ThreadSlot[worldRanks.size()]),
      channels(new ThreadChannel[worldRanks.size() * worldRanks.size()]) {}

// ---- requests -------------------------------------------------------------------------------

void ThreadRequest::complete(std::exception_ptr error) {
  error_ = std::move(error);
  state_.store(error_ ? 2 : 1, std::memory_order_release);
  world_->notify(owner_);
}

bool ThreadRequest::peerGone() const {
  return world_->failed() || group_->broken.load() || world_->departed(group_->worldRanks[peer_]);
}

bool ThreadRequest::test() {
  int s = state_.load(std::memory_order_acquire);
  if (s == 0 && channel && peerGone()) {
    withdraw("peer gone");
    s = state_.load(std::memory_order_acquire);
  }
  if (s == 2) std::rethrow_exception(error_);
  return s == 1;
}

void ThreadRequest::wait() {
  auto done = [&] { return state_.load(std::memory_order_acquire) != 0; };
  if (!channel) {
    // A collective: the thread running it fails it itself when a peer is gone.
    world_->waitFor(
        owner_, done, [] { return false; }, {}, false);
  } else {
    const auto r = world_->waitFor(
        owner_, done, [&] { return peerGone(); }, world_->deadline());
    if (r == ThreadWorld::WaitResult::TimedOut)
      withdraw("timed out after " + std::to_string(world_->options().timeout.count()) + " ms");
    else if (r == ThreadWorld::WaitResult::Stopped)
      withdraw("peer gone");
  }
  test();
}

void ThreadRequest::cancel() {
  if (channel != nullptr) withdraw("cancelled by its rank");
}

// Removes this rank's unmatched post so the peer can never copy into or out of a buffer the
// caller is about to reuse; a post already matched has completed under the same lock.
void ThreadRequest::withdraw(const std::string& why) {
  std::lock_guard lock(channel->mutex);
  if (state_.load(std::memory_order_acquire) != 0) return;
  auto& posts = isSend ? channel->sends : channel->recvs;
  posts.erase(std::remove_if(posts.begin(), posts.end(),
                             [&](const ThreadPost& p) { return p.request.get() == this; }),
              posts.end());
  std::string reason = why;
  if (world_->failed())
    reason = world_->failure();
  else if (world_->departed(group_->worldRanks[peer_]))
    reason = "rank " + std::to_string(peer_) + " exited without a matching " +
             (isSend ? "recv" : "send");
  else if (group_->broken.load()) {
    std::lock_guard brokenLock(group_->brokenMutex);
    reason = group_->brokenReason;
  }
  complete(std::make_exception_ptr(
      CommError(operationPrefix(isSend ? "send" : "recv", group_->name, record.rank, record.size) +
                " failed: " + reason + "; ranks that did not arrive: " + std::to_string(peer_))));
}

// ---- the communicator -----------------------------------------------------------------------

ThreadComm::ThreadComm(std::shared_ptr<ThreadGroup> group, int rank)
    : CommBackend(group->name, group->world->options()),
      group_(std::move(group)),
      rank_(rank),
      device_(group_->world->options().deviceBuffers.get()),
      sources_(static_cast<std::size_t>(size())),
      outputs_(static_cast<std::size_t>(size())) {}

ThreadComm::~ThreadComm() {
  {
    std::lock_guard lock(queueMutex_);
    stopping_ = true;
  }
  queueCv_.notify_all();
  if (worker_.joinable()) worker_.join();
  withdrawPosts();
}

// This rank's sends and receives still waiting for a match when it leaves the group (a rank
// that failed with receives posted, or left a send nobody took): no peer may copy into or out
// of their buffers any more, and each post's request holds the group that holds the post.
// Channel [s * n + d] queues the sends of s and the receives of d.
void ThreadComm::withdrawPosts() {
  const int n = size();
  std::vector<ThreadPost> mine;
  for (int peer = 0; peer < n; ++peer) {
    for (const bool sends : {true, false}) {
      ThreadChannel& ch =
          group_->channels[static_cast<std::size_t>(sends ? rank_ * n + peer : peer * n + rank_)];
      std::lock_guard lock(ch.mutex);
      auto& posts = sends ? ch.sends : ch.recvs;
      for (ThreadPost& p : posts) mine.push_back(std::move(p));
      posts.clear();
    }
  }
  for (ThreadPost& p : mine) {
    p.request->complete(std::make_exception_ptr(
        CommError(operationPrefix(p.request->isSend ? "send" : "recv", name(), rank_, n) +
                  " failed: rank " + std::to_string(rank_) + " left with it unmatched")));
  }
}

std::string ThreadComm::prefix(CommOp op) const {
  return operationPrefix(commOpName(op), name(), rank_, size());
}

std::shared_ptr<CommRequest> ThreadComm::start(const CommArgs& args, bool blocking) {
  if (isPointToPoint(args.op)) return startPointToPoint(args);
  auto request = std::make_shared<ThreadRequest>(group_->world, group_, -1, worldRank());
  request->record = makeRecord(kind(), name(), rank_, size(), args, algorithmFor(args, size()));
  request->deviceMark = deviceMark(args);
  if (blocking && pending_.load(std::memory_order_acquire) == 0) {
    run(args, *request);
    return request;
  }
  pending_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(queueMutex_);
    queue_.push_back({args, request, trace::context()});
    if (!worker_.joinable()) {
      try {
        worker_ = std::thread([this] { workerLoop(); });
      } catch (const std::system_error& e) {
        queue_.pop_back();
        pending_.fetch_sub(1, std::memory_order_relaxed);
        throw UserError("rank " + std::to_string(rank_) +
                        ": cannot start its communication thread (" + e.code().message() +
                        "): this machine's limit on threads or memory (ulimit -u, ulimit -v) is "
                        "reached; use fewer in-process ranks, or run the ranks as MPI processes "
                        "(--backend mpi)");
      }
    }
  }
  queueCv_.notify_one();
  return request;
}

void ThreadComm::run(const CommArgs& a, ThreadRequest& request) {
  try {
    // Before the first barrier: once past it, peers read and write this rank's buffers.
    if (request.deviceMark) device_->waitFor(request.deviceMark);
    execute(a);
    request.complete(nullptr);
  } catch (...) {
    request.complete(std::current_exception());
  }
}

void ThreadComm::workerLoop() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(queueMutex_);
      queueCv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    {
      const trace::ScopedContext traced(task.context);
      run(task.args, *task.request);
    }
    pending_.fetch_sub(1, std::memory_order_release);
    group_->world->notify(worldRank());
  }
}

void ThreadComm::drain() {
  group_->world->waitFor(
      worldRank(), [&] { return pending_.load(std::memory_order_acquire) == 0; },
      [] { return false; });
}

// ---- barriers and failure -------------------------------------------------------------------

void ThreadComm::publish(const CommArgs& a, const void* src, bool isSplit) {
  ThreadSlot& mine = slot(rank_);
  mine.args = a;
  mine.src = src;
  mine.isSplit = isSplit;
  barrier(a.op, false);
  checkAgreement(a, isSplit);
}

void ThreadComm::barrier(CommOp op, bool afterData) {
  ThreadGroup& g = *group_;
  const std::uint64_t target = ++step_;
  slot(rank_).progress.store(target);
  const int n = size();
  auto done = [&] {
    for (int p = 0; p < n; ++p)
      if (slot(p).progress.load(std::memory_order_acquire) < target) return false;
    return true;
  };
  auto stop = [&] {
    if (g.world->failed() || g.broken.load()) return true;
    for (int p = 0; p < n; ++p)
      if (slot(p).progress.load(std::memory_order_acquire) < target &&
          (g.world->departed(g.worldRanks[p]) || slot(p).bailedAt.load() != 0))
        return true;
    return false;
  };
  // Only the arrival that completes the barrier wakes the group; after a rank gave up, every
  // arrival does (bail waits for each). The fence makes this Dekker's pattern: of two ranks
  // arriving last at once, at least one sees the other's progress.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (done()) {
    g.world->notify(g.worldRanks);
    return;
  }
  if (g.broken.load()) g.world->notify(g.worldRanks);
  const auto r = g.world->waitFor(worldRank(), done, stop, g.world->deadline());
  if (r != ThreadWorld::WaitResult::Done) bail(op, r, target, afterData);
}

void ThreadComm::bail(CommOp op, ThreadWorld::WaitResult why, std::uint64_t target,
                      bool afterData) {
  ThreadGroup& g = *group_;
  const int n = size();
  std::vector<int> missing, departed;
  for (int p = 0; p < n; ++p) {
    if (slot(p).progress.load() >= target) continue;
    missing.push_back(p);
    if (g.world->departed(g.worldRanks[p])) departed.push_back(p);
  }
  std::string reason;
  if (g.world->failed()) {
    reason = g.world->failure();
  } else if (!departed.empty()) {
    reason = "rank(s) " + rankList(departed) + " exited without joining";
  } else if (g.broken.load()) {
    std::lock_guard lock(g.brokenMutex);
    reason = g.brokenReason;
  } else {
    reason = why == ThreadWorld::WaitResult::TimedOut
                 ? "timed out after " + std::to_string(g.world->options().timeout.count()) + " ms"
                 : "a peer gave up";
  }
  const std::string message =
      prefix(op) + " failed: " + reason + "; ranks that did not arrive: " + rankList(missing);
  {
    std::lock_guard lock(g.brokenMutex);
    if (!g.broken.load()) {
      g.brokenReason = message;
      g.broken.store(true);
    }
  }
  slot(rank_).bailedAt.store(target);
  g.world->notify(g.worldRanks);
  if (afterData) {
    // Peers that passed the previous barrier may still be copying from or into this rank's
    // buffers; they arrive here or give up within the copy's time. Bounded so we never hang.
    g.world->waitFor(
        worldRank(),
        [&] {
          for (int p = 0; p < n; ++p) {
            const std::uint64_t at = slot(p).progress.load(std::memory_order_acquire);
            if (at == target - 1 && slot(p).bailedAt.load() == 0 &&
                !g.world->departed(g.worldRanks[p]))
              return false;
          }
          return true;
        },
        [] { return false; }, std::chrono::steady_clock::now() + std::chrono::seconds(2));
  }
  throw CommError(message);
}

void ThreadComm::checkAgreement(const CommArgs& a, bool isSplit) {
  const int n = size();
  bool same = true;
  for (int p = 0; p < n && same; ++p) same = agree(slot(p).args, slot(p).isSplit, a, isSplit);
  if (same) return;
  std::string detail;
  for (int p = 0; p < n; ++p)
    detail += (p ? "; rank " : "rank ") + std::to_string(p) + ": " +
              describe(slot(p).args, slot(p).isSplit);
  // Every rank sees the same slots and fails alike; the barrier keeps slots stable until all
  // have read them.
  barrier(a.op, false);
  throw CommError(prefix(isSplit ? CommOp::AllReduce : a.op) +
                  " failed: ranks issued different operations or arguments (" + detail + ")");
}

// ---- point-to-point -------------------------------------------------------------------------

std::shared_ptr<CommRequest> ThreadComm::startPointToPoint(const CommArgs& a) {
  const bool isSend = a.op == CommOp::Send;
  const int n = size();
  auto request = std::make_shared<ThreadRequest>(group_->world, group_, a.root, worldRank());
  request->record = makeRecord(kind(), name(), rank_, n, a, CommAlgorithm::Direct);
  request->isSend = isSend;
  request->deviceMark = deviceMark(a);
  const int source = isSend ? rank_ : a.root;
  const int dest = isSend ? a.root : rank_;
  ThreadChannel& ch = group_->channels[static_cast<std::size_t>(source * n + dest)];
  request->channel = &ch;
  ThreadPost post{a.send, a.recv, a.count, a.dtype, request};
  std::unique_lock lock(ch.mutex);
  auto& theirs = isSend ? ch.recvs : ch.sends;
  if (theirs.empty()) {
    (isSend ? ch.sends : ch.recvs).push_back(std::move(post));
    return request;
  }
  ThreadPost other = std::move(theirs.front());
  theirs.pop_front();
  // Matched: the pair is out of the channel, so the copy (which on a GPU waits for the device)
  // holds no lock another send or receive on it needs.
  lock.unlock();
  const ThreadPost& s = isSend ? post : other;
  const ThreadPost& r = isSend ? other : post;
  if (s.count != r.count || s.dtype != r.dtype) {
    const std::string message =
        "[send/recv] group '" + name() + "': send of " + std::to_string(s.count) + " " +
        std::string(dtypeName(s.dtype)) + " from rank " + std::to_string(source) +
        " does not match recv of " + std::to_string(r.count) + " " +
        std::string(dtypeName(r.dtype)) + " at rank " + std::to_string(dest);
    // One exception object per side: both ranks rethrow theirs concurrently.
    other.request->complete(std::make_exception_ptr(CommError(message)));
    request->complete(std::make_exception_ptr(CommError(message)));
    return request;
  }
  try {
    // Both ranks' kernels around these buffers, launched before they posted, have run.
    for (const ThreadPost* p : {&s, &r})
      if (p->request->deviceMark) device_->waitFor(p->request->deviceMark);
    copyBuffer(r.recv, s.send, s.count * dtypeSize(s.dtype));
  } catch (const std::exception& e) {
    const std::string message = "[send/recv] group '" + name() + "': the copy from rank " +
                                std::to_string(source) + " to rank " + std::to_string(dest) +
                                " failed: " + e.what();
    other.request->complete(std::make_exception_ptr(CommError(message)));
    request->complete(std::make_exception_ptr(CommError(message)));
    return request;
  }
  other.request->complete(nullptr);
  request->complete(nullptr);
  return request;
}

// ---- split ----------------------------------------------------------------------------------

std::shared_ptr<CommBackend> ThreadComm::split(int color, int key) {
  drain();  // a collective: runs after everything issued before it
  ThreadSlot& mine = slot(rank_);
  mine.color = color;
  mine.key = key;
  mine.child.reset();
  CommArgs a;
  publish(a, nullptr, true);
  std::vector<int> members;
  for (int p = 0; p < size(); ++p)
    if (slot(p).color == color) members.push_back(p);
  std::stable_sort(members.begin(), members.end(),
                   [&](int x, int y) { return slot(x).key < slot(y).key; });
  if (members.front() == rank_) {
    std::vector<int> worldRanks;
    for (int p : members) worldRanks.push_back(group_->worldRanks[static_cast<std::size_t>(p)]);
    mine.child = std::make_shared<ThreadGroup>(group_->world, name() + "/" + std::to_string(color),
                                               std::move(worldRanks));
  }
  barrier(CommOp::AllReduce, false);
  std::shared_ptr<ThreadGroup> child = slot(members.front()).child;
  barrier(CommOp::AllReduce, false);
  const auto at = std::find(members.begin(), members.end(), rank_) - members.begin();
  return std::make_shared<ThreadComm>(std::move(child), static_cast<int>(at));
}

// ---- worlds ---------------------------------------------------------------------------------

std::vector<std::shared_ptr<CommBackend>> makeThreadBackends(
    const std::shared_ptr<ThreadWorld>& world) {
  std::vector<int> ranks(static_cast<std::size_t>(world->size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto group = std::make_shared<ThreadGroup>(world, "world", ranks);
  std::vector<std::shared_ptr<CommBackend>> out;
  for (int r = 0; r < world->size(); ++r) out.push_back(std::make_shared<ThreadComm>(group, r));
  return out;
}

std::shared_ptr<CommBackend> makeSelfBackend() {
  auto world = std::make_shared<ThreadWorld>(1, CommOptions{});
  auto group = std::make_shared<ThreadGroup>(world, "self", std::vector<int>{0});
  return std::make_shared<ThreadComm>(group, 0);
}

}  // namespace parascope
