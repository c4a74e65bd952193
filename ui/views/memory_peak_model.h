// Item model over the memory peaks (profiler/analysis/memory_timeline.h): one row per rank and
// memory category with its measured peak, when it was reached, and the strategy's predicted
// bytes for that rank and category (core/plan/memory_estimate.h: that rank's pipeline stage's
// estimate, its model state as the trainer allocates it) where there is one. Qt::UserRole holds
// raw numbers.
#pragma once

#include <QAbstractTableModel>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/analysis/memory_timeline.h"

namespace parascope::ui {

class MemoryPeakModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Category, PeakBytes, PeakAtMs, Predicted, Count };

  explicit MemoryPeakModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  // Predicted bytes by rank, then by the estimate's item name ("parameters", "optimizer
  // state", ...): ranks of different pipeline stages hold different layers.
  using Predictions = std::map<int, std::map<std::string, double>>;
  // Peaks are measured from `fromNs` on (the value then in force included): a run switched
  // live is predicted for the strategy it ended with, so its peaks are that layout's.
  void setSeries(const std::vector<profiler::MemorySeries>& series, Predictions predicted,
                 std::int64_t fromNs = INT64_MIN);
  // The first memory sample of any rank: "Peak at ms" and the chart's time axis count from it.
  std::int64_t originNs() const { return originNs_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  // The estimate's item for a trace's memory category ("optimizer_state" -> "optimizer state",
  // the swap files' "nvme" -> kSwapItemName); empty when the estimate has none (a counter
  // imported from another profiler).
  static std::string estimateItem(const std::string& category);
  // The prediction of the bytes on a disk (MemoryEstimate::swapBytes) among Predictions' items.
  static constexpr const char* kSwapItemName = "swap files";

 private:
  struct Row {
    int rank;
    std::string name;
    std::int64_t peakBytes;
    std::int64_t peakAtNs;
    double predicted;  // < 0: none
  };
  std::vector<Row> rows_;
  std::int64_t originNs_ = 0;  // the first memory sample: "Peak at ms" counts from it
};

}  // namespace parascope::ui
