// The Planner's candidates (core/plan/search.h): one row per strategy the search simulated,
// fastest first, with the columns `parascope-cli plan` prints (strategy, micro-batch, step,
// tokens/s, model and hardware TFLOP/s per GPU, MFU, bubble, memory per GPU by category and its
// total). Rows are kept in the order they arrive while the search runs (existing rows never
// move); "#" is each one's rank by step among those so far (ties in arrival order), updated as
// rows come. Qt::UserRole holds raw values (seconds, bytes, fractions) for a sort proxy.
//
// PlanFilterModel keeps the rows whose strategy has every "key=value" of a filter, in the config
// key names the CLI takes ("tensor_model_parallel_size=8 zero_optimization.stage=1").
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/plan/search.h"

namespace parascope::ui {

class PlanCandidateModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Rank,
    Strategy,
    MicroBatch,
    Step,
    TokensPerSecond,
    ModelTflops,
    HardwareTflops,
    Mfu,
    Bubble,
    Parameters,
    Gradients,
    Optimizer,
    Activations,
    Communication,
    Workspace,
    Memory,
    Count
  };

  explicit PlanCandidateModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void clear();
  void add(const std::vector<parascope::PlanEstimate>& plans);
  const parascope::PlanEstimate& plan(int row) const { return rows_.at(row).plan; }
  // The row's strategy keys with their values (planStrategyKeys).
  const nlohmann::json& strategyKeys(int row) const { return rows_.at(row).keys; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    parascope::PlanEstimate plan;
    nlohmann::json keys;
    QString strategy;
    int rank = 0;  // from 1
  };
  std::vector<Row> rows_;
};

class PlanFilterModel : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit PlanFilterModel(QObject* parent = nullptr);
  // Whitespace-separated "key=value" terms over the searched keys (searchedKeys()); empty keeps
  // every row. UserError naming the term and the keys allowed for a bad one; the filter is then
  // left as it was.
  void setFilter(const QString& terms);

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  nlohmann::json terms_ = nlohmann::json::object();
};

}  // namespace parascope::ui
