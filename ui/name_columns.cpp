#include "ui/name_columns.h"

#include <QAbstractItemModel>
#include <QHeaderView>
#include <QTableView>

namespace parascope::ui {

void fitNamesBesideNumbers(QTableView* table, int nameColumn) {
  table->setTextElideMode(Qt::ElideMiddle);
  auto apply = [table, nameColumn] {
    QHeaderView* header = table->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Only a section that is there: Qt does not check the index.
    if (nameColumn < header->count())
      header->setSectionResizeMode(nameColumn, QHeaderView::Stretch);
  };
  apply();
  // Columns come and go with the model's contents (each analysis has its own): set them again.
  QObject::connect(table->model(), &QAbstractItemModel::modelReset, table, apply);
  QObject::connect(table->model(), &QAbstractItemModel::columnsInserted, table, apply);
}

}  // namespace parascope::ui
