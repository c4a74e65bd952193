// The Prediction tab; see prediction_view.h.
#include "ui/views/prediction_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/views/prediction_model.h"

namespace parascope::ui {

namespace {

QTableView* sortedTable(QAbstractItemModel* model, int column, Qt::SortOrder order,
                        QObject* owner) {
  auto* proxy = new QSortFilterProxyModel(owner);
  proxy->setSourceModel(model);
  proxy->setSortRole(Qt::UserRole);
  auto* view = new QTableView;
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->sortByColumn(column, order);
  view->verticalHeader()->hide();
  // Rows as tall as their text: the tab is short and an instruction table long.
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  return view;
}

}  // namespace

PredictionView::PredictionView(QAction* beside, QWidget* parent) : QWidget(parent) {
  hint_ = new QLabel;
  hint_->setObjectName(QStringLiteral("predictionHint"));
  hint_->setWordWrap(true);
  auto* show = new QToolButton;
  show->setDefaultAction(beside);
  show->setToolButtonStyle(Qt::ToolButtonTextOnly);
  instructions_ = new PredictionModel(this);
  ops_ = new PredictionOpModel(this);
  // The per-op table keeps the model's order (each segment's step first, ops in program order)
  // until a header is clicked: the sort is stable.
  opView_ = sortedTable(ops_, PredictionOpModel::Segment, Qt::AscendingOrder, this);
  opView_->setObjectName(QStringLiteral("predictionOpView"));
  // The most time mispredicted first: by relative error, an instruction of a microsecond (a
  // collective over one rank) predicted as none came before a forward pass 2 ms off.
  instructionView_ =
      sortedTable(instructions_, PredictionModel::ErrorTime, Qt::DescendingOrder, this);
  instructionView_->setObjectName(QStringLiteral("predictionView"));
  tables_ = new QSplitter(Qt::Horizontal);
  tables_->addWidget(opView_);
  tables_->addWidget(instructionView_);
  tables_->setStretchFactor(1, 1);
  auto* top = new QHBoxLayout;
  top->addWidget(hint_, 1);
  top->addWidget(show, 0, Qt::AlignTop);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(tables_, 1);
}

void PredictionView::setHint(const QString& text) {
  hint_->setText(text);
}

QString PredictionView::hint() const {
  return hint_->text();
}

void PredictionView::setSegments(const std::vector<PredictedSegment>& segments) {
  instructions_->setSegments(segments);
  ops_->setSegments(segments);
  // A run without a switch has one segment: its column would say nothing, and the tables
  // share the tab's width.
  const bool one = segments.size() <= 1;
  opView_->setColumnHidden(PredictionOpModel::Segment, one);
  instructionView_->setColumnHidden(PredictionModel::Segment, one);
  // The per-op table as wide as its columns (it has few), the instructions the rest.
  opView_->horizontalHeader()->resizeSections(QHeaderView::ResizeToContents);
  const int opWidth = opView_->horizontalHeader()->length() + 2 * opView_->frameWidth() +
                      opView_->verticalScrollBar()->sizeHint().width();
  tables_->setSizes({opWidth, std::max(1, tables_->width() - opWidth)});
}

}  // namespace parascope::ui
