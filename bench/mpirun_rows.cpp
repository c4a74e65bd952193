#include "bench/mpirun_rows.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "core/common/subprocess.h"

namespace parascope::bench {

std::vector<nlohmann::json> benchRowsUnderMpirun(int ranks, const std::vector<std::string>& args,
                                                 const std::string& bench) {
  char self[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) throw std::runtime_error("bench " + bench + ": cannot find its own executable");
  std::vector<std::string> cmd = {"mpirun", "--oversubscribe",     "--allow-run-as-root",
                                  "-np",    std::to_string(ranks), self};
  cmd.insert(cmd.end(), args.begin(), args.end());
  const ProcessOutput run = runCapturingOutput(cmd);
  std::vector<nlohmann::json> rows;
  std::size_t at = 0;
  while (at < run.out.size()) {
    const std::size_t end = std::min(run.out.find('\n', at), run.out.size());
    nlohmann::json r = nlohmann::json::parse(run.out.substr(at, end - at), nullptr, false);
    if (!r.is_discarded() && r.is_object() && r.value("bench", "") == bench) {
      rows.push_back(std::move(r));
    }
    at = end + 1;
  }
  if (rows.empty()) {
    std::fprintf(stderr, "bench %s: no MPI figures from: %s\n", bench.c_str(),
                 commandLine(cmd).c_str());
  }
  return rows;
}

}  // namespace parascope::bench
