// Saves checkpoints of a few MB in a loop, step after step, continuing from `latest` if there is
// one, until killed: test_checkpoint_crash SIGKILLs it at random moments.
//   checkpoint_crash_writer DIR
#include <cstdio>
#include <filesystem>
#include <string>

#include "checkpoint_fixture.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: checkpoint_crash_writer DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  int step = 0;
  if (std::filesystem::exists(std::filesystem::path(dir) / "latest")) {
    step = parascope::CheckpointReader(dir).manifest().counters.step;
  }
  // 4 n^2 + 51 n = 280k elements per field at n = 256: 3.4 MB over 3 ranks.
  const auto tensors = parascope::test::fakeTensors(256);
  for (;;) parascope::test::saveFakeCheckpoint(dir, ++step, tensors, 3, 2);
}
