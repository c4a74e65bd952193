// Calibration fits, each linear in the unknowns and weighted by 1 / measured, so that it
// minimises relative error (what MAPE counts). Every measured instruction is the fastest of its
// traced steps: anything else running on the machine only ever adds time.
#include "core/plan/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

#include "core/comm/collective_traits.h"
#include "core/common/error.h"
#include "core/common/statistics.h"
#include "core/plan/simulator.h"

namespace parascope {

namespace {

// Solves the normal equations of the chosen columns (Gaussian elimination with pivoting);
// false when they are singular.
bool solveColumns(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                  const std::vector<int>& cols, std::vector<double>& x) {
  const std::size_t k = cols.size();
  std::vector<std::vector<double>> a(k, std::vector<double>(k + 1, 0));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < k; ++i) {
      const double ri = rows[r][static_cast<std::size_t>(cols[i])];
      for (std::size_t j = 0; j < k; ++j)
        a[i][j] += ri * rows[r][static_cast<std::size_t>(cols[j])];
      a[i][k] += ri * y[r];
    }
  }
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < k; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (std::abs(a[pivot][c]) < 1e-300) return false;
    std::swap(a[c], a[pivot]);
    for (std::size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (std::size_t j = c; j <= k; ++j) a[r][j] -= f * a[c][j];
    }
  }
  x.assign(k, 0);
  for (std::size_t i = 0; i < k; ++i) x[i] = a[i][k] / a[i][i];
  return true;
}

