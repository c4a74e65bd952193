// Pipeline step benchmark. Steps are timed untraced; a few more run under the tracer, whose
// instruction spans give the mean duration of each compute op for the ideal-bubble formula
// (ZB-H1's depends on the forward, B and W times). A benchmark prints figures; it never fails.
#include "bench/step_pipeline.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/session.h"
#include "core/config/config_keys.h"
#include "core/parallel/schedule.h"
#include "core/session/run_metrics.h"
#include "profiler/analysis/bubbles.h"
#include "profiler/tracer.h"

namespace parascope::bench {

namespace {

constexpr int kTracedSteps = 2;

// The compute ops (F, B, Bi, W) that ran in the traced steps, with their mean durations.
std::string seenOps(const profiler::TraceData& trace, const StepDurations& d) {
  std::set<std::string_view> ran;
  for (const trace::Event& e : trace.events) {
    if (e.category == trace::Category::Instruction && e.kind == trace::EventKind::Span) {
      ran.insert(e.name);
    }
  }
  const std::pair<const char*, double> ops[] = {
      {"F", d.forward}, {"B", d.backward}, {"Bi", d.backwardInput}, {"W", d.backwardWeight}};
  std::string seen;
  for (const auto& [op, seconds] : ops) {
    if (ran.count(op) == 0) continue;
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%s %.2f ms", seen.empty() ? "" : ", ", op, seconds * 1e3);
    seen += buf;
  }
  return seen;
}

void printFigures(const TrainConfig& config, const BenchRun& run, const StepDurations& durations,
                  const std::string& seen, int steps, bool json, double sgemmPeak) {
  const std::vector<RankFigures>& figures = run.ranks;
  const std::int64_t tokens = run.tokensPerStep;
  const int ranks = static_cast<int>(figures.size());
  const PipelineShape shape{config.parallel.pipeline, config.gradientAccumulation,
                            config.pipeline.chunks};
  const double ideal = findSchedule(config.pipeline.schedule).idealBubble(shape, durations);
  const double median = run.medianSeconds;
  const double tokensPerSecond = parascope::tokensPerSecond(static_cast<double>(tokens), median);
  const double mfu =
      modelFlopsUtilization(tokensPerSecond, config.model.gpt.flopsPerToken(), sgemmPeak, ranks);
  const std::string recompute(recomputeName(config.pipeline.recompute));
  if (json) {
    nlohmann::json line = {{"bench", "step_pipeline"},
                           {"ranks", ranks},
                           {"tokens_per_step", tokens},
                           {"step_time_median_s", median},
                           {"tokens_per_s", tokensPerSecond},
                           {"mfu", mfu},
                           {"ideal_bubble", ideal}};
    for (const auto& [key, value] : strategySettings(config)) line[key] = value;
    std::printf("%s\n", line.dump().c_str());
  } else {
    std::printf(
        "GPT: %d layers, width %d, context %d; pipeline %d x data %d x tensor %d%s ranks "
        "(threads), schedule %s (v=%d), %d micro-batches of %d, recompute %s\n",
        config.model.gpt.numLayers, config.model.gpt.hiddenSize, config.model.gpt.contextLength,
        shape.stages, config.parallel.data, config.parallel.tensor,
        config.parallel.sequenceParallel ? " (sequence-parallel)" : "",
        config.pipeline.schedule.c_str(), shape.chunks, shape.microBatches, config.microBatch,
        recompute.c_str());
    std::printf("step time            %.2f ms median over %d steps\n", median * 1e3, steps);
    std::printf("throughput           %.0f tokens/s\n", tokensPerSecond);
    std::printf("MFU                  %.1f%% of %d x single-thread sgemm peak (%.2f GFLOP/s)\n",
                100.0 * mfu, ranks, sgemmPeak / 1e9);
    std::printf("ideal bubble         %.3f (%s formula; mean %s)\n", ideal,
                config.pipeline.schedule.c_str(), seen.c_str());
    std::printf("\n  rank  stage  busy ms/step  idle ms/step  idle frac  ideal  peak activ MiB\n");
  }
  for (int r = 0; r < ranks; ++r) {
    const RankFigures& f = figures[static_cast<std::size_t>(r)];
    const double fraction = bubbleFraction(f.busy, f.idle);
    if (json) {
      std::printf("%s\n",
                  nlohmann::json{{"bench", "step_pipeline_rank"},
                                 {"rank", r},
                                 {"pipeline_rank", f.pipelineRank},
                                 {"busy_s_per_step", f.busy / steps},
                                 {"idle_s_per_step", f.idle / steps},
                                 {"idle_fraction", fraction},
                                 {"ideal_bubble", ideal},
                                 {"peak_activation_bytes",
                                  f.peak[static_cast<std::size_t>(MemoryCategory::Activation)]}}
                      .dump()
                      .c_str());
    } else {
      std::printf(
          "  %4d  %5d  %12.2f  %12.2f  %9.3f  %5.3f  %14.2f\n", r, f.pipelineRank,
          f.busy / steps * 1e3, f.idle / steps * 1e3, fraction, ideal,
          static_cast<double>(f.peak[static_cast<std::size_t>(MemoryCategory::Activation)]) /
              (1 << 20));
    }
  }
}

}  // namespace

void runBenchStepPipeline(const TrainConfig& config, int steps, int warmup, bool json,
                          double sgemmPeak) {
  profiler::Tracer tracer;
  const BenchRun run = runBenchSession(config, warmup, steps, kTracedSteps, &tracer);
  const profiler::TraceData trace = tracer.collect();
  const StepDurations durations = profiler::meanInstructionDurations(trace);
  printFigures(config, run, durations, seenOps(trace, durations), steps, json, sgemmPeak);
}

}  // namespace parascope::bench
