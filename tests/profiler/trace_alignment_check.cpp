// Checks the per-rank trace files of one multi-process run (train --trace under mpirun) for
// aligned clocks: in every communicator group, each rank's k-th all-reduce must overlap every
// other member's k-th in time, to within the clock residual the files report (a collective
// cannot finish on one rank before it began on another). Prints "aligned: ..." on success, the
// first violation otherwise.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "profiler/io/chrome_import.h"

using namespace parascope::profiler;

namespace {

// One group's all-reduces per member rank, in order; false (and a message) on a violation.
bool checkGroup(std::int32_t group, const std::map<std::int32_t, std::vector<const Event*>>& spans,
                std::int64_t slack) {
  const std::size_t n = spans.begin()->second.size();
  for (const auto& [rank, list] : spans) {
    if (list.size() != n) {
      std::printf("group %d: rank %d has %zu all-reduces, another rank %zu\n", group, rank,
                  list.size(), n);
      return false;
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    for (const auto& [a, la] : spans) {
      for (const auto& [b, lb] : spans) {
        if (la[k]->startNs > lb[k]->endNs + slack) {
          std::printf(
              "group %d: all-reduce %zu starts on rank %d %lld ns after it ended on rank %d\n",
              group, k, a, static_cast<long long>(la[k]->startNs - lb[k]->endNs), b);
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s RANK0.json RANK1.json...\n", argv[0]);
    return 2;
  }
  const TraceData t = importChromeTraces(std::vector<std::string>(argv + 1, argv + argc));
  if (t.clockResidualNs < 0) {
    std::printf("no clock residual in the files\n");
    return 1;
  }
  // group -> rank -> all-reduce spans in order
  std::map<std::int32_t, std::map<std::int32_t, std::vector<const Event*>>> groups;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::Span && std::string(e.name) == "allReduce")
      groups[e.group][e.rank].push_back(&e);
  }
  const std::int64_t slack = 2 * t.clockResidualNs;  // both ends may be off by the residual
  std::size_t checked = 0;
  for (const auto& [group, spans] : groups) {
    if (spans.size() < 2) continue;
    if (!checkGroup(group, spans, slack)) return 1;
    checked += spans.begin()->second.size();
  }
  if (checked == 0) {
    std::printf("no all-reduce shared by two ranks\n");
    return 1;
  }
  std::printf("aligned: %zu all-reduces on %zu ranks, clock residual %lld ns\n", checked,
              t.ranks().size(), static_cast<long long>(t.clockResidualNs));
  return 0;
}
