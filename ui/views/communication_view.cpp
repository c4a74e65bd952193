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
  empty_ = new QLabel;
  empty_->setObjectName(QStringLiteral("communicationEmpty"));
  empty_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(empty_);
  layout->addWidget(split, 1);
  showEmpty(tr("Run a session or open a trace to see the bytes each rank sends to each other."));
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
  // Empty tables alone would read as a fault: say why there is nothing.
  showEmpty(analysis_->comm.ops.empty()
                ? tr("No rank sent anything to another in this trace: a run on one rank has no "
                     "one to send to.")
                : QString());
}

void CommunicationView::showEmpty(const QString& why) {
  empty_->setText(why);
  empty_->setHidden(why.isEmpty());
}

QString CommunicationView::emptyText() const {
  return empty_->isHidden() ? QString() : empty_->text();
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
  showEmpty(tr("The communication of this run is shown when it ends."));
}

void CommunicationView::traceReplaced(const ShownTrace& trace) {
  setAnalysis(trace.analysis);
}

}  // namespace parascope::ui
