#include "ui/adaptive_splitter.h"

#include <QResizeEvent>

namespace parascope::ui {

AdaptiveSplitter::AdaptiveSplitter(int stackedFrom, double firstShare, QWidget* parent)
    : QSplitter(Qt::Vertical, parent), stackedFrom_(stackedFrom), firstShare_(firstShare) {
  setChildrenCollapsible(false);
}

void AdaptiveSplitter::resizeEvent(QResizeEvent* event) {
  QSplitter::resizeEvent(event);
  const Qt::Orientation want = height() < stackedFrom_ ? Qt::Horizontal : Qt::Vertical;
  if (orientation() == want) return;
  setOrientation(want);
  if (onTurn_) onTurn_(want);
  const int along = want == Qt::Horizontal ? width() : height();
  const auto first = static_cast<int>(along * firstShare_);
  setSizes({first, along - first});
}

}  // namespace parascope::ui