double fastest(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

struct ComputeSample {
  ComputeFeatures features;
  DType compute;
  double seconds;
  int ranks;          // of its run, all computing at once
  bool dataParallel;  // its run's ranks are data-parallel replicas (no tensor or pipeline split)
};

bool isComputeName(std::string_view name) {
  return name == "F" || name == "B" || name == "Bi" || name == "W";
}

// Per (rank, instruction) of each run without tensor parallelism (its spans would hold
// collectives): its features and fastest measured duration.
std::vector<ComputeSample> computeSamples(const SystemDescription& system,
                                          const std::vector<TracedRun>& runs) {
  std::vector<ComputeSample> samples;
  for (const TracedRun& run : runs) {
    const ParallelStrategy& s = run.plan.config.parallel;
    if (s.tensor > 1) continue;
    std::map<std::pair<int, int>, std::vector<double>> spans;
    for (const trace::Event& e : run.events) {
      if (e.kind != trace::EventKind::Span || e.category != trace::Category::Instruction ||
          !isComputeName(e.name) || e.instruction < 0)
        continue;
      spans[{e.rank, e.instruction}].push_back(static_cast<double>(e.durationNs()) * 1e-9);
    }
    const CostModel costs(system, run.plan);
    for (const auto& [key, durations] : spans) {
      const RankPlan& rank =
          run.plan.ranks.at(static_cast<std::size_t>(key.first / run.plan.ranksPerPipelineRank()));
      const Instruction& in = rank.program.at(static_cast<std::size_t>(key.second));
      if (!in.isCompute()) continue;
      samples.push_back({costs.features(rank, in), s.compute, fastest(durations), s.worldSize(),
                         s.pipeline == 1});
    }
  }
  return samples;
}

// How many threads' worth of compute the cores give together: the same instructions timed in
// data-parallel runs (every rank computing at once) against single-rank runs. Where cores share
// execution units or memory bandwidth, busy threads each run below full speed. The start's
// cores when no run pairs up; never below 1 or above the start's.
double effectiveCores(double cores, const std::vector<ComputeSample>& samples) {
  std::vector<double> threads;
  for (const ComputeSample& busy : samples) {
    if (busy.ranks < 2 || !busy.dataParallel) continue;
    for (const ComputeSample& alone : samples) {
      const ComputeFeatures &a = alone.features, &b = busy.features;
      if (alone.ranks != 1 || alone.compute != busy.compute || a.forwardFlops != b.forwardFlops ||
          a.backwardFlops != b.backwardFlops || a.bytes != b.bytes)
        continue;
      threads.push_back(busy.ranks * alone.seconds / busy.seconds);
      break;
    }
  }
  if (threads.empty()) return cores;
  return std::clamp(median(threads), 1.0, cores);
}

double relativeError(double predicted, double measured) {
  return std::abs(predicted - measured) / measured;
}

// Fits the matrix-product rates of one precision and its cast cost (and, for fp32, the
// element-wise bandwidth and the instruction overhead, which the other precisions share; fp32
// casts nothing). Columns: forward flops, backward flops, flops over the smallest side, then
// bytes and 1 (fp32) or cast elements (mixed precision). When the shapes measured cannot tell
// two terms apart, the fit drops the efficiency curve, then merges forward and backward rates,
// then drops the bytes or casts.
void fitCompute(DeviceDescription& d, const std::vector<ComputeSample>& all, DType type,
                bool shared) {
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (const ComputeSample& s : all) {
    if (s.compute != type) continue;
    const double w = 1 / s.seconds;
    const ComputeFeatures& f = s.features;
    if (shared) {
      rows.push_back(
          {f.forwardFlops * w, f.backwardFlops * w, f.flopsOverDimension * w, f.bytes * w, w});
      y.push_back(1);
    } else {
      rows.push_back(
          {f.forwardFlops * w, f.backwardFlops * w, f.flopsOverDimension * w, f.castElements * w});
      y.push_back(1 - (f.bytes / d.elementwiseBandwidth + d.instructionOverhead) * w);
    }
  }
  if (rows.empty()) return;
  std::vector<double> x = nonNegativeLeastSquares(rows, y);
  if (x[0] <= 0 || x[1] <= 0) {
    for (std::vector<double>& row : rows) row[2] = 0;
    x = nonNegativeLeastSquares(rows, y);
  }
  if (x[0] <= 0 || x[1] <= 0) {
    for (std::vector<double>& row : rows) {
      row[0] += row[1];
      row[1] = 0;
    }
    x = nonNegativeLeastSquares(rows, y);
  }
  if (x[0] <= 0) {
    // The products' time is not told apart from the bytes or casts: products alone explain it.
    for (std::vector<double>& row : rows) row[3] = 0;
    x = nonNegativeLeastSquares(rows, y);
  }
  if (x[1] <= 0) x[1] = x[0];
  MatmulRate& m = type == DType::BF16  ? d.matmulBF16
                  : type == DType::F16 ? d.matmulF16
                                       : d.matmulF32;
  if (x[0] <= 0) throw UserError("calibration: the matrix products' time did not fit");
  m.peakFlops = 1 / x[0];
  m.backwardPeakFlops = 1 / x[1];
  m.halfDimension = x[2] / x[0];
  if (shared) {
    // A bandwidth the fit cannot see (element-wise time hidden in the products' noise) is
    // taken as effectively unlimited rather than zero.
    d.elementwiseBandwidth = x[3] > 0 ? 1 / x[3] : 1e15;
    d.instructionOverhead = x[4];
    m.castSeconds = 0;
  } else {
    m.castSeconds = x[3];
  }
}

}  // namespace

std::vector<double> nonNegativeLeastSquares(const std::vector<std::vector<double>>& rows,
                                            const std::vector<double>& targets) {
  const int n = rows.empty() ? 0 : static_cast<int>(rows.front().size());
  std::vector<double> best(static_cast<std::size_t>(n), 0);
  double bestResidual = std::numeric_limits<double>::infinity();
  for (int mask = 0; mask < (1 << n); ++mask) {
    std::vector<int> cols;
    for (int c = 0; c < n; ++c)
      if (mask & (1 << c)) cols.push_back(c);
    std::vector<double> x;
    if (!cols.empty() && !solveColumns(rows, targets, cols, x)) continue;
    if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
    std::vector<double> full(static_cast<std::size_t>(n), 0);
    for (std::size_t i = 0; i < cols.size(); ++i) full[static_cast<std::size_t>(cols[i])] = x[i];
    double residual = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      double p = 0;
      for (int c = 0; c < n; ++c)
        p += rows[r][static_cast<std::size_t>(c)] * full[static_cast<std::size_t>(c)];
      residual += (p - targets[r]) * (p - targets[r]);
    }
    if (residual < bestResidual) {
      bestResidual = residual;
      best = full;
    }
  }
  return best;
}

