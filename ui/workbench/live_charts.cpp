#include "ui/workbench/live_charts.h"

#include <QChart>
#include <QChartView>
#include <QFont>
#include <QGraphicsSimpleTextItem>
#include <QHBoxLayout>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <utility>

namespace parascope::ui {

namespace {

// The smallest of 1, 2, 5 x 10^k at least `raw`: tick intervals a reader counts in.
double niceStep(double raw) {
  if (!(raw > 0)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw * (1 - 1e-9)) return m * power;
  return 10 * power;
}

// The range [lo, hi] with ticks at multiples of `interval`, labelled with as many decimals as
// the interval has. Fixed ticks while range and interval change: a new range under the old
// interval (a range of 10^4 under an interval of 10^-4) would lay out that many ticks.
void setScale(QValueAxis* axis, double lo, double hi, double interval) {
  axis->setTickType(QValueAxis::TicksFixed);
  axis->setRange(lo, hi);
  // A multiple of the interval next to the range: Qt counts from the anchor to the first tick
  // in an int, which a value far from 0 over a small interval would overflow.
  axis->setTickAnchor(std::floor(lo / interval) * interval);
  axis->setTickInterval(interval);
  axis->setTickType(QValueAxis::TicksDynamic);
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(interval) + 1e-9)));
  axis->setLabelFormat(QStringLiteral("%.") + QString::number(decimals) + QStringLiteral("f"));
}

}  // namespace

LiveCharts::LiveCharts(QWidget* parent) : QWidget(parent) {
  const char* titles[ChartCount] = {"Loss", "Tokens/s", "MFU %", "Exposed comm %", "Loss scale"};
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  charts_.resize(ChartCount);
  for (int c = 0; c < ChartCount; ++c) {
    Plot& p = charts_[c];
    p.chart = new QChart;
    p.chart->setTitle(QString::fromLatin1(titles[c]));
    p.chart->setMargins(QMargins(2, 2, 2, 2));
    p.chart->legend()->setVisible(c == Loss);
    p.chart->legend()->setAlignment(Qt::AlignBottom);
    p.series = new QLineSeries;
    p.series->setName(c == Loss ? tr("train") : QString::fromLatin1(titles[c]));
    p.chart->addSeries(p.series);
    p.x = new QValueAxis;
    p.x->setTitleText(tr("step"));
    p.y = new QValueAxis;
    QFont small = p.x->labelsFont();
    small.setPointSizeF(small.pointSizeF() * 0.8);
    p.x->setLabelsFont(small);
    p.x->setTitleFont(small);
    p.y->setLabelsFont(small);
    p.chart->legend()->setFont(small);
    p.chart->addAxis(p.x, Qt::AlignBottom);
    p.chart->addAxis(p.y, Qt::AlignLeft);
    p.series->attachAxis(p.x);
    p.series->attachAxis(p.y);
    p.view = new QChartView(p.chart);
    p.view->setObjectName(QStringLiteral("chart%1").arg(c));
    p.view->setRenderHint(QPainter::Antialiasing);
    p.view->setMinimumSize(180, 170);
    layout->addWidget(p.view);
  }
  validation_ = new QLineSeries;
  validation_->setName(tr("validation"));
  validation_->setPointsVisible(true);
  charts_[Loss].chart->addSeries(validation_);
  validation_->attachAxis(charts_[Loss].x);
  validation_->attachAxis(charts_[Loss].y);
}

void LiveCharts::append(Plot& p, QList<QPointF>& pending, double x, double y) {
  if (!std::isfinite(y)) return;
  pending.append(QPointF(x, y));
  stale_ = true;
  p.lo = p.any ? std::min(p.lo, y) : y;
  p.hi = p.any ? std::max(p.hi, y) : y;
  p.any = true;
}

void LiveCharts::addStep(int step, double loss, double tokensPerSecond, double mfu,
                         double exposedComm, double lossScale) {
  lastStep_ = std::max(lastStep_, step);
  const double values[ChartCount] = {loss, tokensPerSecond, 100.0 * mfu, 100.0 * exposedComm,
                                     lossScale};
  for (int c = 0; c < ChartCount; ++c) append(charts_[c], charts_[c].pending, step, values[c]);
}

void LiveCharts::addValidation(int step, double loss) {
  append(charts_[Loss], validationPending_, step, loss);
}

