// State shared by all ranks of one in-process world: who failed or exited, and a wake-up word per
// rank that its waiting threads sleep on. Waits spin briefly, then yield, then sleep on a futex
// with a short timeout, so that 8 ranks on 2 cores make progress and a failure is seen within
// milliseconds. A change wakes only the ranks that wait for it: with one word for the world,
// every barrier arrival and every completed send woke every sleeping rank to re-check and sleep
// again, and 8 ranks on 2 cores spent more time in the kernel than computing.
// No collective logic here (see thread_backend.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm/comm_types.h"

namespace parascope {

class ThreadWorld {
 public:
  ThreadWorld(int size, CommOptions options);

  int size() const { return size_; }
  const CommOptions& options() const { return options_; }

  // The first failure wins; every waiting and later operation in the world then fails with it.
  void fail(int worldRank, const std::string& reason);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  std::string failure() const;
  // A rank's thread has finished; operations still waiting for it fail.
  void depart(int worldRank);
  bool departed(int worldRank) const;

  // Wakes the threads of one world rank, of each rank listed, or of every rank, that sleep in
  // waitFor; call after publishing state they may be waiting for.
  void notify(int worldRank);
  void notify(const std::vector<int>& worldRanks);
  void notifyAll();

  enum class WaitResult { Done, Stopped, TimedOut };
  // Waits, on behalf of worldRank, until done() holds; gives up when stop() holds (checked
  // between sleeps) or the deadline passes. A zero deadline never times out. Only a notify that
  // names worldRank (or all) wakes it early: whoever makes done() or stop() true must.
  // Spinning is for barriers, where peers arrive within microseconds; a thread waiting for a
  // whole operation run by another thread passes spin = false and yields its core at once.
  WaitResult waitFor(int worldRank, const std::function<bool()>& done,
                     const std::function<bool()>& stop,
                     std::chrono::steady_clock::time_point deadline = {}, bool spin = true);

  std::chrono::steady_clock::time_point deadline() const;

 private:
  int size_;
  CommOptions options_;
  int spins_;
  // One per rank, on cache lines of their own: a rank's threads sleep on word.
  struct alignas(64) Waker {
    std::atomic<std::uint32_t> word{0};
    std::atomic<std::uint32_t> sleepers{0};
  };
  void wake(Waker& w);
  std::unique_ptr<Waker[]> wakers_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string failure_;
  std::unique_ptr<std::atomic<bool>[]> departed_;
};

}  // namespace parascope
