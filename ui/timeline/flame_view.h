// The flame graph of the timeline's selection (profiler::flameGraph), drawn top down as an
// icicle: the outermost spans in the first row, each child under its parent, widths by time
// inside the selection. Hovering a box tells its name, total, self time, count and share of the
// selection; clicking it zooms in (it fills the width, its ancestors stay above it); clicking
// an ancestor zooms out to it, clicking empty space back to the whole selection.
#pragma once

#include <QRectF>
#include <QString>
#include <QWidget>
#include <vector>

#include "profiler/timeline/flame_graph.h"

namespace parascope::ui {

class FlameView : public QWidget {
  Q_OBJECT
 public:
  explicit FlameView(QWidget* parent = nullptr);

  void setGraph(profiler::FlameGraph graph);
  const profiler::FlameGraph& graph() const { return graph_; }
  // The node that fills the width; -1: the whole selection.
  int zoomed() const { return zoomed_; }
  void zoomTo(int node);
  // The node drawn at `pos`, -1 where none is.
  int nodeAt(QPointF pos) const;
  QString describe(int node) const;
  QSize sizeHint() const override;

  static constexpr int kRowHeight = 20;
  static constexpr int kTop = 22;  // the line above the rows says what is shown

 protected:
  bool event(QEvent* e) override;
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  struct Box {
    int node;
    QRectF rect;
  };
  std::vector<Box> boxes() const;

  profiler::FlameGraph graph_;
  int zoomed_ = -1;
};

}  // namespace parascope::ui
