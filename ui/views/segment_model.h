// The Compare table: every strategy segment of the workbench's sessions (a run, or the part of a
// run between two live switches) with its measures: tokens/s, MFU, peak memory per rank,
// pipeline bubble, exposed communication and loss trend, from the session's step reports, as
// core/session/run_metrics.h defines them. The best value of each column is marked (bold, tinted);
// the table exports as CSV and JSON, the result of a tuning session. Qt::UserRole holds raw
// numbers.
#pragma once

#include <QAbstractTableModel>
#include <string>
#include <vector>

#include "core/session/run_metrics.h"

namespace parascope::ui {

class SegmentModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Strategy,
    Ranks,
    Steps,
    TokensPerSecond,
    Mfu,
    PeakMemory,
    Bubble,
    ExposedComm,
    LossTrend,
    Count
  };

  explicit SegmentModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  // A new segment of the running session from the next step on; flopsPerToken: the model's
  // (StartReport). addRankStep and addStep feed it until the next begin. devicePeakFlops: a GPU
  // run's own peak (StartReport::devicePeakFlops), its MFU's denominator; 0 on the CPU, whose
  // peak is setPeakFlops'.
  void begin(const std::string& strategy, int ranks, double flopsPerToken,
             double devicePeakFlops = 0);
  // A whole segment measured elsewhere (a recorded run's trace): a row of its own, which the
  // running session's steps never reach.
  void addFinished(const std::string& strategy, int ranks, double flopsPerToken,
                   const std::vector<parascope::StepReport>& rankSteps,
                   const std::vector<parascope::StepReport>& steps);
  // One CPU rank's peak, FLOP/s, for the MFU of every segment that ran on the CPU
  // (core/kernels/sgemm_peak.h); their MFU has no value while it is 0.
  void setPeakFlops(double peakFlops);
  void addRankStep(const parascope::StepReport& r);
  void addStep(const parascope::StepReport& r);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  double value(int row, Column c) const;  // NaN where a measure has no value
  double shown(int row, Column c) const;  // value() rounded as the table shows it
  bool isBest(int row, Column c) const;
  std::string toCsv() const;
  std::string toJson() const;  // an array of objects, one per segment

 private:
  struct Segment {
    std::string strategy;
    int ranks = 1;
    double flopsPerToken = 0;
    double devicePeakFlops = 0;  // a GPU run's; 0: the CPU's peakFlops_
    parascope::RunMetrics metrics;
    std::int64_t peakBytes = 0;  // the largest per-rank total over the segment
    int rankReports = 0;
    // Least-squares slope of loss over step: sums of x, y, xy, xx.
    double sx = 0, sy = 0, sxy = 0, sxx = 0;
  };
  void append(const std::string& strategy, int ranks, double flopsPerToken);
  void addRankStep(int row, const parascope::StepReport& r);
  void addStep(int row, const parascope::StepReport& r);

  std::vector<Segment> segments_;
  int live_ = -1;  // the running session's segment; -1 before one began
  double peakFlops_ = 0;
};

}  // namespace parascope::ui
