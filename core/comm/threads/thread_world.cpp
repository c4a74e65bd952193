// Failure state and the spin-then-yield-then-futex wait of the in-process world.
#include "core/comm/threads/thread_world.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>
#include <utility>

namespace parascope {
namespace {

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void futexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
               std::chrono::nanoseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000000000),
              static_cast<long>(timeout.count() % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

void futexWakeAll(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

// How often a sleeper re-checks stop conditions and deadlines: bounds failure latency.
constexpr std::chrono::milliseconds kSleepSlice{20};

}  // namespace

ThreadWorld::ThreadWorld(int size, CommOptions options)
    : size_(size),
      options_(std::move(options)),
      wakers_(new Waker[size]),
      departed_(new std::atomic<bool>[size]) {
  for (int i = 0; i < size; ++i) departed_[i].store(false);
  // Spin only a few microseconds: long spins measured worse on a shared machine, where the
  // spinning thread keeps the very core its peer is waiting for. Oversubscribed: shorter still.
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  spins_ = size <= cores ? 300 : 100;
}

void ThreadWorld::fail(int worldRank, const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (failed_.load()) return;
    failure_ = "rank " + std::to_string(worldRank) + " failed: " + reason;
    failed_.store(true, std::memory_order_release);
  }
  notifyAll();
}

std::string ThreadWorld::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void ThreadWorld::depart(int worldRank) {
  departed_[worldRank].store(true, std::memory_order_release);
  notifyAll();
}

bool ThreadWorld::departed(int worldRank) const {
  return departed_[worldRank].load(std::memory_order_acquire);
}

void ThreadWorld::wake(Waker& w) {
  if (w.sleepers.load() == 0) return;
  w.word.fetch_add(1);
  futexWakeAll(&w.word);
}

// The fence pairs with the sleepers increment in waitFor: either the waiter sees the new state
// before sleeping, or we see the sleeper and change the word it sleeps on. Without it the
// caller's release store of that state could still be in this core's store buffer when
// sleepers reads 0, and the waiter would sleep through a whole slice.
void ThreadWorld::notify(int worldRank) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake(wakers_[worldRank]);
}

void ThreadWorld::notify(const std::vector<int>& worldRanks) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int r : worldRanks) wake(wakers_[r]);
}

void ThreadWorld::notifyAll() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int r = 0; r < size_; ++r) wake(wakers_[r]);
}

std::chrono::steady_clock::time_point ThreadWorld::deadline() const {
  if (options_.timeout.count() <= 0) return {};
  return std::chrono::steady_clock::now() + options_.timeout;
}

ThreadWorld::WaitResult ThreadWorld::waitFor(int worldRank, const std::function<bool()>& done,
                                             const std::function<bool()>& stop,
                                             std::chrono::steady_clock::time_point deadline,
                                             bool spin) {
  for (int i = 0; spin && i < spins_; ++i) {
    if (done()) return WaitResult::Done;
    cpuRelax();
  }
  for (int i = 0; i < 16; ++i) {
    if (done()) return WaitResult::Done;
    sched_yield();
  }
  Waker& w = wakers_[worldRank];
  for (;;) {
    w.sleepers.fetch_add(1);
    const std::uint32_t word = w.word.load();
    WaitResult result = WaitResult::Done;
    const bool over = deadline != std::chrono::steady_clock::time_point{} &&
                      std::chrono::steady_clock::now() >= deadline;
    if (!done()) {
      if (stop())
        result = WaitResult::Stopped;
      else if (over)
        result = WaitResult::TimedOut;
      else
        futexWait(&w.word, word, kSleepSlice);
    }
    w.sleepers.fetch_sub(1);
    if (result != WaitResult::Done || done()) return result;
  }
}

}  // namespace parascope
