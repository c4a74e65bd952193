#include "ui/views/memory_peak_model.h"

#include <algorithm>

#include "core/plan/memory_estimate.h"
#include "core/tensor/allocator.h"

namespace parascope::ui {

std::string MemoryPeakModel::estimateItem(const std::string& category) {
  static const std::map<std::string, std::string> items = {
      {"parameter", "parameters"},
      {"gradient", "gradients"},
      {"optimizer_state", "optimizer state"},
      {"activation", "activations"},
      {"communication_buffer", "communication buffers"},
      {"workspace", "workspace"},
      {"data", "data"},
      {kDiskCounterName, kSwapItemName}};
  const auto it = items.find(category);
  return it == items.end() ? std::string() : it->second;
}

void MemoryPeakModel::setSeries(const std::vector<profiler::MemorySeries>& series,
                                Predictions predicted, std::int64_t fromNs) {
  beginResetModel();
  rows_.clear();
  originNs_ = 0;
  bool first = true;
  for (const profiler::MemorySeries& s : series) {
    if (s.points.empty()) continue;
    originNs_ = first ? s.points.front().timeNs : std::min(originNs_, s.points.front().timeNs);
    first = false;
  }
  for (const profiler::MemorySeries& s : series) {
    double bytes = -1;
    if (const auto rank = predicted.find(s.rank); rank != predicted.end()) {
      const auto it = rank->second.find(estimateItem(s.name));
      if (it != rank->second.end()) bytes = it->second;
    }
    std::int64_t peak = s.peakBytes, peakAt = s.peakAtNs;
    if (fromNs != INT64_MIN) {
      peak = 0;
      peakAt = fromNs;
      for (std::size_t i = 0; i < s.points.size(); ++i) {
        const profiler::MemoryPoint& p = s.points[i];
        // A point before fromNs counts only as the value in force there.
        const bool inForce =
            p.timeNs < fromNs && (i + 1 == s.points.size() || s.points[i + 1].timeNs > fromNs);
        if ((p.timeNs >= fromNs || inForce) && p.bytes > peak) {
          peak = p.bytes;
          peakAt = std::max(p.timeNs, fromNs);
        }
      }
    }
    rows_.push_back({s.rank, s.name, peak, peakAt, bytes});
  }
  endResetModel();
}

int MemoryPeakModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int MemoryPeakModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant MemoryPeakModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Count) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  if (role == Qt::UserRole) {
    switch (index.column()) {
      case Rank: return r.rank;
      case Category: return QString::fromStdString(r.name);
      case PeakBytes: return QVariant::fromValue<qint64>(r.peakBytes);
      case PeakAtMs: return QVariant::fromValue<qint64>(r.peakAtNs);
      case Predicted: return r.predicted;
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Rank: return r.rank;
    case Category: return QString::fromStdString(r.name);
    case PeakBytes:
      return QStringLiteral("%1 (%2)")
          .arg(r.peakBytes)
          .arg(QString::fromStdString(formatBytes(static_cast<double>(r.peakBytes))));
    case PeakAtMs:
      return QString::number(static_cast<double>(r.peakAtNs - originNs_) / 1e6, 'f', 3);
    case Predicted:
      return r.predicted < 0 ? QString() : QString::fromStdString(formatBytes(r.predicted));
    default: return {};
  }
}

QVariant MemoryPeakModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[Count] = {"Rank", "Category", "Peak bytes", "Peak at ms",
                                     "Predicted (estimate)"};
  return section >= 0 && section < Count ? QString::fromLatin1(names[section]) : QVariant();
}

}  // namespace parascope::ui
