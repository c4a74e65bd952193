#include "ui/views/breakdown_view.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>

#include "ui/views/breakdown_model.h"

namespace parascope::ui {

BreakdownView::BreakdownView(QWidget* parent)
    : QTableView(parent), model_(new BreakdownModel(this)) {
  setObjectName(QStringLiteral("breakdownView"));
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  proxy->setSortRole(Qt::UserRole);
  setModel(proxy);
  setSortingEnabled(true);
  sortByColumn(BreakdownModel::Rank, Qt::AscendingOrder);
  verticalHeader()->hide();
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
}

void BreakdownView::sessionStarted(const parascope::TrainConfig& /*config*/) {
  model_->setRows({});
}

void BreakdownView::traceReplaced(const ShownTrace& trace) {
  model_->setRows(trace.analysis->breakdown);
}

}  // namespace parascope::ui
