#include "ui/views/training_log_model.h"

namespace parascope::ui {

TrainingLogModel::TrainingLogModel(QObject* parent) : QAbstractTableModel(parent) {}

int TrainingLogModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int TrainingLogModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant TrainingLogModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  const double rate = r.step.seconds > 0 ? static_cast<double>(r.step.tokens) / r.step.seconds : 0;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Step: return r.step.step;
      case Loss: return QString::number(r.step.loss, 'f', 4);
      case ValidationLoss:
        return r.validationLoss < 0 ? QString() : QString::number(r.validationLoss, 'f', 4);
      case LearningRate: return QString::number(r.step.lr, 'e', 2);
      case GradNorm: return QString::number(r.step.gradNorm, 'f', 3);
      case Throughput: return QString::number(rate, 'f', 0);
      case LossScale:
        return r.step.skipped ? tr("%1 (skipped: overflow)").arg(r.step.lossScale, 0, 'f', 0)
                              : QString::number(r.step.lossScale, 'f', 0);
    }
  } else if (role == Qt::UserRole) {  // raw numbers for charts and sorting
    switch (index.column()) {
      case Step: return r.step.step;
      case Loss: return r.step.loss;
      case ValidationLoss: return r.validationLoss < 0 ? QVariant() : QVariant(r.validationLoss);
      case LearningRate: return r.step.lr;
      case GradNorm: return r.step.gradNorm;
      case Throughput: return rate;
      case LossScale: return r.step.lossScale;
    }
  } else if (role == Qt::TextAlignmentRole) {
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant TrainingLogModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Step: return tr("Step");
    case Loss: return tr("Loss (nats)");
    case ValidationLoss: return tr("Validation loss");
    case LearningRate: return tr("LR");
    case GradNorm: return tr("Grad norm");
    case Throughput: return throughputHeader_;
    case LossScale: return tr("Loss scale");
  }
  return {};
}

void TrainingLogModel::setTarget(const QString& plural) {
  QString header = plural.isEmpty() ? plural : plural.front().toUpper() + plural.mid(1);
  header = tr("%1/s").arg(header);
  if (header == throughputHeader_) return;
  throughputHeader_ = header;
  emit headerDataChanged(Qt::Horizontal, Throughput, Throughput);
}

void TrainingLogModel::addStep(const parascope::StepReport& r) {
  const int row = rowCount();
  beginInsertRows({}, row, row);
  rows_.push_back({r, lastValidation_});
  endInsertRows();
}

void TrainingLogModel::addEval(const parascope::EvalReport& r) {
  lastValidation_ = r.loss;
  // The evaluation ran after step r.step: that row shows it.
  for (int i = rowCount() - 1; i >= 0; --i) {
    if (rows_[static_cast<std::size_t>(i)].step.step == r.step) {
      rows_[static_cast<std::size_t>(i)].validationLoss = r.loss;
      emit dataChanged(index(i, ValidationLoss), index(i, ValidationLoss));
      break;
    }
  }
}

void TrainingLogModel::clear() {
  beginResetModel();
  rows_.clear();
  lastValidation_ = -1;
  endResetModel();
}

}  // namespace parascope::ui
