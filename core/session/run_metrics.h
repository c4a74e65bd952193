// The run metrics, defined once for every figure that shows them (the workbench's charts and
// Compare table, the step benchmarks), from the session's step reports (StepReport: rank 0's
// onStep for tokens and time, every rank's onRankStep for communication and pipeline idle time).
// Model FLOPs per token are the model's own (modelFlopsPerToken, StartReport::flopsPerToken);
// the peak is one thread's sgemm rate (core/kernels/sgemm_peak.h). NaN means "no value".
#pragma once

#include "core/train/step_report.h"

namespace parascope {

// Tokens (targets) per second of wall time; NaN unless seconds > 0.
double tokensPerSecond(double tokens, double seconds);
// Model FLOP/s achieved by all ranks together: tokens/s x model FLOPs per token.
double modelFlopsPerSecond(double tokensPerSecond, double flopsPerToken);
// Model FLOPs utilisation, a fraction: tokens/s x FLOPs/token / (peak FLOP/s per rank x ranks);
// NaN unless the rate, the FLOPs per token, the peak and the ranks are all positive.
double modelFlopsUtilization(double tokensPerSecond, double flopsPerToken, double peakFlops,
                             int ranks);
// One rank's exposed-communication fraction: exposed communication seconds / step seconds; NaN
// unless seconds > 0.
double exposedCommFraction(double exposedSeconds, double seconds);
// Pipeline bubble fraction: idle seconds / (busy + idle) seconds of pipeline compute; 0 without a
// pipeline (both 0).
double bubbleFraction(double busySeconds, double idleSeconds);

// The metrics of a run of steps (one step, a segment between live switches, a whole run).
class RunMetrics {
 public:
  void addStep(const StepReport& step);      // rank 0's report: tokens and seconds
  void addRankStep(const StepReport& rank);  // every rank's report of every step

  int steps() const { return steps_; }
  // All tokens over all steps' seconds; NaN before a step.
  double tokensPerSecond() const;
  // modelFlopsUtilization of tokensPerSecond().
  double mfu(double flopsPerToken, double peakFlops, int ranks) const;
  // Mean over rank reports of exposedCommFraction; NaN before one.
  double exposedCommFraction() const;
  // bubbleFraction of all rank reports' pipeline busy and idle seconds.
  double bubbleFraction() const;

 private:
  int steps_ = 0;
  double tokens_ = 0, seconds_ = 0;
  double exposedSum_ = 0;  // exposedCommFraction summed over the rank reports that have one
  int exposedCount_ = 0;
  double busy_ = 0, idle_ = 0;
};

}  // namespace parascope