CalibrationFit calibrate(const SystemDescription& start, const std::vector<TracedRun>& runs,
                         const std::vector<CollectiveTiming>& collectives) {
  CalibrationFit fit;
  fit.system = start;
  SystemDescription& system = fit.system;
  DeviceDescription& d = system.device;

  const std::vector<ComputeSample> all = computeSamples(system, runs);
  d.cores = effectiveCores(d.cores, all);
  // The rates are those of a thread alone: runs with more ranks than whole cores time-slice.
  std::vector<ComputeSample> samples;
  for (const ComputeSample& s : all)
    if (s.ranks <= std::floor(d.cores + 1e-9)) samples.push_back(s);
  if (std::none_of(samples.begin(), samples.end(),
                   [](const ComputeSample& s) { return s.compute == DType::F32; }))
    throw UserError("calibration: no fp32 run with compute instructions to fit the device from");
  fitCompute(d, samples, DType::F32, true);
  for (DType t : {DType::BF16, DType::F16}) {
    const bool measured = std::any_of(samples.begin(), samples.end(),
                                      [t](const ComputeSample& s) { return s.compute == t; });
    if (measured)
      fitCompute(d, samples, t, false);
    else
      (t == DType::BF16 ? d.matmulBF16 : d.matmulF16) = d.matmulF32;
  }

  // The in-process link: latency per algorithm step and bus bandwidth, ring and tree alike.
  if (!collectives.empty()) {
    std::vector<std::vector<double>> rows;
    std::vector<double> y;
    for (const CollectiveTiming& c : collectives) {
      const double n = c.ranks, w = 1 / c.seconds;
      const double steps = c.op == CommOp::AllReduce ? 2 * (n - 1) : n - 1;
      rows.push_back({steps * w, c.bytes * commTraits(c.op).busFactor(c.ranks) * w});
      y.push_back(1);
    }
    const std::vector<double> x = nonNegativeLeastSquares(rows, y);
    if (x[1] <= 0) throw UserError("calibration: the collectives' time did not grow with size");
    LinkDescription& link = system.links[static_cast<std::size_t>(LinkClass::InProcess)];
    link.ring = {x[0], 1 / x[1]};
    link.tree = link.ring;
    fit.collectiveSamples = static_cast<int>(collectives.size());
  }

  // The optimizer step of runs without data parallelism: its update alone.
  std::vector<double> bandwidths;
  for (const TracedRun& run : runs) {
    const ParallelStrategy& s = run.plan.config.parallel;
    if (s.worldSize() != 1) continue;
    std::vector<double> spans;
    for (const trace::Event& e : run.events)
      if (e.category == trace::Category::Instruction && std::string_view(e.name) == "OptStep")
        spans.push_back(static_cast<double>(e.durationNs()) * 1e-9);
    if (spans.empty()) continue;
    bandwidths.push_back(28.0 * static_cast<double>(run.plan.ranks.front().parameterElements) /
                         fastest(spans));
  }
  if (bandwidths.empty())
    throw UserError("calibration: no single-rank run to fit the optimizer's bandwidth from");
  d.optimizerBandwidth = median(bandwidths);

  // What a step costs beyond its programs: the median gap between measured and simulated steps.
  system.stepOverhead = 0;
  std::vector<double> gaps;
  for (const TracedRun& run : runs) {
    const CostModel costs(system, run.plan);
    gaps.push_back(run.stepSeconds - simulateStep(run.plan, costs).stepSeconds);
  }
  system.stepOverhead = std::max(0.0, median(gaps));

  double error = 0;
  for (const ComputeSample& s : samples)
    error += relativeError(kernelSeconds(d, s.compute, s.features), s.seconds);
  fit.computeSamples = static_cast<int>(samples.size());
  fit.computeError = error / static_cast<double>(samples.size());
  if (!collectives.empty()) {
    double e = 0;
    const LinkDescription& link = system.link(LinkClass::InProcess);
    for (const CollectiveTiming& c : collectives) {
      const double n = c.ranks;
      const double steps = c.op == CommOp::AllReduce ? 2 * (n - 1) : n - 1;
      const double predicted = steps * link.ring.latency +
                               c.bytes * commTraits(c.op).busFactor(c.ranks) / link.ring.bandwidth;
      e += relativeError(predicted, c.seconds);
    }
    fit.collectiveError = e / static_cast<double>(collectives.size());
  }
  return fit;
}

}  // namespace parascope
