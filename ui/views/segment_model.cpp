#include "ui/views/segment_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

namespace parascope::ui {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* kNames[SegmentModel::Count] = {"strategy",
                                           "ranks",
                                           "steps",
                                           "tokens_per_s",
                                           "mfu",
                                           "peak_bytes_per_rank",
                                           "bubble_fraction",
                                           "exposed_comm_fraction",
                                           "loss_per_step"};
const char* kHeaders[SegmentModel::Count] = {"Strategy", "Ranks",        "Steps",
                                             "Tokens/s", "MFU",          "Peak mem / rank",
                                             "Bubble",   "Exposed comm", "Loss trend / step"};
}  // namespace

void SegmentModel::begin(const std::string& strategy, int ranks, double flopsPerToken,
                         double devicePeakFlops) {
  live_ = rowCount();
  append(strategy, ranks, flopsPerToken);
  segments_.back().devicePeakFlops = devicePeakFlops;
}

void SegmentModel::append(const std::string& strategy, int ranks, double flopsPerToken) {
  const int row = rowCount();
  beginInsertRows({}, row, row);
  Segment s;
  s.strategy = strategy;
  s.ranks = ranks;
  s.flopsPerToken = flopsPerToken;
  segments_.push_back(s);
  endInsertRows();
}

void SegmentModel::addFinished(const std::string& strategy, int ranks, double flopsPerToken,
                               const std::vector<parascope::StepReport>& rankSteps,
                               const std::vector<parascope::StepReport>& steps) {
  append(strategy, ranks, flopsPerToken);
  const int row = rowCount() - 1;
  for (const parascope::StepReport& r : rankSteps) addRankStep(row, r);
  for (const parascope::StepReport& r : steps) addStep(row, r);
}

void SegmentModel::setPeakFlops(double peakFlops) {
  peakFlops_ = peakFlops;
  if (!segments_.empty()) emit dataChanged(index(0, Mfu), index(rowCount() - 1, Mfu));
}

void SegmentModel::addRankStep(const parascope::StepReport& r) {
  if (live_ >= 0) addRankStep(live_, r);
}

void SegmentModel::addStep(const parascope::StepReport& r) {
  if (live_ >= 0) addStep(live_, r);
}

void SegmentModel::addRankStep(int row, const parascope::StepReport& r) {
  Segment& s = segments_[static_cast<std::size_t>(row)];
  s.peakBytes = std::max(s.peakBytes,
                         std::accumulate(r.peakBytes.begin(), r.peakBytes.end(), std::int64_t{0}));
  s.metrics.addRankStep(r);
  ++s.rankReports;
}

void SegmentModel::addStep(int row, const parascope::StepReport& r) {
  Segment& s = segments_[static_cast<std::size_t>(row)];
  s.metrics.addStep(r);
  if (std::isfinite(r.loss)) {
    s.sx += r.step;
    s.sy += r.loss;
    s.sxy += r.step * r.loss;
    s.sxx += static_cast<double>(r.step) * r.step;
  }
  emit dataChanged(index(row, 0), index(row, Count - 1));
}

int SegmentModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(segments_.size());
}

int SegmentModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

double SegmentModel::value(int row, Column c) const {
  const Segment& s = segments_[static_cast<std::size_t>(row)];
  switch (c) {
    case Ranks: return s.ranks;
    case Steps: return s.metrics.steps();
    case TokensPerSecond: return s.metrics.tokensPerSecond();
    case Mfu:
      return s.metrics.mfu(s.flopsPerToken, s.devicePeakFlops > 0 ? s.devicePeakFlops : peakFlops_,
                           s.ranks);
    case PeakMemory: return s.rankReports > 0 ? static_cast<double>(s.peakBytes) : kNaN;
    case Bubble: return s.metrics.bubbleFraction();
    case ExposedComm: return s.metrics.exposedCommFraction();
    case LossTrend: {
      const double n = s.metrics.steps(), d = n * s.sxx - s.sx * s.sx;
      return s.metrics.steps() >= 2 && d != 0 ? (n * s.sxy - s.sx * s.sy) / d : kNaN;
    }
    default: return kNaN;
  }
}

