// The prediction tables; see prediction_model.h.
#include "ui/views/prediction_model.h"

#include <cmath>
#include <set>
#include <string>

namespace parascope::ui {

namespace {

bool isText(int role) {
  return role == Qt::DisplayRole || role == Qt::UserRole;
}

// A time in ms, its seconds raw; a dash and -1 where nothing was measured.
QVariant timeCell(double seconds, bool known, int role) {
  if (role == Qt::UserRole) return known ? seconds : -1.0;
  return known ? QString::number(seconds * 1e3, 'f', 3) : QStringLiteral("—");
}

// predicted - measured in ms, its magnitude in seconds raw.
QVariant errorTimeCell(double predicted, double measured, bool known, int role) {
  if (role == Qt::UserRole) return known ? std::fabs(predicted - measured) : -1.0;
  if (!known) return QStringLiteral("—");
  // Under half a microsecond either way shows as 0.000, not "-0.000".
  const double ms = std::fabs(predicted - measured) < 5e-7 ? 0 : (predicted - measured) * 1e3;
  return QStringLiteral("%1%2").arg(ms >= 0 ? QStringLiteral("+") : QString()).arg(ms, 0, 'f', 3);
}

QVariant errorCell(double error, bool known, int role) {
  if (role == Qt::UserRole) return known ? std::fabs(error) : -1.0;
  if (!known) return QStringLiteral("—");
  return QStringLiteral("%1%2%")
      .arg(error >= 0 ? QStringLiteral("+") : QString())
      .arg(100 * error, 0, 'f', 1);
}

QVariant alignment(bool text) {
  return QVariant::fromValue(text ? Qt::AlignLeft | Qt::AlignVCenter
                                  : Qt::AlignRight | Qt::AlignVCenter);
}

QString segmentTip(int segment, const QString& strategy) {
  return QStringLiteral("Segment %1: %2").arg(segment).arg(strategy);
}

const char* kErrorTip =
    "(predicted − measured) / measured; sorted by its size, so the worst come first either way "
    "wrong";
const char* kErrorTimeTip =
    "predicted − measured, ms; sorted by its size, so the most time mispredicted comes first";

}  // namespace

void PredictionModel::setSegments(const std::vector<PredictedSegment>& segments) {
  beginResetModel();
  rows_.clear();
  for (const PredictedSegment& s : segments) {
    const QString strategy = QString::fromStdString(s.segment.strategy);
    for (const InstructionError& e : s.comparison.instructions) {
      rows_.push_back({s.segment.segment, strategy, e});
    }
  }
  endResetModel();
}

int PredictionModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int PredictionModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant PredictionModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Count) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  const InstructionError& e = r.error;
  const bool known = e.measuredSpans > 0;
  if (role == Qt::TextAlignmentRole) return alignment(index.column() == Instruction);
  if (role == Qt::ToolTipRole) {
    if (index.column() == Segment) return segmentTip(r.segment, r.strategy);
    if (index.column() == Measured && known) {
      return tr("median of %n span(s): the traced steps, every data- and tensor-parallel rank",
                nullptr, e.measuredSpans);
    }
    return {};
  }
  if (!isText(role)) return {};
  switch (index.column()) {
    case Segment: return r.segment;
    case Rank: return e.pipelineRank;
    case Index: return e.index;
    case Instruction: return QString::fromStdString(e.instruction.toString());
    case Measured: return timeCell(e.measuredSeconds, known, role);
    case Predicted: return timeCell(e.predictedSeconds, true, role);
    case ErrorTime: return errorTimeCell(e.predictedSeconds, e.measuredSeconds, known, role);
    case Error: return errorCell(e.error(), known && e.measuredSeconds > 0, role);
    default: return {};
  }
}

QVariant PredictionModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= Count) return {};
  if (role == Qt::ToolTipRole) {
    if (section == Error) return QString::fromUtf8(kErrorTip);
    if (section == ErrorTime) return QString::fromUtf8(kErrorTimeTip);
    if (section == Rank) {
      return tr("The pipeline rank, standing for its data- and tensor-parallel ranks");
    }
    if (section == Index) return tr("The instruction's place in its pipeline rank's program");
    if (section == Measured) return tr("ms, the median of the traced steps and ranks");
    if (section == Predicted) return tr("ms, simulated");
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  static const char* names[Count] = {"Segment",  "Rank",      "Index",    "Instruction",
                                     "Measured", "Predicted", "Error ms", "Error %"};
  return QString::fromUtf8(names[section]);
}

void PredictionOpModel::setSegments(const std::vector<PredictedSegment>& segments) {
  beginResetModel();
  rows_.clear();
  for (const PredictedSegment& s : segments) {
    if (!s.failure.empty()) continue;
    const QString strategy = QString::fromStdString(s.segment.strategy);
    const PredictionError& c = s.comparison;
    rows_.push_back({s.segment.segment, strategy, QStringLiteral("step"), 0, c.measuredStepSeconds,
                     c.predictedStepSeconds, c.measuredStepSeconds > 0, c.stepError()});
    // An op is measured when one of its instructions is, even if in no time (a send).
    std::set<std::string> measured;
    for (const InstructionError& e : c.instructions) {
      if (e.measuredSpans > 0) measured.insert(opName(e.instruction.op));
    }
    for (const OpError& op : c.ops) {
      rows_.push_back({s.segment.segment, strategy, QString::fromStdString(op.op), op.instructions,
                       op.measuredSeconds, op.predictedSeconds, measured.count(op.op) > 0,
                       op.error()});
    }
  }
  endResetModel();
}

int PredictionOpModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int PredictionOpModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant PredictionOpModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Count) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  if (role == Qt::TextAlignmentRole) return alignment(index.column() == Op);
  if (role == Qt::ToolTipRole) {
    if (index.column() == Segment) return segmentTip(r.segment, r.strategy);
    if (index.column() == Op && r.instructions == 0) {
      return tr("The whole step: the median measured step against the simulated one");
    }
    return {};
  }
  if (!isText(role)) return {};
  switch (index.column()) {
    case Segment: return r.segment;
    case Op: return r.op;
    case Instructions:
      if (r.instructions == 0) return role == Qt::UserRole ? QVariant(0) : QVariant(QString());
      return r.instructions;
    case Measured: return timeCell(r.measuredSeconds, r.measured, role);
    case Predicted: return timeCell(r.predictedSeconds, true, role);
    case ErrorTime: return errorTimeCell(r.predictedSeconds, r.measuredSeconds, r.measured, role);
    case Error: return errorCell(r.error, r.measured && r.measuredSeconds > 0, role);
    default: return {};
  }
}

QVariant PredictionOpModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= Count) return {};
  if (role == Qt::ToolTipRole) {
    if (section == Error) return QString::fromUtf8(kErrorTip);
    if (section == ErrorTime) return QString::fromUtf8(kErrorTimeTip);
    if (section == Measured || section == Predicted) {
      return tr("ms per step: an op's instructions summed (those measured), or the whole step");
    }
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  static const char* names[Count] = {"Segment",   "Op",       "Count",  "Measured",
                                     "Predicted", "Error ms", "Error %"};
  return QString::fromUtf8(names[section]);
}

}  // namespace parascope::ui
