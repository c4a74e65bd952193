// parascope-cli bench ps: its options and its run (bench/ps.cpp says what it measures).
#pragma once

#include <string>

namespace parascope::bench {

struct BenchPsOptions {
  // The training part's model and data: word2vec, or a GPT with a parameter_server block.
  std::string config = "resources/configs/word2vec.json";
  int steps = 200;              // training steps per run (the same words or tokens in every mode)
  int rows = 4096;              // rows per pull and per push in the transfer part
  int requests = 100;           // pulls (then pushes) per worker in the transfer part
  std::string backend = "all";  // transfer part: threads, mpi or all
  std::string part = "all";     // transfer, train or all
  int servers = 0;              // under mpirun: this job's servers (the others work)
  bool json = false;
};

void runBenchPs(const BenchPsOptions& o);

}  // namespace parascope::bench
