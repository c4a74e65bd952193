#include "ui/views/analysis_table_model.h"

#include <algorithm>

namespace parascope::ui {

void AnalysisTableModel::setRows(std::vector<nlohmann::json> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  columns_.clear();
  if (!rows_.empty()) {
    // What a row is about first (JSON objects keep their keys sorted), then its figures.
    const nlohmann::json& first = rows_.front();
    for (const char* key : {"rank", "step", "stage", "src", "dst", "name"}) {
      if (first.contains(key)) columns_.emplace_back(key);
    }
    for (const auto& [key, value] : first.items()) {
      if (std::find(columns_.begin(), columns_.end(), key) == columns_.end()) {
        columns_.push_back(key);
      }
    }
  }
  endResetModel();
}

int AnalysisTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int AnalysisTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

QVariant AnalysisTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  // A name elided in its column reads whole on hover.
  if (role == Qt::ToolTipRole && columns_[static_cast<std::size_t>(index.column())] == "name")
    role = Qt::DisplayRole;
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  const nlohmann::json& row = rows_[static_cast<std::size_t>(index.row())];
  const auto it = row.find(columns_[static_cast<std::size_t>(index.column())]);
  if (it == row.end()) return {};
  if (it->is_string()) return QString::fromStdString(it->get<std::string>());
  if (it->is_number_integer()) return QVariant::fromValue(it->get<qlonglong>());
  if (it->is_number()) return it->get<double>();
  if (it->is_boolean()) return it->get<bool>();
  return QString::fromStdString(it->dump());
}

QVariant AnalysisTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 ||
      section >= columnCount()) {
    return {};
  }
  return QString::fromStdString(columns_[static_cast<std::size_t>(section)]);
}

}  // namespace parascope::ui
