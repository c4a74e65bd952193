#include "ui/name_columns.h"

#include <QAbstractItemModel>
#include <QHeaderView>
#include <QString>
#include <QTableView>
#include <functional>

namespace parascope::ui {

namespace {

void keepFitting(QTableView* table, const std::function<int()>& nameColumn) {
  table->setTextElideMode(Qt::ElideMiddle);
  auto apply = [table, nameColumn] {
    QHeaderView* header = table->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Only a section that is there: Qt does not check the index.
    const int column = nameColumn();
    if (column >= 0 && column < header->count())
      header->setSectionResizeMode(column, QHeaderView::Stretch);
  };
  apply();
  // Columns come and go with the model's contents (each analysis has its own): set them again.
  QObject::connect(table->model(), &QAbstractItemModel::modelReset, table, apply);
  QObject::connect(table->model(), &QAbstractItemModel::columnsInserted, table, apply);
}

}  // namespace

void fitNamesBesideNumbers(QTableView* table, int nameColumn) {
  keepFitting(table, [nameColumn] { return nameColumn; });
}

void fitNamesBesideNumbers(QTableView* table, const QString& header) {
  keepFitting(table, [table, header] {
    const QAbstractItemModel* model = table->model();
    for (int c = 0; c < model->columnCount(); ++c)
      if (model->headerData(c, Qt::Horizontal).toString() == header) return c;
    return -1;
  });
}

}  // namespace parascope::ui
