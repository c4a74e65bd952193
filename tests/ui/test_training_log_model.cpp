// The training log model under QAbstractItemModelTester: rows appear per step, validation loss
// lands on the step it was measured after and carries forward; a step skipped on an fp16
// gradient overflow says so next to its loss scale; throughput is headed by what the model counts.
#include <QAbstractItemModelTester>
#include <QtTest>

#include "ui/views/training_log_model.h"

using parascope::EvalReport;
using parascope::StepReport;
using parascope::ui::TrainingLogModel;

class TestTrainingLogModel : public QObject {
  Q_OBJECT
 private slots:
  void rowsFollowReports();
};

void TestTrainingLogModel::rowsFollowReports() {
  TrainingLogModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
  QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
  for (int i = 1; i <= 3; ++i) {
    StepReport r;
    r.step = i;
    r.loss = 5.0 - i;
    r.lr = 1e-3;
    r.seconds = 0.5;
    r.tokens = 1000;
    r.lossScale = i == 3 ? 32768 : 65536;
    r.skipped = i == 2;
    model.addStep(r);
    if (i == 2) model.addEval(EvalReport{2, 2.25, 0.0, 10});
  }
  QCOMPARE(inserted.count(), 3);
  QCOMPARE(changed.count(), 1);
  QCOMPARE(model.rowCount(), 3);
  QCOMPARE(model.columnCount(), int{TrainingLogModel::ColumnCount});
  QCOMPARE(model.data(model.index(0, TrainingLogModel::Loss)).toString(), QString("4.0000"));
  QCOMPARE(model.data(model.index(0, TrainingLogModel::ValidationLoss)).toString(), QString());
  QCOMPARE(model.data(model.index(1, TrainingLogModel::ValidationLoss), Qt::UserRole).toDouble(),
           2.25);
  QCOMPARE(model.data(model.index(2, TrainingLogModel::ValidationLoss), Qt::UserRole).toDouble(),
           2.25);
  QCOMPARE(model.data(model.index(2, TrainingLogModel::Throughput), Qt::UserRole).toDouble(),
           2000.0);
  QCOMPARE(model.headerData(TrainingLogModel::LearningRate, Qt::Horizontal).toString(),
           QString("LR"));
  // Throughput in what the model counts: a GPT's tokens by default, an image classifier's images.
  QCOMPARE(model.headerData(TrainingLogModel::Throughput, Qt::Horizontal).toString(),
           QString("Tokens/s"));
  QSignalSpy headers(&model, &QAbstractItemModel::headerDataChanged);
  model.setTarget(QStringLiteral("images"));
  QCOMPARE(headers.count(), 1);
  QCOMPARE(model.headerData(TrainingLogModel::Throughput, Qt::Horizontal).toString(),
           QString("Images/s"));
  QCOMPARE(model.data(model.index(0, TrainingLogModel::LossScale)).toString(), QString("65536"));
  QCOMPARE(model.data(model.index(1, TrainingLogModel::LossScale)).toString(),
           QString("65536 (skipped: overflow)"));
  QCOMPARE(model.data(model.index(2, TrainingLogModel::LossScale), Qt::UserRole).toDouble(),
           32768.0);
  model.clear();
  QCOMPARE(model.rowCount(), 0);
}

QTEST_GUILESS_MAIN(TestTrainingLogModel)
#include "test_training_log_model.moc"