// A measure as the table shows it (tokens/s whole, percentages to 0.1%, MiB to 0.01, the loss
// trend to three digits): what "best" compares, so that values shown alike tie.
double SegmentModel::shown(int row, Column c) const {
  const double v = value(row, c);
  if (std::isnan(v)) return v;
  switch (c) {
    case TokensPerSecond: return std::round(v);
    case Mfu:
    case Bubble:
    case ExposedComm: return std::round(1000 * v) / 1000;
    case PeakMemory: return std::round(100 * v / (1 << 20)) / 100;
    case LossTrend: return QString::number(v, 'e', 2).toDouble();
    default: return v;
  }
}

// Best: no segment shows a better value and some segment shows a worse one (segments that all
// show the same have no best).
bool SegmentModel::isBest(int row, Column c) const {
  if (c < TokensPerSecond || segments_.size() < 2) return false;
  const double v = shown(row, c);
  if (std::isnan(v)) return false;
  const bool higher = c == TokensPerSecond || c == Mfu;
  bool beatsOne = false;
  for (int r = 0; r < rowCount(); ++r) {
    const double o = shown(r, c);
    if (std::isnan(o)) continue;
    if (higher ? o > v : o < v) return false;
    beatsOne = beatsOne || o != v;
  }
  return beatsOne;
}

QVariant SegmentModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Count) return {};
  const auto c = static_cast<Column>(index.column());
  const Segment& s = segments_[static_cast<std::size_t>(index.row())];
  if (role == Qt::FontRole && isBest(index.row(), c)) {
    QFont bold;
    bold.setBold(true);
    return bold;
  }
  if (role == Qt::BackgroundRole && isBest(index.row(), c)) return QBrush(QColor(0xd5, 0xf5, 0xd5));
  if (role == Qt::ToolTipRole && isBest(index.row(), c)) return tr("best of the segments");
  if (role == Qt::UserRole) {
    return c == Strategy ? QVariant(QString::fromStdString(s.strategy))
                         : QVariant(value(index.row(), c));
  }
  if (role != Qt::DisplayRole) return {};
  if (c == Strategy) return QString::fromStdString(s.strategy);
  const double v = value(index.row(), c);
  if (std::isnan(v)) return QString();
  const QString mark = isBest(index.row(), c) ? QStringLiteral(" \u2605") : QString();
  switch (c) {
    case Ranks:
    case Steps: return QString::number(static_cast<long long>(v));
    case TokensPerSecond: return QString::number(v, 'f', 0) + mark;
    case Mfu:
    case Bubble:
    case ExposedComm: return QString::number(100 * v, 'f', 1) + '%' + mark;
    case PeakMemory: return QString::number(v / (1 << 20), 'f', 2) + QStringLiteral(" MiB") + mark;
    case LossTrend: return QString::number(v, 'e', 2) + mark;
    default: return {};
  }
}

QVariant SegmentModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  return section >= 0 && section < Count ? QString::fromLatin1(kHeaders[section]) : QVariant();
}

std::string SegmentModel::toCsv() const {
  std::ostringstream out;
  out.precision(10);
  for (int c = 0; c < Count; ++c) out << (c ? "," : "") << kNames[c];
  out << ",best\n";
  for (int r = 0; r < rowCount(); ++r) {
    std::string strategy = segments_[static_cast<std::size_t>(r)].strategy;
    out << '"' << strategy << '"';
    std::string best;
    for (int c = 1; c < Count; ++c) {
      const double v = value(r, static_cast<Column>(c));
      out << ',';
      if (!std::isnan(v)) out << v;
      if (isBest(r, static_cast<Column>(c)))
        best += (best.empty() ? "" : " ") + std::string(kNames[c]);
    }
    out << ",\"" << best << "\"\n";
  }
  return out.str();
}

std::string SegmentModel::toJson() const {
  nlohmann::json rows = nlohmann::json::array();
  for (int r = 0; r < rowCount(); ++r) {
    nlohmann::json row = {{"strategy", segments_[static_cast<std::size_t>(r)].strategy}};
    nlohmann::json best = nlohmann::json::array();
    for (int c = 1; c < Count; ++c) {
      const double v = value(r, static_cast<Column>(c));
      row[kNames[c]] = std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
      if (isBest(r, static_cast<Column>(c))) best.push_back(kNames[c]);
    }
    row["best"] = best;
    rows.push_back(row);
  }
  return rows.dump(2);
}

}  // namespace parascope::ui
