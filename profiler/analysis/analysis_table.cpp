// Each analysis as rows (its fields named as `analyze --json` has always printed them) and as
// `analyze`'s text; the text is printed from the rows, so the two cannot disagree.
#include "profiler/analysis/analysis_table.h"

#include <cstdio>
#include <string>

#include "profiler/analysis/breakdown.h"
#include "profiler/analysis/bubbles.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/file_io.h"
#include "profiler/analysis/gpu_kernels.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/ps_load.h"
#include "profiler/analysis/stragglers.h"

namespace parascope::profiler {

namespace {

using nlohmann::json;
using Rows = std::vector<json>;

double ms(const json& ns) {
  return ns.get<double>() / 1e6;
}
long long count(const json& n) {
  return n.get<long long>();
}

Rows breakdownRows(const TraceData& t) {
  Rows rows;
  for (const StepBreakdown& b : computeBreakdown(t)) {
    rows.push_back({{"rank", b.rank},
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
  return rows;
}

void breakdownText(const TraceData&, const Rows& rows) {
  std::printf("\nTime per rank and step (ms; exposed = communication not overlapped by compute)\n");
  std::printf("%5s %6s %4s %10s %10s %10s %10s %10s %10s %8s\n", "rank", "step", "dev", "window",
              "compute", "comm", "exposed", "other", "idle", "overlap");
  for (const json& b : rows) {
    std::printf("%5lld %6lld %4s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %7.1f%%\n",
                count(b["rank"]), count(b["step"]), b["device"].get<std::string>().c_str(),
                ms(b["window_ns"]), ms(b["compute_ns"]), ms(b["communication_ns"]),
                ms(b["exposed_communication_ns"]), ms(b["other_ns"]), ms(b["idle_ns"]),
                100 * b["overlap_ratio"].get<double>());
  }
}

Rows gpuKernelRows(const TraceData& t) {
  Rows rows;
  for (const GpuKernelStats& k : computeGpuKernels(t)) {
    rows.push_back({{"rank", k.rank},
                    {"kernel", k.name},
                    {"launches", k.launches},
                    {"total_ns", k.totalNs},
                    {"mean_ns", k.meanNs()},
                    {"max_ns", k.maxNs},
                    {"gpu_busy_ns", k.rankBusyNs},
                    {"busy_share", k.busyShare()}});
  }
  return rows;
}

// The longest-running kernels of each rank; the rest in one line.
void gpuKernelText(const TraceData&, const Rows& rows) {
  constexpr int kShown = 12;
  std::printf("\nGPU kernels (per rank, by total time; share = of the GPU's busy time)\n");
  if (rows.empty()) std::printf("  (no GPU kernels recorded)\n");
  for (std::size_t i = 0; i < rows.size();) {
    const long long rank = count(rows[i]["rank"]);
    std::printf("  rank %lld, GPU busy %.3f ms\n", rank, ms(rows[i]["gpu_busy_ns"]));
    std::printf("  %9s %10s %9s %9s %6s  %s\n", "launches", "total ms", "mean us", "max us",
                "share", "kernel");
    int shown = 0;
    long long restKernels = 0;
    double restMs = 0;
    for (; i < rows.size() && count(rows[i]["rank"]) == rank; ++i) {
      const json& k = rows[i];
      if (shown++ < kShown) {
        std::printf("  %9lld %10.3f %9.1f %9.1f %5.1f%%  %s\n", count(k["launches"]),
                    ms(k["total_ns"]), ms(k["mean_ns"]) * 1e3, ms(k["max_ns"]) * 1e3,
                    100 * k["busy_share"].get<double>(),
                    withoutParameters(demangledKernelName(k["kernel"].get<std::string>())).c_str());
      } else {
        ++restKernels;
        restMs += ms(k["total_ns"]);
      }
    }
    if (restKernels > 0) std::printf("  (%lld more kernels, %.3f ms)\n", restKernels, restMs);
  }
}

Rows bubbleRows(const TraceData& t) {
  Rows rows;
  for (const StageBubble& b : computeBubbles(t)) {
    rows.push_back({{"step", b.step},
                    {"stage", b.stage},
                    {"rank", b.rank},
                    {"window_ns", b.windowNs},
                    {"busy_ns", b.busyNs},
                    {"bubble_ns", b.bubbleNs},
                    {"bubble_fraction", b.bubbleFraction}});
  }
  return rows;
}

void bubbleText(const TraceData&, const Rows& rows) {
  std::printf("\nPipeline bubbles\n");
  if (rows.empty()) std::printf("  (no events tagged with a pipeline stage)\n");
  for (const json& b : rows) {
    std::printf("  step %lld stage %lld rank %lld: bubble %.3f of %.3f ms (%.1f%%)\n",
                count(b["step"]), count(b["stage"]), count(b["rank"]), ms(b["bubble_ns"]),
                ms(b["window_ns"]), 100 * b["bubble_fraction"].get<double>());
  }
}

Rows commMatrixRows(const TraceData& t) {
  Rows rows;
  for (const auto& [pair, bytes] : computeCommVolume(t).matrix.cells) {
    rows.push_back({{"src", pair.first}, {"dst", pair.second}, {"bytes", bytes}});
  }
  return rows;
}

void commMatrixText(const TraceData& t, const Rows& rows) {
  std::printf("\nCommunication matrix (bytes sent, row = sender, column = receiver)\n");
  const CommMatrix matrix = computeCommVolume(t).matrix;
  if (matrix.ranks.empty()) {
    std::printf("  (no communication with peers recorded)\n");
  } else if (matrix.ranks.size() <= 16) {
    std::printf("%6s", "");
    for (std::int32_t dst : matrix.ranks) std::printf(" %12d", dst);
    std::printf("\n");
    for (std::int32_t src : matrix.ranks) {
      std::printf("%6d", src);
      for (std::int32_t dst : matrix.ranks) {
        std::printf(" %12lld", static_cast<long long>(matrix.at(src, dst)));
      }
      std::printf("\n");
    }
  } else {
    for (const json& c : rows) {
      std::printf("  %lld -> %lld  %lld\n", count(c["src"]), count(c["dst"]), count(c["bytes"]));
    }
  }
}

Rows commOpRows(const TraceData& t) {
  Rows rows;
  for (const OpTotal& op : computeCommVolume(t).ops) {
    rows.push_back(
        {{"name", op.name}, {"count", op.count}, {"bytes", op.bytes}, {"time_ns", op.timeNs}});
  }
  return rows;
}

void commOpText(const TraceData&, const Rows& rows) {
  std::printf("\nCommunication per operation\n%-40s %8s %14s %12s\n", "operation", "count", "bytes",
              "time ms");
  for (const json& op : rows) {
    std::printf("%-40s %8lld %14lld %12.3f\n", op["name"].get<std::string>().c_str(),
                count(op["count"]), count(op["bytes"]), ms(op["time_ns"]));
  }
}

Rows memoryRows(const TraceData& t) {
  Rows rows;
  for (const MemorySeries& m : computeMemoryTimeline(t)) {
    rows.push_back({{"rank", m.rank},
                    {"name", m.name},
                    {"peak_bytes", m.peakBytes},
                    {"peak_at_ns", m.peakAtNs},
                    {"samples", m.points.size()}});
  }
  return rows;
}

void memoryText(const TraceData&, const Rows& rows) {
  std::printf("\nMemory peaks\n");
  if (rows.empty()) std::printf("  (no memory counters)\n");
  for (const json& m : rows) {
    std::printf("  rank %lld %-24s peak %lld bytes at %.3f ms (%lld samples)\n", count(m["rank"]),
                m["name"].get<std::string>().c_str(), count(m["peak_bytes"]), ms(m["peak_at_ns"]),
                count(m["samples"]));
  }
}

Rows fileIoRows(const TraceData& t) {
  Rows rows;
  for (const FileIo& f : computeFileIo(t)) {
    rows.push_back({{"rank", f.rank},
                    {"file", f.file},
                    {"reads", f.reads},
                    {"read_bytes", f.readBytes},
                    {"writes", f.writes},
                    {"write_bytes", f.writeBytes},
                    {"outstanding_ns", f.outstandingNs},
                    {"queued_ns", f.queuedNs}});
  }
  return rows;
}

void fileIoText(const TraceData&, const Rows& rows) {
  std::printf("\nFile I/O (swap files)\n");
  if (rows.empty()) std::printf("  (no file I/O)\n");
  for (const json& f : rows) {
    std::printf(
        "  rank %lld %-16s read %lld x, %lld bytes; wrote %lld x, %lld bytes; outstanding %.3f "
        "ms, queued %.3f ms\n",
        count(f["rank"]), f["file"].get<std::string>().c_str(), count(f["reads"]),
        count(f["read_bytes"]), count(f["writes"]), count(f["write_bytes"]),
        ms(f["outstanding_ns"]), ms(f["queued_ns"]));
  }
}

Rows psServerRows(const TraceData& t) {
  Rows rows;
  for (const PsServerActivity& s : computePsActivity(t).servers) {
    rows.push_back({{"rank", s.rank},
                    {"pulls", s.pulls},
                    {"pushes", s.pushes},
                    {"rows_held", s.rowsHeld},
                    {"rows_pulled", s.rowsPulled},
                    {"rows_pushed", s.rowsPushed},
                    {"bytes_out", s.bytesOut},
                    {"bytes_in", s.bytesIn},
                    {"busy_ns", s.busyNs},
                    {"wait_ns", s.waitNs}});
  }
  return rows;
}

void psServerText(const TraceData&, const Rows& rows) {
  std::printf("\nParameter servers (load)\n");
  if (rows.empty()) std::printf("  (no parameter server)\n");
  for (const json& s : rows) {
    std::printf(
        "  rank %lld: %lld rows held; %lld pulls, %lld rows, %lld bytes out; %lld pushes, %lld "
        "rows, %lld bytes in; busy %.3f ms, waiting %.3f ms\n",
        count(s["rank"]), count(s["rows_held"]), count(s["pulls"]), count(s["rows_pulled"]),
        count(s["bytes_out"]), count(s["pushes"]), count(s["rows_pushed"]), count(s["bytes_in"]),
        ms(s["busy_ns"]), ms(s["wait_ns"]));
  }
}

Rows psWorkerRows(const TraceData& t) {
  Rows rows;
  for (const PsWorkerActivity& w : computePsActivity(t).workers) {
    rows.push_back({{"rank", w.rank},
                    {"pulls", w.pulls},
                    {"pushes", w.pushes},
                    {"pull_ns", w.pullNs},
                    {"push_ns", w.pushNs},
                    {"stale_pushes", w.stalePushes},
                    {"staleness_mean_pushes", w.stalenessMean},
                    {"staleness_max_pushes", w.stalenessMax}});
  }
  return rows;
}

void psWorkerText(const TraceData&, const Rows& rows) {
  std::printf(
      "\nParameter-server workers (staleness: pushes a server applied between a pull and "
      "its push)\n");
  if (rows.empty()) std::printf("  (no parameter-server worker)\n");
  for (const json& w : rows) {
    std::printf("  rank %lld: %lld pulls %.3f ms, %lld pushes %.3f ms", count(w["rank"]),
                count(w["pulls"]), ms(w["pull_ns"]), count(w["pushes"]), ms(w["push_ns"]));
    if (count(w["stale_pushes"]) > 0) {
      std::printf("; staleness %.2f mean, %lld max over %lld pushes",
                  w["staleness_mean_pushes"].get<double>(), count(w["staleness_max_pushes"]),
                  count(w["stale_pushes"]));
    }
    std::printf("\n");
  }
}

Rows stragglerRows(const TraceData& t) {
  Rows rows;
  for (const StragglerStats& s : computeStragglers(t)) {
    rows.push_back({{"rank", s.rank},
                    {"collectives", s.collectives},
                    {"times_last", s.timesLast},
                    {"mean_lateness_ns", s.meanLatenessNs},
                    {"max_lateness_ns", s.maxLatenessNs}});
  }
  return rows;
}

void stragglerText(const TraceData&, const Rows& rows) {
  std::printf("\nStragglers (arrival at collectives after the earliest rank)\n");
  if (rows.empty()) std::printf("  (no collective seen on two or more ranks)\n");
  for (const json& s : rows) {
    std::printf(
        "  rank %lld: last in %lld of %lld collectives, late by %.3f ms mean, %.3f ms max\n",
        count(s["rank"]), count(s["times_last"]), count(s["collectives"]),
        ms(s["mean_lateness_ns"]), ms(s["max_lateness_ns"]));
  }
}

}  // namespace

const std::vector<AnalysisTable>& analysisTables() {
  static const std::vector<AnalysisTable> tables = {
      {"breakdown", "Time per rank and step", breakdownRows, breakdownText},
      {"gpu_kernel", "GPU kernels", gpuKernelRows, gpuKernelText},
      {"bubble", "Pipeline bubbles", bubbleRows, bubbleText},
      {"comm_matrix", "Communication matrix (bytes sent)", commMatrixRows, commMatrixText},
      {"comm_op", "Communication per operation", commOpRows, commOpText},
      {"memory_peak", "Memory peaks", memoryRows, memoryText},
      {"file_io", "File I/O (swap files)", fileIoRows, fileIoText},
      {"ps_server", "Parameter servers (load)", psServerRows, psServerText},
      {"ps_worker", "Parameter-server workers (staleness)", psWorkerRows, psWorkerText},
      {"straggler", "Stragglers (lateness at collectives)", stragglerRows, stragglerText},
  };
  return tables;
}

}  // namespace parascope::profiler
