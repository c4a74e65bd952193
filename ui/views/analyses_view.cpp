#include "ui/views/analyses_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "profiler/analysis/analysis_table.h"
#include "ui/name_columns.h"
#include "ui/views/analysis_table_model.h"

namespace parascope::ui {

AnalysesView::AnalysesView(QWidget* parent)
    : QWidget(parent), choice_(new QComboBox), model_(new AnalysisTableModel(this)) {
  setObjectName(QStringLiteral("analysesView"));
  choice_->setObjectName(QStringLiteral("analysisChoice"));
  for (const profiler::AnalysisTable& table : profiler::analysisTables()) {
    choice_->addItem(
        QString::fromUtf8(table.title.data(), static_cast<qsizetype>(table.title.size())));
  }
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  proxy->setSortRole(Qt::UserRole);
  auto* view = new QTableView;
  view->setObjectName(QStringLiteral("analysisView"));
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->sortByColumn(0, Qt::AscendingOrder);  // what a row is about comes first
  view->verticalHeader()->hide();
  fitNamesBesideNumbers(view, QStringLiteral("name"));
  connect(choice_, &QComboBox::currentIndexChanged, this, &AnalysesView::showTable);
  auto* layout = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Analysis (as parascope-cli analyze --json prints it):")));
  row->addWidget(choice_, 1);
  layout->addLayout(row);
  layout->addWidget(view, 1);
}

void AnalysesView::sessionStarted(const parascope::TrainConfig& /*config*/) {
  analysis_.reset();
  showTable();
}

void AnalysesView::traceReplaced(const ShownTrace& trace) {
  analysis_ = trace.analysis;
  showTable();
}

void AnalysesView::showTable() {
  const auto index = static_cast<std::size_t>(choice_->currentIndex());
  model_->setRows(analysis_ && index < analysis_->tables.size() ? analysis_->tables[index]
                                                                : std::vector<nlohmann::json>{});
}

}  // namespace parascope::ui
