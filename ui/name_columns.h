// Tables whose rows are named by kernels, spans or operations of any length. The numbers keep
// their contents' width and the name column takes what is left, elided in the middle (kernel
// names differ at both ends) and whole on hover: a 200-character name used to widen its column
// and push the numbers out of sight.
#pragma once

class QString;
class QTableView;

namespace parascope::ui {

// After setModel; the model gives the whole name as Qt::ToolTipRole of `nameColumn`.
void fitNamesBesideNumbers(QTableView* table, int nameColumn);
// For a model whose columns change with its contents: the column headed `header` ("name"), when
// there is one; without it every column keeps its contents' width (a stretched number column
// would push the others apart).
void fitNamesBesideNumbers(QTableView* table, const QString& header);

}  // namespace parascope::ui
