// FlameView; see flame_view.h. Boxes are laid out from the graph on every paint and hit test:
// a graph has at most a few thousand nodes, and boxes under a pixel wide are not laid out.
#include "ui/timeline/flame_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <functional>

#include "profiler/timeline/timeline_lod.h"

namespace parascope::ui {

namespace {

// Warm hues, one per name, so a kernel keeps its colour wherever it sits.
QColor colorOf(const std::string& name) {
  const std::size_t h = std::hash<std::string>{}(name);
  return QColor::fromHsv(static_cast<int>(h % 45), 110 + static_cast<int>((h >> 8) % 90),
                         215 + static_cast<int>((h >> 16) % 35));
}

QString duration(std::int64_t ns) {
  return QString::fromStdString(profiler::formatDuration(ns));
}

}  // namespace

FlameView::FlameView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("flameView"));
  setMouseTracking(true);
  setMinimumHeight(kTop + 3 * kRowHeight);
}

void FlameView::setGraph(profiler::FlameGraph graph) {
  graph_ = std::move(graph);
  zoomed_ = -1;
  setMinimumHeight(kTop + std::max(graph_.depth, 3) * kRowHeight);
  updateGeometry();
  update();
}

void FlameView::zoomTo(int node) {
  zoomed_ = node >= 0 && node < static_cast<int>(graph_.nodes.size()) ? node : -1;
  update();
}

QSize FlameView::sizeHint() const {
  return {380, kTop + std::max(graph_.depth, 3) * kRowHeight};
}

std::vector<FlameView::Box> FlameView::boxes() const {
  std::vector<Box> out;
  const double width = this->width();
  const auto node = [&](int i) -> const profiler::FlameNode& {
    return graph_.nodes[static_cast<std::size_t>(i)];
  };
  const auto rowOf = [](int depth) { return kTop + depth * kRowHeight; };
  // Lays `children` out side by side from x, at `scale` pixels per ns, and their children under
  // them.
  std::function<void(const std::vector<int>&, double, double)> place =
      [&](const std::vector<int>& children, double x, double scale) {
        for (int c : children) {
          const double w = static_cast<double>(node(c).totalNs) * scale;
          if (w >= 1) {
            out.push_back({c, QRectF(x, rowOf(node(c).depth), w, kRowHeight - 1)});
            place(node(c).children, x, scale);
          }
          x += w;
        }
      };
  if (zoomed_ < 0) {
    if (graph_.totalNs > 0) place(graph_.roots, 0, width / static_cast<double>(graph_.totalNs));
    return out;
  }
  // The zoomed node and its ancestors across the whole width, its descendants scaled to it.
  for (int a = zoomed_; a >= 0; a = node(a).parent)
    out.push_back({a, QRectF(0, rowOf(node(a).depth), width, kRowHeight - 1)});
  if (node(zoomed_).totalNs > 0)
    place(node(zoomed_).children, 0, width / static_cast<double>(node(zoomed_).totalNs));
  return out;
}

int FlameView::nodeAt(QPointF pos) const {
  for (const Box& b : boxes()) {
    if (b.rect.contains(pos)) return b.node;
  }
  return -1;
}

QString FlameView::describe(int node) const {
  if (node < 0 || node >= static_cast<int>(graph_.nodes.size())) return {};
  const profiler::FlameNode& n = graph_.nodes[static_cast<std::size_t>(node)];
  QString path = QString::fromStdString(n.name);
  for (int a = n.parent; a >= 0; a = graph_.nodes[static_cast<std::size_t>(a)].parent)
    path = QString::fromStdString(graph_.nodes[static_cast<std::size_t>(a)].name) +
           QStringLiteral(" \u203a ") + path;
  const double share = graph_.totalNs > 0 ? 100.0 * static_cast<double>(n.totalNs) /
                                                static_cast<double>(graph_.totalNs)
                                          : 0;
  return tr("%1\ntotal %2 (%3% of the selection), self %4, %n span(s)", nullptr,
            static_cast<int>(std::min<std::int64_t>(n.count, INT32_MAX)))
      .arg(path, duration(n.totalNs))
      .arg(share, 0, 'f', 1)
      .arg(duration(n.selfNs));
}

bool FlameView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QString text = describe(nodeAt(help->pos()));
    if (text.isEmpty()) {
      QToolTip::hideText();
    } else {
      QToolTip::showText(help->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(e);
}

void FlameView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  zoomTo(nodeAt(event->position()));
}

void FlameView::paintEvent(QPaintEvent* /*event*/) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  QString header;
  if (graph_.nodes.empty()) {
    header = tr("Shift+drag a box over the timeline to see the flame graph of its spans.");
  } else if (zoomed_ < 0) {
    header = tr("%1 in the selection; click a box to zoom in").arg(duration(graph_.totalNs));
  } else {
    header = tr("Zoomed to %1; click a row above to zoom out, empty space for all")
                 .arg(QString::fromStdString(graph_.nodes[static_cast<std::size_t>(zoomed_)].name));
  }
  p.setPen(palette().color(QPalette::Disabled, QPalette::Text));
  p.drawText(QRectF(4, 0, width() - 8, kTop), Qt::AlignVCenter | Qt::AlignLeft,
             p.fontMetrics().elidedText(header, Qt::ElideRight, width() - 8));
  const QFontMetrics fm = p.fontMetrics();
  for (const Box& b : boxes()) {
    const profiler::FlameNode& n = graph_.nodes[static_cast<std::size_t>(b.node)];
    p.fillRect(b.rect, colorOf(n.name));
    if (b.rect.width() < 24) continue;
    p.setPen(Qt::black);
    p.drawText(b.rect.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft,
               fm.elidedText(QString::fromStdString(n.name), Qt::ElideRight,
                             static_cast<int>(b.rect.width()) - 6));
  }
}

}  // namespace parascope::ui
