#include "ui/views/communication_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/views/comm_matrix_model.h"
#include "ui/views/comm_op_model.h"

namespace parascope::ui {

CommunicationView::CommunicationView(QWidget* parent) : QWidget(parent) {
  filter_ = new QComboBox;
  filter_->setObjectName(QStringLiteral("operationFilter"));
  matrix_ = new CommMatrixModel(this);
  ops_ = new CommOpModel(this);
  matrixView_ = new QTableView;
  matrixView_->setModel(matrix_);
  matrixView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(ops_);
  proxy->setSortRole(Qt::UserRole);
  auto* opsView = new QTableView;
  opsView->setModel(proxy);
  opsView->setSortingEnabled(true);
  opsView->sortByColumn(CommOpModel::Name, Qt::AscendingOrder);
  opsView->verticalHeader()->hide();
  opsView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Bytes sent, row = sender, column = receiver; operation:")));
  top->addWidget(filter_, 1);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(matrixView_);
  split->addWidget(opsView);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);
  connect(filter_, &QComboBox::currentIndexChanged, this,
          [this](int i) { setOperation(i <= 0 ? QString() : filter_->itemText(i)); });
}

void CommunicationView::setAnalysis(std::shared_ptr<const profiler::TraceAnalysis> analysis) {
  analysis_ = std::move(analysis);
  const QSignalBlocker block(filter_);
  filter_->clear();
  filter_->addItem(tr("all operations"));
  for (const profiler::OpTotal& op : analysis_->comm.ops) {
    filter_->addItem(QString::fromStdString(op.name));
  }
  ops_->setOps(analysis_->comm.ops);
  matrix_->setMatrix(analysis_->comm.matrix);
}

void CommunicationView::setOperation(const QString& op) {
  if (!analysis_) return;
  const int i = op.isEmpty() ? 0 : filter_->findText(op);
  if (i >= 0 && i != filter_->currentIndex()) {
    const QSignalBlocker block(filter_);
    filter_->setCurrentIndex(i);
  }
  matrix_->setMatrix(op.isEmpty()
                         ? analysis_->comm.matrix
                         : profiler::commVolumeOf(*analysis_->trace, op.toStdString()).matrix);
}

void CommunicationView::sessionStarted(const parascope::TrainConfig& /*config*/) {
  setAnalysis(std::make_shared<const profiler::TraceAnalysis>());
}

void CommunicationView::traceReplaced(const ShownTrace& trace) {
  setAnalysis(trace.analysis);
}

}  // namespace parascope::ui
