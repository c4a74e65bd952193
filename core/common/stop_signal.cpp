// The handler stores into a lock-free atomic, the only thing an async-signal handler may do here.
#include "core/common/stop_signal.h"

#include <signal.h>

#include <atomic>

#include "core/common/error.h"

namespace parascope {

namespace {

std::atomic<int> gPending{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void recordStopSignal(int signal) {
  gPending.store(signal, std::memory_order_relaxed);
}

}  // namespace

void installStopSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = recordStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int pendingStopSignal() {
  return gPending.load(std::memory_order_relaxed);
}

void throwIfStopRequested() {
  if (const int s = pendingStopSignal()) throw Interrupted(s);
}

void setPendingStopSignal(int signal) {
  gPending.store(signal, std::memory_order_relaxed);
}

}  // namespace parascope
