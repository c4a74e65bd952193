// parascope-cli analyze TRACE...: loads ParaScope or PyTorch profiler traces (one per rank or
// merged) and prints the profiler's analyses: time breakdown per rank and step, pipeline
// bubbles, the communication matrix and per-operation totals, memory peaks and stragglers.
// The same library functions back the GUI; this file only formats them.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "profiler/analysis/breakdown.h"
#include "profiler/analysis/bubbles.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/io/chrome_import.h"

namespace parascope::cli {

namespace {

using namespace parascope::profiler;

struct AnalyzeOptions {
  std::vector<std::string> traces;
  bool json = false;
};

double ms(std::int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

void printJson(const TraceData& t, const AnalyzeOptions& o) {
  auto line = [](const nlohmann::json& j) { std::printf("%s\n", j.dump().c_str()); };
  line({{"section", "trace"},
        {"files", o.traces.size()},
        {"ranks", t.ranks().size()},
        {"world_size", t.worldSize},
        {"events", t.events.size()},
        {"clock_residual_ns", t.clockResidualNs}});
  for (const auto& b : computeBreakdown(t)) {
    line({{"section", "breakdown"},
          {"rank", b.rank},
          {"step", b.step},
          {"device", b.gpu ? "gpu" : "host"},
          {"window_ns", b.windowNs()},
          {"compute_ns", b.computeNs},
          {"communication_ns", b.communicationNs},
          {"exposed_communication_ns", b.exposedCommunicationNs},
          {"other_ns", b.otherNs},
          {"idle_ns", b.idleNs},
          {"overlap_ratio", b.overlapRatio}});
  }
  for (const auto& b : computeBubbles(t)) {
    line({{"section", "bubble"},
          {"step", b.step},
          {"stage", b.stage},
          {"rank", b.rank},
          {"window_ns", b.windowNs},
          {"busy_ns", b.busyNs},
          {"bubble_ns", b.bubbleNs},
          {"bubble_fraction", b.bubbleFraction}});
  }
  const CommVolume v = computeCommVolume(t);
  for (const auto& [pair, bytes] : v.matrix.cells) {
    line({{"section", "comm_matrix"}, {"src", pair.first}, {"dst", pair.second}, {"bytes", bytes}});
  }
  for (const auto& op : v.ops) {
    line({{"section", "comm_op"},
          {"name", op.name},
          {"count", op.count},
          {"bytes", op.bytes},
          {"time_ns", op.timeNs}});
  }
  for (const auto& m : computeMemoryTimeline(t)) {
    line({{"section", "memory_peak"},
          {"rank", m.rank},
          {"name", m.name},
          {"peak_bytes", m.peakBytes},
          {"peak_at_ns", m.peakAtNs},
          {"samples", m.points.size()}});
  }
  for (const auto& s : computeStragglers(t)) {
    line({{"section", "straggler"},
          {"rank", s.rank},
          {"collectives", s.collectives},
          {"times_last", s.timesLast},
          {"mean_lateness_ns", s.meanLatenessNs},
          {"max_lateness_ns", s.maxLatenessNs}});
  }
}

void printBreakdown(const TraceData& t) {
  std::printf("\nTime per rank and step (ms; exposed = communication not overlapped by compute)\n");
  std::printf("%5s %6s %4s %10s %10s %10s %10s %10s %10s %8s\n", "rank", "step", "dev", "window",
              "compute", "comm", "exposed", "other", "idle", "overlap");
  for (const auto& b : computeBreakdown(t)) {
    std::printf("%5d %6d %4s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %7.1f%%\n", b.rank, b.step,
                b.gpu ? "gpu" : "host", ms(b.windowNs()), ms(b.computeNs), ms(b.communicationNs),
                ms(b.exposedCommunicationNs), ms(b.otherNs), ms(b.idleNs), 100 * b.overlapRatio);
  }
}

void printCommunication(const TraceData& t) {
  const CommVolume v = computeCommVolume(t);
  std::printf("\nCommunication matrix (bytes sent, row = sender, column = receiver)\n");
  if (v.matrix.ranks.empty()) {
    std::printf("  (no communication with peers recorded)\n");
  } else if (v.matrix.ranks.size() <= 16) {
    std::printf("%6s", "");
    for (std::int32_t dst : v.matrix.ranks) std::printf(" %12d", dst);
    std::printf("\n");
    for (std::int32_t src : v.matrix.ranks) {
      std::printf("%6d", src);
      for (std::int32_t dst : v.matrix.ranks) {
        std::printf(" %12lld", static_cast<long long>(v.matrix.at(src, dst)));
      }
      std::printf("\n");
    }
  } else {
    for (const auto& [pair, bytes] : v.matrix.cells) {
      std::printf("  %d -> %d  %lld\n", pair.first, pair.second, static_cast<long long>(bytes));
    }
  }
  std::printf("\nCommunication per operation\n%-40s %8s %14s %12s\n", "operation", "count", "bytes",
              "time ms");
  for (const auto& op : v.ops) {
    std::printf("%-40s %8lld %14lld %12.3f\n", op.name.c_str(), static_cast<long long>(op.count),
                static_cast<long long>(op.bytes), ms(op.timeNs));
  }
}

void printText(const TraceData& t, const AnalyzeOptions& o) {
  std::printf("%zu file(s), %zu rank(s) of world size %d, %zu events", o.traces.size(),
              t.ranks().size(), t.worldSize, t.events.size());
  if (t.clockResidualNs >= 0)
    std::printf(", clock residual %lld ns", static_cast<long long>(t.clockResidualNs));
  std::printf("\n");
  printBreakdown(t);
  const auto bubbles = computeBubbles(t);
  std::printf("\nPipeline bubbles\n");
  if (bubbles.empty()) std::printf("  (no events tagged with a pipeline stage)\n");
  for (const auto& b : bubbles) {
    std::printf("  step %d stage %d rank %d: bubble %.3f of %.3f ms (%.1f%%)\n", b.step, b.stage,
                b.rank, ms(b.bubbleNs), ms(b.windowNs), 100 * b.bubbleFraction);
  }
  printCommunication(t);
  std::printf("\nMemory peaks\n");
  const auto memory = computeMemoryTimeline(t);
  if (memory.empty()) std::printf("  (no memory counters)\n");
  for (const auto& m : memory) {
    std::printf("  rank %d %-24s peak %lld bytes at %.3f ms (%zu samples)\n", m.rank,
                m.name.c_str(), static_cast<long long>(m.peakBytes), ms(m.peakAtNs),
                m.points.size());
  }
  std::printf("\nStragglers (arrival at collectives after the earliest rank)\n");
  const auto stragglers = computeStragglers(t);
  if (stragglers.empty()) std::printf("  (no collective seen on two or more ranks)\n");
  for (const auto& s : stragglers) {
    std::printf("  rank %d: last in %lld of %lld collectives, late by %.3f ms mean, %.3f ms max\n",
                s.rank, static_cast<long long>(s.timesLast), static_cast<long long>(s.collectives),
                ms(s.meanLatenessNs), ms(s.maxLatenessNs));
  }
}

}  // namespace

void registerAnalyzeCommand(CLI::App& app) {
  auto o = std::make_shared<AnalyzeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Breakdown, bubbles, communication, memory peaks and stragglers of traces");
  cmd->add_option(
         "traces", o->traces,
         "ParaScope or PyTorch profiler traces (.json or .json.gz), one per rank or merged")
      ->required();
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] {
    const TraceData t = importChromeTraces(o->traces);
    if (o->json) {
      printJson(t, *o);
    } else {
      printText(t, *o);
    }
  });
}

}  // namespace parascope::cli
