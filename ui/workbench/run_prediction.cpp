// An ended run's segments predicted; see run_prediction.h.
#include "ui/workbench/run_prediction.h"

#include <cmath>
#include <exception>

#include "core/plan/simulator.h"
#include "profiler/io/chrome_export.h"

namespace parascope::ui {

std::vector<PredictedSegment> predictRun(const SystemDescription& system,
                                         const profiler::TraceData& measured,
                                         const std::vector<SegmentToPredict>& segments) {
  std::vector<PredictedSegment> out;
  for (const SegmentToPredict& segment : segments) {
    PredictedSegment result{segment, {}, {}};
    StrategyPlan plan;
    Simulation simulation;
    try {
      plan = planStrategy(segment.config);
      simulation = simulateStep(plan, CostModel(system, plan));
    } catch (const std::exception& e) {
      result.failure = e.what();
      out.push_back(std::move(result));
      continue;
    }
    profiler::TraceData predicted;
    predicted.worldSize = segment.config.parallel.worldSize();
    predicted.events = predictedEvents(plan, simulation, segment.lastStep - segment.firstStep + 1);
    predicted.adoptNames();
    profiler::exportChromeTrace(predicted, segment.predictedTrace);
    // The segment's steps only: the trace holds every segment of the run, and instruction ids
    // are those of each segment's own programs.
    std::vector<trace::Event> steps;
    for (const trace::Event& e : measured.events) {
      if (e.step >= segment.firstStep && e.step <= segment.lastStep) steps.push_back(e);
    }
    result.comparison = comparePrediction(plan, simulation, steps);
    out.push_back(std::move(result));
  }
  return out;
}

const PredictedSegment* mostMispredicted(const std::vector<PredictedSegment>& predictions,
                                         double beyond) {
  const PredictedSegment* worst = nullptr;
  for (const PredictedSegment& p : predictions) {
    if (!p.failure.empty() || p.comparison.measuredStepSeconds <= 0) continue;
    const double error = std::abs(p.comparison.stepError());
    if (error > beyond && (!worst || error > std::abs(worst->comparison.stepError()))) worst = &p;
  }
  return worst;
}

}  // namespace parascope::ui
