#include "ui/views/pipeline_view.h"

#include <QPainter>
#include <QScrollArea>
#include <algorithm>
#include <map>

namespace parascope::ui {

namespace {
constexpr int kRowHeight = 34;
constexpr int kLeft = 110;   // rank labels
constexpr int kRight = 230;  // bubble figures
constexpr int kTop = 28;
}  // namespace

PipelineView::PipelineView(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(120);
  setAutoFillBackground(true);
}

void PipelineView::setAnalysis(const profiler::TraceAnalysis& analysis,
                               const std::optional<TrainConfig>& config) {
  rows_.clear();
  step_ = -1;
  windowNs_ = 0;
  ideal_ = -1;
  emptyText_.clear();
  // The run's last step: the steady state, not the warm-up, and the strategy it ended with. A
  // run switched live from a pipeline to none has bubbles only in steps that are over: showing
  // them would put a bubble beside Compare's 0% for the strategy now running.
  int lastStep = -1, lastPipelined = -1;
  for (const profiler::Event& e : analysis.trace->events) {
    if (e.category == profiler::Category::Step && e.kind == profiler::EventKind::Span)
      lastStep = std::max(lastStep, e.step);
  }
  for (const profiler::StageBubble& b : analysis.bubbles)
    lastPipelined = std::max(lastPipelined, b.step);
  step_ = lastStep < 0 || lastStep == lastPipelined ? lastPipelined : -1;
  if (lastPipelined < 0) {
    emptyText_ =
        tr("No pipeline in this trace: run with pipeline_model_parallel_size > 1 to see "
           "the schedule per rank.");
  } else if (step_ < 0) {
    emptyText_ = tr("The last step (%1) ran without a pipeline: no stage waits for another. "
                    "Steps up to %2 ran with one; the timeline shows them.")
                     .arg(lastStep)
                     .arg(lastPipelined);
  }
  if (step_ >= 0) {
    std::int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    std::map<int, Row> byRank;
    for (const profiler::Event& e : analysis.trace->events) {
      if (e.category != profiler::Category::Instruction || e.step != step_ ||
          e.lane != trace::lane::kCompute || e.kind != profiler::EventKind::Span) {
        continue;
      }
      t0 = std::min(t0, e.startNs);
      t1 = std::max(t1, e.endNs);
    }
    for (const profiler::Event& e : analysis.trace->events) {
      if (e.category != profiler::Category::Instruction || e.step != step_ ||
          e.lane != trace::lane::kCompute || e.kind != profiler::EventKind::Span) {
        continue;
      }
      Row& row = byRank[e.rank];
      row.rank = e.rank;
      row.stage = std::max(row.stage, e.stage);
      const QString name = QString::fromUtf8(e.name);
      row.boxes.push_back({static_cast<double>(e.startNs - t0), static_cast<double>(e.endNs - t0),
                           e.microBatch >= 0 ? name + QString::number(e.microBatch) : name,
                           name == QLatin1String("F")                                        ? 0
                           : name.startsWith(QLatin1Char('B')) || name == QLatin1String("W") ? 1
                                                                                             : 2});
    }
    for (const profiler::StageBubble& b : analysis.bubbles) {
      if (b.step == step_ && byRank.count(b.rank)) byRank[b.rank].bubble = b.bubbleFraction;
    }
    for (auto& [rank, row] : byRank) rows_.push_back(std::move(row));
    windowNs_ = t1 > t0 ? static_cast<double>(t1 - t0) : 0;
  }
  if (config && config->parallel.pipeline > 1) {
    const PipelineShape shape{config->parallel.pipeline, config->gradientAccumulation,
                              config->pipeline.chunks};
    ideal_ = profiler::idealBubbleOf(*analysis.trace, config->pipeline.schedule, shape);
  }
  setMinimumHeight(kTop + kRowHeight * static_cast<int>(std::max<std::size_t>(rows_.size(), 1)) +
                   30);
  update();
}

void PipelineView::showPending(const QString& why) {
  rows_.clear();
  step_ = -1;
  windowNs_ = 0;
  ideal_ = -1;
  emptyText_ = why;
  update();
}

void PipelineView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  if (rows_.empty() || windowNs_ <= 0) {
    painter.drawText(rect().adjusted(12, 12, -12, -12),
                     Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                     emptyText_.isEmpty() ? tr("No pipeline in this trace: run with "
                                               "pipeline_model_parallel_size > 1 to see the "
                                               "schedule per rank.")
                                          : emptyText_);
    return;
  }
  const double width = std::max(50, this->width() - kLeft - kRight);
  const double scale = width / windowNs_;
  painter.drawText(QRect(8, 4, this->width() - 16, kTop - 6), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("Step %1, %2 ms: compute instructions per rank; idle time hatched")
                       .arg(step_)
                       .arg(windowNs_ / 1e6, 0, 'f', 3));
  const QColor colours[] = {QColor(0x4c, 0xaf, 0x50), QColor(0xab, 0x6f, 0xd8),
                            QColor(0x80, 0x80, 0x80)};
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    const int y = kTop + static_cast<int>(i) * kRowHeight;
    const QRect lane(kLeft, y + 3, static_cast<int>(width), kRowHeight - 6);
    painter.setPen(palette().text().color());
    painter.drawText(QRect(8, y, kLeft - 12, kRowHeight), Qt::AlignLeft | Qt::AlignVCenter,
                     tr("rank %1 (stage %2)").arg(row.rank).arg(row.stage));
    // Idle first: the whole step hatched, then the busy boxes over it.
    painter.fillRect(lane, QBrush(QColor(0xe0, 0x60, 0x60, 90), Qt::BDiagPattern));
    painter.setPen(QPen(QColor(0x55, 0x55, 0x55), 0.5));
    for (const Box& b : row.boxes) {
      const QRectF box(kLeft + b.start * scale, lane.top(),
                       std::max(1.0, (b.end - b.start) * scale), lane.height());
      painter.fillRect(box, colours[b.kind]);
      painter.drawRect(box);
      if (box.width() > painter.fontMetrics().horizontalAdvance(b.label) + 4) {
        painter.setPen(Qt::white);
        painter.drawText(box, Qt::AlignCenter, b.label);
        painter.setPen(QPen(QColor(0x55, 0x55, 0x55), 0.5));
      }
    }
    painter.setPen(palette().text().color());
    const QString figures = row.bubble < 0 ? QString()
                            : ideal_ < 0   ? tr("bubble %1%").arg(100 * row.bubble, 0, 'f', 1)
                                           : tr("bubble %1% (ideal %2%)")
                                               .arg(100 * row.bubble, 0, 'f', 1)
                                               .arg(100 * ideal_, 0, 'f', 1);
    painter.drawText(QRect(kLeft + static_cast<int>(width) + 10, y, kRight - 14, kRowHeight),
                     Qt::AlignLeft | Qt::AlignVCenter, figures);
  }
}

QWidget* PipelineView::tab() {
  if (!scroll_) {
    scroll_ = new QScrollArea;
    scroll_->setWidget(this);
    scroll_->setWidgetResizable(true);
  }
  return scroll_;
}

void PipelineView::sessionStarted(const parascope::TrainConfig& /*config*/) {
  showPending(tr("The pipeline schedule of this run is shown when it ends."));
}

void PipelineView::traceReplaced(const ShownTrace& trace) {
  setAnalysis(*trace.analysis, trace.config);
}

}  // namespace parascope::ui
