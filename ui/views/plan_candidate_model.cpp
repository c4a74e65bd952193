#include "ui/views/plan_candidate_model.h"

#include <QRegularExpression>
#include <QStringList>
#include <algorithm>

#include "core/common/error.h"
#include "core/config/config_keys.h"
#include "core/plan/memory_estimate.h"
#include "core/session/run_summary.h"

namespace parascope::ui {

namespace {

// The memory columns' estimate items, Parameters to Workspace.
const char* const kMemoryItems[] = {
    "parameters", "gradients", "optimizer state", "activations", "communication buffers",
    "workspace"};

double itemBytes(const MemoryEstimate& m, const char* name) {
  for (const MemoryItem& item : m.items)
    if (item.name == name) return item.bytes;
  return 0;
}

}  // namespace

void PlanCandidateModel::clear() {
  beginResetModel();
  rows_.clear();
  endResetModel();
}

void PlanCandidateModel::add(const std::vector<PlanEstimate>& plans) {
  if (plans.empty()) return;
  const int first = static_cast<int>(rows_.size());
  beginInsertRows({}, first, first + static_cast<int>(plans.size()) - 1);
  for (const PlanEstimate& plan : plans) {
    rows_.push_back(Row{plan, nlohmann::json(planStrategyKeys(plan.config)),
                        QString::fromStdString(describeStrategy(plan.config))});
  }
  std::vector<std::size_t> order(rows_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return rows_[a].plan.stepSeconds < rows_[b].plan.stepSeconds;
  });
  std::vector<int> ranks(rows_.size());
  for (std::size_t place = 0; place < order.size(); ++place)
    ranks[order[place]] = static_cast<int>(place) + 1;
  for (std::size_t i = static_cast<std::size_t>(first); i < rows_.size(); ++i)
    rows_[i].rank = ranks[i];
  endInsertRows();
  // The earlier rows' ranks move with the new ones among them: a change of their data, reported
  // as one once the rows are in.
  if (first == 0) return;
  for (int i = 0; i < first; ++i)
    rows_[static_cast<std::size_t>(i)].rank = ranks[static_cast<std::size_t>(i)];
  emit dataChanged(index(0, Rank), index(first - 1, Rank));
}

int PlanCandidateModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int PlanCandidateModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant PlanCandidateModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Count) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  const PlanEstimate& p = r.plan;
  const int column = index.column();
  if (role == Qt::TextAlignmentRole)
    return column == Strategy ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                              : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && column == Strategy) return QString::fromStdString(r.keys.dump());
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  const bool raw = role == Qt::UserRole;
  auto bytes = [&](double b) -> QVariant {
    return raw ? QVariant(b) : QVariant(QString::fromStdString(formatBytes(b)));
  };
  auto number = [&](double v, int decimals) -> QVariant {
    return raw ? QVariant(v) : QVariant(QString::number(v, 'f', decimals));
  };
  auto percent = [&](double v) -> QVariant {
    return raw ? QVariant(v) : QVariant(QString::number(100 * v, 'f', 1) + QLatin1Char('%'));
  };
  if (column >= Parameters && column <= Workspace)
    return bytes(itemBytes(p.memory, kMemoryItems[column - Parameters]));
  switch (column) {
    case Rank: return r.rank;
    case Strategy: return r.strategy;
    case MicroBatch: return p.config.microBatch;
    case Step:
      return raw ? QVariant(p.stepSeconds) : QVariant(QString::number(p.stepSeconds, 'f', 3));
    case TokensPerSecond: return number(p.tokensPerSecond, 0);
    case ModelTflops: return number(p.modelFlopsPerGpu / 1e12, 1);
    case HardwareTflops: return number(p.hardwareFlopsPerGpu / 1e12, 1);
    case Mfu: return percent(p.mfu);
    case Bubble: return percent(p.bubbleFraction);
    case Memory: return bytes(p.memory.perRankBytes());
    default: return {};
  }
}

QVariant PlanCandidateModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= Count) return {};
  static const char* const titles[Count] = {"#",
                                            "Strategy",
                                            "Micro-batch",
                                            "Step (s)",
                                            "Tokens/s",
                                            "Model TFLOP/s per GPU",
                                            "HW TFLOP/s per GPU",
                                            "MFU",
                                            "Bubble",
                                            "Parameters",
                                            "Gradients",
                                            "Optimizer",
                                            "Activations",
                                            "Comm buffers",
                                            "Workspace",
                                            "Memory per GPU"};
  if (role == Qt::DisplayRole) return tr(titles[section]);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case ModelTflops: return tr("The model's FLOPs per second per GPU, recompute not counted");
      case HardwareTflops: return tr("What each GPU computes per second, recompute counted");
      case Mfu: return tr("Model FLOPs over the devices' matmul peak");
      case Bubble: return tr("Mean over pipeline ranks of their idle fraction of the step");
      case Memory: return tr("The busiest rank's peak, every category");
      default: return {};
    }
  }
  return {};
}

PlanFilterModel::PlanFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(Qt::UserRole);
}

void PlanFilterModel::setFilter(const QString& text) {
  nlohmann::json terms = nlohmann::json::object();
  const std::vector<std::string>& keys = searchedKeys();
  for (const QString& term :
       text.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts)) {
    const std::string t = term.toStdString();
    const std::string key = t.substr(0, t.find('='));
    if (t.find('=') == std::string::npos ||
        std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string list;
      for (const std::string& k : keys) list += (list.empty() ? "" : ", ") + k;
      throw UserError("filter: '" + t +
                      "' is not key=value over a searched key; valid keys: " + list);
    }
    nlohmann::json doc = nlohmann::json::object();
    applyOverride(doc, t);
    terms[key] = configValue(doc, key);
  }
  terms_ = std::move(terms);
  invalidateFilter();
}

bool PlanFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex&) const {
  const auto* model = qobject_cast<const PlanCandidateModel*>(sourceModel());
  if (model == nullptr || terms_.empty()) return true;
  const nlohmann::json& keys = model->strategyKeys(sourceRow);
  for (const auto& [key, value] : terms_.items()) {
    const auto it = keys.find(key);
    if (it == keys.end() || *it != value) return false;
  }
  return true;
}

}  // namespace parascope::ui
