// A splitter of two parts that lays them side by side while it is short and stacks them while
// it is tall. The workbench's view tabs are wide and short unless the user enlarges them, and a
// table stacked over another got little more than its header there (the Planner's candidates,
// Compare's segments).
#pragma once

#include <QSplitter>
#include <functional>

namespace parascope::ui {

class AdaptiveSplitter : public QSplitter {
  Q_OBJECT
 public:
  // Stacked from `stackedFrom` pixels of height on; `firstShare` of the length to the first
  // part whenever the orientation changes.
  explicit AdaptiveSplitter(int stackedFrom, double firstShare = 0.6, QWidget* parent = nullptr);
  // Told the new orientation, to turn what the parts hold with it.
  void setOnTurn(std::function<void(Qt::Orientation)> onTurn) { onTurn_ = std::move(onTurn); }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  int stackedFrom_;
  double firstShare_;
  std::function<void(Qt::Orientation)> onTurn_;
};

}  // namespace parascope::ui
