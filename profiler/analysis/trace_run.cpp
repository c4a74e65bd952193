#include "profiler/analysis/trace_run.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>

#include "core/common/error.h"
#include "core/config/config.h"
#include "core/config/ps_config.h"
#include "core/session/run_summary.h"

namespace parascope::profiler {

namespace {

struct RunShape {
  std::string strategy;
  double tokensPerStep = 0;
  double flopsPerToken = 0;
};

// A threads run's config holds its world; an mpirun's may leave it to the world it ran on.
TrainConfig parseRecorded(const nlohmann::json& doc, int worldSize) {
  try {
    return parseTrainConfig(doc);
  } catch (const UserError&) {
    return parseTrainConfig(doc, worldSize);
  }
}

std::optional<RunShape> shapeOf(const std::string& configText, int worldSize) {
  if (configText.empty()) return std::nullopt;
  const nlohmann::json doc = nlohmann::json::parse(configText, nullptr, false);
  if (doc.is_discarded()) return std::nullopt;
  RunShape s;
  try {
    if (isPsConfig(doc)) {
      const PsConfig c = parsePsConfig(doc);
      s.tokensPerStep = static_cast<double>(c.targetsPerWorkerStep()) * c.ps.workers;
      s.flopsPerToken = c.isGpt() ? c.gpt.flopsPerToken() : 0.0;
      const ParameterServerSpec& p = c.ps;
      s.strategy = p.mode == PsMode::Collective
                       ? "collective, " + std::to_string(p.workers) + " workers"
                       : std::string("parameter servers ") + psModeName(p.mode) + ", " +
                             std::to_string(p.servers) + " + " + std::to_string(p.workers);
      return s;
    }
    const TrainConfig c = parseRecorded(doc, worldSize);
    s.tokensPerStep = static_cast<double>(c.globalBatch) * c.model.kind->targetsPerSample(c.model);
    s.flopsPerToken = modelFlopsPerToken(c);
    s.strategy = describeStrategy(c);
  } catch (const UserError&) {
    return std::nullopt;  // a config this build no longer reads
  }
  return s;
}

// The memory category a counter of the trace names; kMemoryCategoryCount for none.
std::size_t categoryOf(const std::string& name) {
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
    if (memoryCategoryName(static_cast<MemoryCategory>(c)) == name) return c;
  }
  return kMemoryCategoryCount;
}

// The most `series` held during [from, to]: its value when the window opens, then each sample in
// it (found by time: a long run's counters are not read once per step).
std::int64_t peakWithin(const MemorySeries& series, std::int64_t from, std::int64_t to) {
  const auto& points = series.points;
  auto it = std::upper_bound(points.begin(), points.end(), from,
                             [](std::int64_t t, const MemoryPoint& p) { return t < p.timeNs; });
  std::int64_t peak = it == points.begin() ? 0 : std::prev(it)->bytes;
  for (; it != points.end() && it->timeNs <= to; ++it) peak = std::max(peak, it->bytes);
  return peak;
}

}  // namespace

std::optional<TraceRun> traceRun(const TraceAnalysis& a) {
  const TraceData& trace = *a.trace;
  const std::optional<RunShape> shape = shapeOf(trace.runConfig, trace.worldSize);
  if (!shape) return std::nullopt;
  // Each step's window over all ranks, and each rank's own.
  struct Window {
    std::int64_t start = std::numeric_limits<std::int64_t>::max(), end = 0;
  };
  std::map<std::int32_t, Window> steps;
  std::map<std::pair<std::int32_t, std::int32_t>, Window> rankSteps;  // (rank, step)
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::Span || e.category != Category::Step || e.step < 0) continue;
    for (Window* w : {&steps[e.step], &rankSteps[{e.rank, e.step}]}) {
      w->start = std::min(w->start, e.startNs);
      w->end = std::max(w->end, e.endNs);
    }
  }
  if (steps.empty()) return std::nullopt;
  TraceRun run;
  run.strategy = shape->strategy;
  run.ranks = static_cast<int>(trace.ranks().size());
  run.flopsPerToken = shape->flopsPerToken;
  for (const auto& [step, w] : steps) {
    StepReport r;
    r.step = step;
    r.tokens = static_cast<std::int64_t>(shape->tokensPerStep);
    r.seconds = static_cast<double>(w.end - w.start) * 1e-9;
    r.loss = std::numeric_limits<double>::quiet_NaN();
    run.steps.push_back(r);
  }
  std::map<std::pair<std::int32_t, std::int32_t>, StepReport> reports;
  for (const auto& [key, w] : rankSteps) {
    StepReport& r = reports[key];
    r.rank = key.first;
    r.step = key.second;
    r.seconds = static_cast<double>(w.end - w.start) * 1e-9;
    for (const MemorySeries& series : a.memory) {
      const std::size_t c = categoryOf(series.name);
      if (series.rank != key.first || c == kMemoryCategoryCount) continue;
      r.peakBytes[c] = std::max(r.peakBytes[c], peakWithin(series, w.start, w.end));
    }
  }
  for (const StepBreakdown& b : a.breakdown) {
    const auto it = reports.find({b.rank, b.step});
    if (it != reports.end())
      it->second.exposedCommSeconds = static_cast<double>(b.exposedCommunicationNs) * 1e-9;
  }
  for (const StageBubble& b : a.bubbles) {
    const auto it = reports.find({b.rank, b.step});
    if (it == reports.end()) continue;
    it->second.pipelineBusySeconds = static_cast<double>(b.busyNs) * 1e-9;
    it->second.pipelineIdleSeconds = static_cast<double>(b.bubbleNs) * 1e-9;
  }
  for (auto& [key, r] : reports) run.rankSteps.push_back(r);
  // A rank that runs no steps (a parameter server) still holds memory: its peaks over the whole
  // run, in a report without time (so no exposed communication of its own).
  std::map<std::int32_t, StepReport> stepless;
  for (const MemorySeries& series : a.memory) {
    const std::size_t c = categoryOf(series.name);
    if (c == kMemoryCategoryCount) continue;
    const bool hasSteps = std::any_of(rankSteps.begin(), rankSteps.end(),
                                      [&](const auto& w) { return w.first.first == series.rank; });
    if (hasSteps) continue;
    StepReport& r = stepless[series.rank];
    r.rank = series.rank;
    r.step = -1;
    r.peakBytes[c] = std::max(r.peakBytes[c], series.peakBytes);
  }
  for (auto& [rank, r] : stepless) run.rankSteps.push_back(r);
  return run;
}

std::optional<TrainConfig> recordedTrainConfig(const TraceData& trace) {
  if (trace.runConfig.empty()) return std::nullopt;
  const nlohmann::json doc = nlohmann::json::parse(trace.runConfig, nullptr, false);
  if (doc.is_discarded() || isPsConfig(doc)) return std::nullopt;
  try {
    return parseRecorded(doc, trace.worldSize);
  } catch (const UserError&) {
    return std::nullopt;
  }
}

}  // namespace parascope::profiler
