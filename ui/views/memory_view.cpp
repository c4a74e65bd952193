#include "ui/views/memory_view.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QPen>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <set>

#include "core/tensor/allocator.h"
#include "ui/timeline/counter_colors.h"
#include "ui/views/memory_peak_model.h"

namespace parascope::ui {

namespace {

// Enough points for a chart a few thousand pixels wide; the peaks table keeps exact values.
constexpr std::size_t kMaxTimes = 2000;

// Bytes live at `t` in a step function given by time-ordered points.
std::int64_t liveAt(const std::vector<profiler::MemoryPoint>& points, std::int64_t t) {
  auto it =
      std::upper_bound(points.begin(), points.end(), t,
                       [](std::int64_t v, const profiler::MemoryPoint& p) { return v < p.timeNs; });
  return it == points.begin() ? 0 : std::prev(it)->bytes;
}

}  // namespace

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  rank_ = new QComboBox;
  rank_->setObjectName(QStringLiteral("memoryRank"));
  chart_ = new QChart;
  chart_->setTitle(tr("Live bytes by category (MiB)"));
  chart_->legend()->setAlignment(Qt::AlignRight);
  auto* view = new QChartView(chart_);
  view->setRenderHint(QPainter::Antialiasing);
  peaks_ = new MemoryPeakModel(this);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(peaks_);
  proxy->setSortRole(Qt::UserRole);
  auto* table = new QTableView;
  table->setModel(proxy);
  table->setSortingEnabled(true);
  table->sortByColumn(MemoryPeakModel::Rank, Qt::AscendingOrder);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Rank:")));
  top->addWidget(rank_);
  top->addStretch(1);
  scope_ = new QLabel;
  scope_->setObjectName(QStringLiteral("memoryScope"));
  top->addWidget(scope_);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(view);
  split->addWidget(table);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);
  connect(rank_, &QComboBox::currentIndexChanged, this,
          [this](int i) { showRank(rank_->itemData(i).toInt()); });
}

void MemoryView::setAnalysis(std::shared_ptr<const profiler::TraceAnalysis> analysis,
                             std::map<int, std::map<std::string, double>> predicted,
                             int peaksFromStep, std::int64_t fromNs) {
  analysis_ = std::move(analysis);
  const bool scoped = peaksFromStep >= 0 && fromNs != INT64_MIN;
  peaks_->setSeries(analysis_->memory, std::move(predicted), scoped ? fromNs : INT64_MIN);
  scope_->setText(scoped ? tr("Peaks from step %1 on: the strategy the run ended with, which the "
                              "predictions are for")
                               .arg(peaksFromStep)
                         : QString());
  std::set<int> ranks;
  for (const profiler::MemorySeries& s : analysis_->memory) ranks.insert(s.rank);
  const QSignalBlocker block(rank_);
  rank_->clear();
  for (int r : ranks) rank_->addItem(tr("rank %1").arg(r), r);
  showRank(ranks.empty() ? 0 : *ranks.begin());
}

QString MemoryView::scopeText() const {
  return scope_->text();
}

