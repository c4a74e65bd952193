// parascope-cli bench trace: what tracing costs. Cost per span recorded (and per span while
// tracing is off), and export / import throughput of a 1-million-event trace. Each measurement
// is one function in kMeasurements; the training-step overhead of tracing joins that table as
// one more entry once the engine records its spans. A benchmark prints figures, never fails.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/trace/trace.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"
#include "profiler/tracer.h"

namespace parascope::cli {

namespace {

using namespace parascope::profiler;

struct BenchTraceOptions {
  std::int64_t events = 1'000'000;
  std::string dir = std::filesystem::temp_directory_path().string();
  bool json = false;
};

struct Figure {
  std::string measure;
  double value;
  std::string unit;
  std::string target;  // empty: none
};

using Measurement = std::vector<Figure> (*)(const BenchTraceOptions&);

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Spans through the full path: context stamp, two clock reads, the virtual record() and the
// per-thread buffer. The first round writes into fresh memory (page faults included); later
// rounds follow a drain, as a run that drains every step does, and reuse the buffers. Best of
// five warm rounds of 1M spans.
std::vector<Figure> measureSpanCost(const BenchTraceOptions&) {
  constexpr int kSpans = 1'000'000;
  Tracer tracer;
  tracer.install();
  auto round = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kSpans; ++i) {
      trace::Span s("bench.span", trace::Category::Compute);
    }
    const double ns = secondsSince(t0) * 1e9 / kSpans;
    tracer.drain();
    return ns;
  };
  const double cold = round();
  double warm = 1e30;
  for (int r = 0; r < 5; ++r) warm = std::min(warm, round());
  tracer.uninstall();

  constexpr int kOff = 50'000'000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kOff; ++i) {
    trace::Span s("bench.off", trace::Category::Compute);
    s.bytes(i);
  }
  const double off = secondsSince(t0) * 1e9 / kOff;
  return {{"span_cost", warm, "ns", "<= 20"},
          {"span_cost_fresh_memory", cold, "ns", ""},
          {"span_cost_tracing_off", off, "ns", ""}};
}

// A trace shaped like a training run: 8 ranks, compute, communication with peers and bytes,
// pipeline tags, launch correlations and memory counters.
TraceData syntheticTrace(std::int64_t n) {
  static const char* const kNames[] = {"forward",   "backward",  "matmul",  "layernorm",
                                       "attention", "allReduce", "send",    "recv",
                                       "optimizer", "gelu",      "softmax", "embedding"};
  TraceData t;
  t.worldSize = 8;
  t.events.reserve(static_cast<std::size_t>(n));
  std::int64_t clock = 1'700'000'000'000'000'000;
  for (std::int64_t i = 0; i < n; ++i) {
    Event e;
    e.rank = static_cast<std::int32_t>(i % 8);
    e.name = kNames[i % 12];
    e.category = i % 12 >= 5 && i % 12 <= 7 ? Category::Communication : Category::Compute;
    e.lane =
        e.category == Category::Communication ? trace::lane::kCommunication : trace::lane::kCompute;
    clock += 1 + i % 977;
    e.startNs = clock;
    e.endNs = clock + 1000 + i % 50'000;
    e.step = static_cast<std::int32_t>(i / 100'000);
    e.microBatch = static_cast<std::int32_t>(i % 4);
    e.stage = e.rank / 2;
    e.instruction = static_cast<std::int32_t>(i % 1000);
    if (e.category == Category::Communication) {
      e.bytes = 4096 * (1 + i % 64);
      e.peer = (e.rank + 1) % 8;
    }
    if (i % 10 == 0) e.correlation = static_cast<std::uint64_t>(i + 1);
    if (i % 20 == 0) {
      e.kind = EventKind::Counter;
      e.category = Category::Memory;
      e.name = "activation";
      e.endNs = e.startNs;
      e.bytes = i * 64;
    }
    t.events.push_back(e);
  }
  t.adoptNames();
  t.sortByTime();  // as Tracer::collect() hands it over
  return t;
}

std::vector<Figure> measureExportImport(const BenchTraceOptions& o) {
  const TraceData t = syntheticTrace(o.events);
  const std::string path = o.dir + "/parascope-bench-trace-" + std::to_string(::getpid()) + ".json";
  double exportBest = 1e30, importBest = 1e30;
  std::size_t bytes = 0, imported = 0;
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    bytes = exportChromeTrace(t, path);
    exportBest = std::min(exportBest, secondsSince(t0));
    t0 = std::chrono::steady_clock::now();
    imported = importChromeTrace(path).events.size();
    importBest = std::min(importBest, secondsSince(t0));
  }
  std::filesystem::remove(path);
  const double mb = static_cast<double>(bytes) / 1e6;
  return {{"trace_events", static_cast<double>(imported), "events", ""},
          {"trace_file_size", mb, "MB", ""},
          {"export_throughput", mb / exportBest, "MB/s", ">= 200"},
          {"import_throughput", mb / importBest, "MB/s", ">= 300"},
          {"export_event_rate", static_cast<double>(t.events.size()) / exportBest / 1e6,
           "Mevents/s", ""},
          {"import_event_rate", static_cast<double>(imported) / importBest / 1e6, "Mevents/s", ""}};
}

constexpr Measurement kMeasurements[] = {measureSpanCost, measureExportImport};

void runBenchTrace(const BenchTraceOptions& o) {
  for (Measurement m : kMeasurements) {
    for (const Figure& f : m(o)) {
      if (o.json) {
        nlohmann::json j{
            {"bench", "trace"}, {"measure", f.measure}, {"value", f.value}, {"unit", f.unit}};
        if (!f.target.empty()) j["target"] = f.target;
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf("%-24s %12.2f %-10s %s\n", f.measure.c_str(), f.value, f.unit.c_str(),
                    f.target.empty() ? "" : ("target " + f.target).c_str());
      }
      std::fflush(stdout);
    }
  }
}

}  // namespace

void registerBenchTraceCommand(CLI::App& bench) {
  auto o = std::make_shared<BenchTraceOptions>();
  CLI::App* cmd =
      bench.add_subcommand("trace", "Cost of tracing: per span, export and import speed");
  cmd->add_option("--events", o->events, "Events in the export/import trace")
      ->check(CLI::Range(std::int64_t{1000}, std::int64_t{100'000'000}));
  cmd->add_option("--dir", o->dir, "Directory for the temporary trace file")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] { runBenchTrace(*o); });
}

}  // namespace parascope::cli
