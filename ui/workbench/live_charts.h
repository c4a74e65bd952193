// The live charts above the timeline: loss (train and validation), tokens/s, MFU, exposed
// communication % and loss scale against the step, each a small Qt Charts view. Every strategy
// switch draws a vertical marker on each chart, labelled "before → after". Points are collected
// as reports are drained and reach the series, with the axes rescaled, only in refresh(): the
// window calls it a few times a second, so a burst of fast steps costs one redraw, not one per
// frame or per point.
#pragma once

#include <QList>
#include <QPointF>
#include <QString>
#include <QWidget>
#include <vector>

class QChart;
class QChartView;
class QGraphicsSimpleTextItem;
class QLineSeries;
class QValueAxis;

namespace parascope::ui {

class LiveCharts : public QWidget {
  Q_OBJECT
 public:
  enum Chart { Loss, TokensPerSecond, Mfu, ExposedComm, LossScale, ChartCount };

  explicit LiveCharts(QWidget* parent = nullptr);

  // One optimizer step: its loss, tokens/s, MFU (fraction), exposed communication (fraction of
  // the step, mean over ranks) and loss scale.
  void addStep(int step, double loss, double tokensPerSecond, double mfu, double exposedComm,
               double lossScale);
  void addValidation(int step, double loss);
  void addSwitch(int step, const QString& label);
  void clear();
  // Appends the points collected since the last refresh, rescales the axes and places the
  // markers' labels.
  void refresh();
  // Whether points or markers arrived since the last refresh.
  bool stale() const { return stale_; }

  QChartView* view(Chart c) const { return charts_[c].view; }
  // The chart's points (step, value), exactly as reported, drawn or not yet; the loss chart's
  // training series.
  int pointCount(Chart c) const;
  QList<QPointF> points(Chart c) const;
  int switchCount() const { return static_cast<int>(switches_.size()); }
  QList<int> switchSteps() const;
  // Where each switch's label sits on chart `c` (scene coordinates), in switch order.
  QList<QRectF> switchLabelBoxes(Chart c) const;

 private:
  struct Plot {
    QChartView* view = nullptr;
    QChart* chart = nullptr;
    QLineSeries* series = nullptr;
    QValueAxis* x = nullptr;
    QValueAxis* y = nullptr;
    QList<QPointF> pending;  // reported, not yet in the series
    double lo = 0, hi = 0;
    bool any = false;
  };
  struct Marker {
    int step = 0;
    QString label;
    std::vector<QLineSeries*> lines;  // one per chart
    std::vector<QGraphicsSimpleTextItem*> labels;
  };
  void append(Plot& p, QList<QPointF>& pending, double x, double y);

  std::vector<Plot> charts_;
  QLineSeries* validation_ = nullptr;
  QList<QPointF> validationPending_;
  bool stale_ = false;
  std::vector<Marker> switches_;
  int lastStep_ = 0;
};

}  // namespace parascope::ui