void MemoryView::showRank(int rank) {
  chart_->removeAllSeries();
  for (QAbstractAxis* axis : chart_->axes()) {
    chart_->removeAxis(axis);
    delete axis;
  }
  if (!analysis_) return;
  std::vector<const profiler::MemorySeries*> series;
  const profiler::MemorySeries* disk = nullptr;  // on a disk: a line beside the memory, not in it
  std::set<std::int64_t> timeSet;
  for (const profiler::MemorySeries& s : analysis_->memory) {
    if (s.rank != rank) continue;
    if (s.name == kDiskCounterName) {
      disk = &s;
    } else {
      series.push_back(&s);
    }
    for (const profiler::MemoryPoint& p : s.points) timeSet.insert(p.timeNs);
  }
  if (series.empty() || timeSet.empty()) return;
  // What barely moves at the bottom (model state, buffers), activations on top (they swing
  // every step): a thin band stacked on a swinging one is all edges and reads as a wide one.
  const auto order = [](const std::string& name) {
    static const char* bottomUp[] = {
        "parameter", "gradient",  "optimizer_state", "communication_buffer",
        "data",      "workspace", "activation"};
    const auto* it = std::find(std::begin(bottomUp), std::end(bottomUp), name);
    return static_cast<int>(it - std::begin(bottomUp));
  };
  std::stable_sort(series.begin(), series.end(), [&order](const auto* a, const auto* b) {
    return order(a->name) < order(b->name);
  });
  // Every rank on one time axis, the peaks table's: from the first sample of any rank to the
  // last, so that switching rank keeps the axis and "Peak at ms" reads off it.
  const std::int64_t t0 = peaks_->originNs();
  std::int64_t last = t0;
  for (const profiler::MemorySeries& s : analysis_->memory) {
    if (!s.points.empty()) last = std::max(last, s.points.back().timeNs);
  }
  timeSet.insert(last);
  std::vector<std::int64_t> times(timeSet.begin(), timeSet.end());
  if (times.size() > kMaxTimes) {
    std::vector<std::int64_t> fewer;
    const double stride = static_cast<double>(times.size()) / kMaxTimes;
    for (std::size_t i = 0; i < kMaxTimes; ++i) {
      fewer.push_back(times[static_cast<std::size_t>(static_cast<double>(i) * stride)]);
    }
    fewer.push_back(times.back());
    times = std::move(fewer);
  }
  auto* x = new QValueAxis;
  x->setTitleText(tr("ms"));
  auto* y = new QValueAxis;
  y->setTitleText(tr("MiB"));
  chart_->addAxis(x, Qt::AlignBottom);
  chart_->addAxis(y, Qt::AlignLeft);
  std::vector<double> below(times.size(), 0.0);
  double top = 0;
  for (std::size_t slot = 0; slot < series.size(); ++slot) {
    const profiler::MemorySeries* s = series[slot];
    auto* lower = new QLineSeries;
    auto* upper = new QLineSeries;
    std::vector<double> above(times.size());
    for (std::size_t i = 0; i < times.size(); ++i) {
      above[i] = below[i] + static_cast<double>(liveAt(s->points, times[i])) / (1 << 20);
      // Steps: each value holds until the next time.
      const double ms = static_cast<double>(times[i] - t0) / 1e6;
      if (i > 0) {
        lower->append(ms, below[i - 1]);
        upper->append(ms, above[i - 1]);
      }
      lower->append(ms, below[i]);
      upper->append(ms, above[i]);
      top = std::max(top, above[i]);
    }
    below = std::move(above);
    auto* area = new QAreaSeries(upper, lower);
    upper->setParent(area);
    lower->setParent(area);
    area->setName(QString::fromStdString(s->name));
    // As the timeline's counter rows: one colour per category wherever it is drawn.
    const QColor color = counterColor(s->name, slot);
    area->setColor(color);
    area->setBorderColor(color.darker(130));
    chart_->addSeries(area);
    area->attachAxis(x);
    area->attachAxis(y);
  }
  if (disk != nullptr) {
    auto* line = new QLineSeries;
    for (std::size_t i = 0; i < times.size(); ++i) {
      const double mib = static_cast<double>(liveAt(disk->points, times[i])) / (1 << 20);
      const double ms = static_cast<double>(times[i] - t0) / 1e6;
      if (i > 0) line->append(ms, line->at(line->count() - 1).y());
      line->append(ms, mib);
      top = std::max(top, mib);
    }
    line->setName(tr("%1 (on disk)").arg(QString::fromLatin1(kDiskCounterName)));
    line->setPen(QPen(counterColor(kDiskCounterName, 0), 2, Qt::DashLine));
    chart_->addSeries(line);
    line->attachAxis(x);
    line->attachAxis(y);
  }
  x->setRange(0, static_cast<double>(times.back() - t0) / 1e6);
  y->setRange(0, std::max(top * 1.05, 1e-3));
}

void MemoryView::sessionStarted(const parascope::TrainConfig& /*config*/) {
  setAnalysis(std::make_shared<const profiler::TraceAnalysis>(), {});
}

void MemoryView::traceReplaced(const ShownTrace& trace) {
  setAnalysis(trace.analysis, trace.predictedMemory, trace.fromStep, trace.fromNs);
}

}  // namespace parascope::ui
