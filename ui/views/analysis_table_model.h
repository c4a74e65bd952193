// Item model over one of the profiler's analysis tables (profiler/analysis/analysis_table.h):
// the rows `parascope-cli analyze --json` prints, one column per field of the first row (named
// as in the JSON, units in the names), what a row is about (rank, step, ...) first. Qt::DisplayRole
// shows the value, Qt::UserRole holds it raw for sorting. What the workbench's Analyses view shows,
// so an analysis added to the table reaches the window without a view of its own.
#pragma once

#include <QAbstractTableModel>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace parascope::ui {

class AnalysisTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  explicit AnalysisTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setRows(std::vector<nlohmann::json> rows);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<nlohmann::json> rows_;
  std::vector<std::string> columns_;
};

}  // namespace parascope::ui
