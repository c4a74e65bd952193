// For test_comm_threads (ranksBeyondTheThreadLimitFailWithTheReason), in a process of its own:
// a fresh process may change its user and limits and start threads under any sanitizer, which a
// forked child of a multi-threaded test may not. As user nobody (so that RLIMIT_NPROC, which
// counts a user's threads, applies) with room for 16 threads, runs an in-process world of 256
// ranks; prints the UserError it ends with and exits 0, or prints what else happened and exits
// 1. Started as root.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>

#include "core/comm/launch.h"
#include "core/common/error.h"

int main() {
  using namespace parascope;
  const rlimit limit{16, 16};
  if (::setgid(65534) != 0 || ::setuid(65534) != 0 || ::setrlimit(RLIMIT_NPROC, &limit) != 0) {
    std::printf("cannot become user nobody with RLIMIT_NPROC 16 (run as root)");
    return 1;
  }
  try {
    runInProcess(256, [](Communicator& c) {
      std::int32_t v = 1;
      c.allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
    });
  } catch (const UserError& e) {
    std::printf("%s", e.what());
    return 0;
  } catch (const std::exception& e) {
    std::printf("not a UserError: %s", e.what());
    return 1;
  }
  std::printf("(no error)");
  return 1;
}
