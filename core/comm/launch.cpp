// runInProcess: threads, first-failure propagation and rethrow.
#include "core/comm/launch.h"

#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/comm/threads/thread_backend.h"
#include "core/comm/threads/thread_world.h"
#include "core/common/error.h"

namespace parascope {

void runInProcess(int size, const std::function<void(Communicator&)>& fn,
                  const CommOptions& options) {
  if (size < 1)
    throw UserError("in-process world size must be at least 1, got " + std::to_string(size));
  auto world = std::make_shared<ThreadWorld>(size, options);
  std::vector<Communicator> comms;
  for (auto& backend : makeThreadBackends(world)) comms.emplace_back(std::move(backend));

  std::mutex mutex;
  std::exception_ptr first;
  auto body = [&](int r) {
    try {
      fn(comms[static_cast<std::size_t>(r)]);
    } catch (const std::exception& e) {
      {
        // Recorded before the world fails, so a peer's consequent error can never come first.
        std::lock_guard lock(mutex);
        if (!first) first = std::current_exception();
      }
      world->fail(r, e.what());
    } catch (...) {
      {
        std::lock_guard lock(mutex);
        if (!first) first = std::current_exception();
      }
      world->fail(r, "unknown exception");
    }
    // Dropping the rank's communicator first lets its queued asynchronous operations finish
    // (or fail), so peers never see the rank as gone while its work is still in flight.
    comms[static_cast<std::size_t>(r)] = Communicator();
    world->depart(r);
  };
  std::vector<std::thread> threads;
  int started = 1;
  try {
    for (; started < size; ++started) threads.emplace_back(body, started);
  } catch (const std::system_error& e) {
    // The machine's limit on threads or memory: the ranks already running fail at their first
    // operation with this reason, and the ones never started are gone.
    const std::string reason =
        "in-process world of " + std::to_string(size) + " ranks: cannot start rank " +
        std::to_string(started) + "'s thread (" + e.code().message() +
        "): this machine's limit on threads or memory (ulimit -u, ulimit -v) is reached; use "
        "fewer in-process ranks, or run the ranks as MPI processes (--backend mpi)";
    {
      std::lock_guard lock(mutex);
      first = std::make_exception_ptr(UserError(reason));
    }
    world->fail(started, reason);
    for (int r = started; r < size; ++r) {
      comms[static_cast<std::size_t>(r)] = Communicator();
      world->depart(r);
    }
  }
  if (started == size) {
    body(0);
  } else {
    comms[0] = Communicator();
    world->depart(0);
  }
  for (auto& t : threads) t.join();
  comms.clear();
  if (first) std::rethrow_exception(first);
}

}  // namespace parascope
