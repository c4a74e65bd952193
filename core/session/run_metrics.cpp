#include "core/session/run_metrics.h"

#include <cmath>
#include <limits>

namespace parascope {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double tokensPerSecond(double tokens, double seconds) {
  return seconds > 0 ? tokens / seconds : kNaN;
}

double modelFlopsPerSecond(double tokensPerSecond, double flopsPerToken) {
  return tokensPerSecond * flopsPerToken;
}

double modelFlopsUtilization(double tokensPerSecond, double flopsPerToken, double peakFlops,
                             int ranks) {
  const bool defined = tokensPerSecond > 0 && flopsPerToken > 0 && peakFlops > 0 && ranks > 0;
  return defined ? modelFlopsPerSecond(tokensPerSecond, flopsPerToken) / (peakFlops * ranks) : kNaN;
}

double exposedCommFraction(double exposedSeconds, double seconds) {
  return seconds > 0 ? exposedSeconds / seconds : kNaN;
}

double bubbleFraction(double busySeconds, double idleSeconds) {
  const double total = busySeconds + idleSeconds;
  return total > 0 ? idleSeconds / total : 0.0;
}

void RunMetrics::addStep(const StepReport& step) {
  ++steps_;
  tokens_ += static_cast<double>(step.tokens);
  seconds_ += step.seconds;
}

void RunMetrics::addRankStep(const StepReport& rank) {
  const double exposed = parascope::exposedCommFraction(rank.exposedCommSeconds, rank.seconds);
  if (!std::isnan(exposed)) {
    exposedSum_ += exposed;
    ++exposedCount_;
  }
  busy_ += rank.pipelineBusySeconds;
  idle_ += rank.pipelineIdleSeconds;
}

double RunMetrics::tokensPerSecond() const {
  return parascope::tokensPerSecond(tokens_, seconds_);
}

double RunMetrics::mfu(double flopsPerToken, double peakFlops, int ranks) const {
  return modelFlopsUtilization(tokensPerSecond(), flopsPerToken, peakFlops, ranks);
}

double RunMetrics::exposedCommFraction() const {
  return exposedCount_ > 0 ? exposedSum_ / exposedCount_ : kNaN;
}

double RunMetrics::bubbleFraction() const {
  return parascope::bubbleFraction(busy_, idle_);
}

}  // namespace parascope