void LiveCharts::addSwitch(int step, const QString& label) {
  Marker m;
  m.step = step;
  m.label = label;
  for (Plot& p : charts_) {
    auto* line = new QLineSeries;
    QPen pen(QColor(0xd3, 0x54, 0x00));
    pen.setWidth(2);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    line->setName(label);
    p.chart->addSeries(line);
    line->attachAxis(p.x);
    line->attachAxis(p.y);
    // The marker is not a data series: keep it out of the legend.
    for (auto* legendMarker : p.chart->legend()->markers(line)) legendMarker->setVisible(false);
    auto* text = new QGraphicsSimpleTextItem(label, p.chart);
    text->setBrush(QColor(0xd3, 0x54, 0x00));
    text->setFont(p.x->labelsFont());
    text->setToolTip(label);
    m.lines.push_back(line);
    m.labels.push_back(text);
  }
  switches_.push_back(std::move(m));
  stale_ = true;
}

void LiveCharts::clear() {
  for (Marker& m : switches_) {
    for (std::size_t c = 0; c < m.lines.size(); ++c) {
      charts_[c].chart->removeSeries(m.lines[c]);
      delete m.lines[c];
      delete m.labels[c];
    }
  }
  switches_.clear();
  for (Plot& p : charts_) {
    p.series->clear();
    p.pending.clear();
    p.any = false;
  }
  validation_->clear();
  validationPending_.clear();
  lastStep_ = 0;
  refresh();
}

int LiveCharts::pointCount(Chart c) const {
  return static_cast<int>(charts_[c].series->count() + charts_[c].pending.size());
}

QList<QPointF> LiveCharts::points(Chart c) const {
  return charts_[c].series->points() + charts_[c].pending;
}

QList<QRectF> LiveCharts::switchLabelBoxes(Chart c) const {
  QList<QRectF> boxes;
  for (const Marker& m : switches_) {
    const QGraphicsSimpleTextItem* label = m.labels[static_cast<std::size_t>(c)];
    boxes << label->mapRectToScene(label->boundingRect());
  }
  return boxes;
}

QList<int> LiveCharts::switchSteps() const {
  QList<int> steps;
  for (const Marker& m : switches_) steps << m.step;
  return steps;
}

void LiveCharts::refresh() {
  stale_ = false;
  // One replace per series: one change signal, one redraw. Qt 6.4's append of a list signals
  // (and re-lays out the whole line) once per point, quadratic in a batch: a fast run's GUI fell
  // half a minute behind its steps.
  const auto flush = [](QLineSeries* series, QList<QPointF>& pending) {
    if (pending.isEmpty()) return;
    series->replace(series->points() + std::exchange(pending, {}));
  };
  flush(validation_, validationPending_);
  for (Plot& p : charts_) {
    flush(p.series, p.pending);
    // Steps are integers: ticks at whole steps, at most about five of them.
    const int steps = std::max(1, lastStep_);
    setScale(p.x, 0, steps, std::max(1.0, niceStep(steps / 4.0)));
    // A constant series (fp32's loss scale, no exposed communication) still gets a readable
    // range around its value (0..1 around 0); a series that never goes below 0 gets no
    // negative axis. Ticks at round values, about three to six of them.
    const double span = p.hi - p.lo;
    const double pad = !p.any        ? 1
                       : span > 0    ? 0.05 * span
                       : p.hi != 0.0 ? 0.05 * std::abs(p.hi)
                                     : 1;
    double lo = p.any ? p.lo - pad : 0;
    const double hi = p.any ? p.hi + pad : 1;
    if (p.any && p.lo >= 0) lo = std::max(0.0, lo);
    setScale(p.y, lo, hi, niceStep((hi - lo) / 5.0));
  }
  for (std::size_t k = 0; k < switches_.size(); ++k) {
    Marker& m = switches_[k];
    for (std::size_t c = 0; c < m.lines.size(); ++c) {
      const Plot& p = charts_[c];
      m.lines[c]->replace(
          QList<QPointF>{{double(m.step), p.y->min()}, {double(m.step), p.y->max()}});
      const QPointF top = p.chart->mapToPosition(QPointF(m.step, p.y->max()), m.lines[c]);
      const QRectF plot = p.chart->plotArea();
      // A label wider than the plot is cut short with an ellipsis (its tooltip keeps it whole)
      // rather than cut off at the chart's edge.
      m.labels[c]->setText(
          QFontMetricsF(m.labels[c]->font())
              .elidedText(m.label, Qt::ElideRight, std::max(0.0, plot.width() - 4)));
      const QRectF box = m.labels[c]->boundingRect();
      // Right of the line when there is room, else left of it, and never outside the plot
      // (a long label in a narrow chart then covers the line rather than the axis).
      double x = top.x() + 3 + box.width() < plot.right() ? top.x() + 3 : top.x() - 3 - box.width();
      x = std::max(plot.left() + 2, std::min(x, plot.right() - box.width()));
      // Successive switches' labels on three rows in turn: two switches a few steps apart
      // wrote over each other.
      m.labels[c]->setPos(x, top.y() + 2 + static_cast<double>(k % 3) * box.height());
    }
  }
}

}  // namespace parascope::ui
