// State shared by all ranks of one in-process world: who failed or exited, and the one wake-up
// word every waiting rank sleeps on. Waits spin briefly, then yield, then sleep on a futex with
// a short timeout, so that 8 ranks on 2 cores make progress and a failure is seen within
// milliseconds. No collective logic here (see thread_backend.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

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

  // Wakes every sleeping waiter; call after publishing state a waiter may be waiting for.
  void notify();

  enum class WaitResult { Done, Stopped, TimedOut };
  // Waits until done() holds; gives up when stop() holds (checked between sleeps) or the
  // deadline passes. A zero deadline never times out.
  // Spinning is for barriers, where peers arrive within microseconds; a thread waiting for a
  // whole operation run by another thread passes spin = false and yields its core at once.
  WaitResult waitFor(const std::function<bool()>& done, const std::function<bool()>& stop,
                     std::chrono::steady_clock::time_point deadline = {}, bool spin = true);

  std::chrono::steady_clock::time_point deadline() const;

 private:
  int size_;
  CommOptions options_;
  int spins_;
  std::atomic<std::uint32_t> wakeWord_{0};
  std::atomic<std::uint32_t> sleepers_{0};
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string failure_;
  std::unique_ptr<std::atomic<bool>[]> departed_;
};

}  // namespace parascope
