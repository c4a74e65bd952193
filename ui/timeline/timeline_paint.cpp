// Painting of TimelineView: labels on the left, the ruler with search marks on top, then the
// rows from a draw list built for this frame only (no caches that can go stale).
#include <QFontMetrics>
#include <QPainter>
#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "core/common/checked_math.h"
#include "ui/timeline/counter_colors.h"
#include "ui/timeline/timeline_view.h"

namespace parascope::ui {

namespace {

QColor categoryColor(profiler::Category c, const std::string& name) {
  switch (c) {
    case profiler::Category::Compute: return QColor(0x4e, 0x79, 0xa7);
    case profiler::Category::Communication: return QColor(0xe1, 0x57, 0x59);
    case profiler::Category::Memcpy:
    case profiler::Category::Memset: return QColor(0x76, 0xb7, 0xb2);
    case profiler::Category::Runtime: return QColor(0x9c, 0x75, 0x5f);
    case profiler::Category::Sync: return QColor(0xba, 0xb0, 0xac);
    case profiler::Category::DataLoad: return QColor(0xed, 0xc9, 0x48);
    case profiler::Category::Optimizer: return QColor(0xb0, 0x7a, 0xa1);
    case profiler::Category::Step: return QColor(0x8c, 0x8c, 0x8c);
    case profiler::Category::Instruction:
      // Pipeline instructions by kind: forward, backward (input half), weight half.
      if (!name.empty() && name[0] == 'F') return QColor(0x59, 0xa1, 0x4f);
      if (!name.empty() && name[0] == 'W') return QColor(0xf2, 0x8e, 0x2b);
      return QColor(0xaf, 0x7a, 0xd6);
    case profiler::Category::Memory: return QColor(0xff, 0x9d, 0xa7);
    case profiler::Category::Io: return diskColor();
    case profiler::Category::Host:
    case profiler::Category::Overhead: break;
  }
  return QColor(0x9a, 0xa5, 0xb1);
}

// Counter tracks side by side (memory by category, imported counters) must tell apart at a
// glance, and a memory category must look as in the Memory view: counterColor's fixed colours
// for the categories; any other name takes the palette's next colour in the order names first
// appear among the tracks. Tracks are only ever appended, so a track keeps its colour from frame
// to frame and as live events add tracks; the same name on every rank keeps one colour.
QColor trackColor(const profiler::TimelineIndex& index, std::size_t track) {
  const std::vector<profiler::CounterTrack>& tracks = index.counters();
  const std::uint32_t name = tracks[track].name >> 4;
  std::vector<std::uint32_t> seen;  // distinct names before this track's: a few dozen at most
  for (std::size_t t = 0; t < track; ++t) {
    const std::uint32_t n = tracks[t].name >> 4;
    if (n == name) break;
    if (std::find(seen.begin(), seen.end(), n) == seen.end()) seen.push_back(n);
  }
  return counterColor(index.name(tracks[track].name), seen.size());
}

struct SpanStyle {
  QColor color, lone, block;  // a drawn span, a block standing for one span, for several
  QString name;
};

SpanStyle spanStyle(const profiler::TimelineIndex& index, std::uint32_t nameCat) {
  const std::string& name = index.name(nameCat);
  SpanStyle style;
  style.color = categoryColor(static_cast<profiler::Category>(nameCat & 15), name);
  style.lone = style.color.darker(120);
  style.block = style.color.darker(150);
  style.name = QString::fromStdString(name);
  return style;
}

// Fills of one row, a run of touching rectangles of one colour in one call: at coarse zooms a
// row is hundreds of narrow items, and each fill costs more than the pixels it sets.
class FillRun {
 public:
  explicit FillRun(QPainter& p) : p_(p) {}
  ~FillRun() { flush(); }
  FillRun(const FillRun&) = delete;
  FillRun& operator=(const FillRun&) = delete;
  void add(const QRect& r, const QColor& c) {
    if (run_.isValid() && r.left() == run_.right() + 1 && r.top() == run_.top() &&
        r.height() == run_.height() && c == color_) {
      run_.setRight(r.right());
      return;
    }
    flush();
    run_ = r;
    color_ = c;
  }
  void flush() {
    if (run_.isValid()) p_.fillRect(run_, color_);
    run_ = QRect();
  }

 private:
  QPainter& p_;
  QRect run_;
  QColor color_;
};

// Qt 6 hands a fill of 96 or more scanlines to its GUI thread pool in segments; the wake-up
// and wait cost more than the fill (tens of ms on a loaded machine), so tall fills go in
// strips the raster engine fills on this thread.
void fillTall(QPainter& p, const QRect& r, const QColor& c) {
  constexpr int kStrip = 90;
  for (int y = r.top(); y <= r.bottom(); y += kStrip) {
    p.fillRect(QRect(r.left(), y, r.width(), std::min(kStrip, r.bottom() + 1 - y)), c);
  }
}

}  // namespace

void TimelineView::render(QPainter& p) const {
  fillTall(p, QRect(0, 0, width(), height()), QColor(0xfa, 0xfa, 0xfa));
  if (index_->eventCount() > 0) {
    p.save();
    p.setClipRect(QRect(0, kRulerHeight, width(), height() - kRulerHeight));
    paintRows(p);
    paintFlows(p);
    paintBookmarkLines(p);
    p.restore();
    paintLabels(p);
    paintRuler(p);
  }
  paintOverlay(p);
}

void TimelineView::paintRows(QPainter& p) const {
  const int top = scrollY_, bottom = scrollY_ + height() - kRulerHeight;
  int first = profiler::rowAt(rows_, top);
  if (first < 0) first = 0;
  for (std::size_t r = static_cast<std::size_t>(first); r < rows_.size(); ++r) {
    const profiler::TimelineRow& row = rows_[r];
    if (row.y >= bottom) break;
    const int y = row.y - scrollY_ + kRulerHeight;
    if (row.kind == profiler::TimelineRow::Kind::RankHeader) {
      p.fillRect(QRect(0, y, width(), row.height), QColor(0xe4, 0xe7, 0xeb));
    } else if (row.kind == profiler::TimelineRow::Kind::Level) {
      paintLevelRow(p, row, y);
    } else {
      paintCounterRow(p, row, y);
    }
  }
  if (selection_) {
    const double x0 = kLabelWidth + axis_.x(selection_->fromNs);
    const double x1 = kLabelWidth + axis_.x(selection_->toNs);
    fillTall(
        p,
        QRect(static_cast<int>(x0), kRulerHeight, std::max(1, static_cast<int>(x1 - x0)), height()),
        QColor(0x40, 0x80, 0xff, 40));
  }
}

void TimelineView::paintLevelRow(QPainter& p, const profiler::TimelineRow& row, int y) const {
  const profiler::Lane& lane = index_->lanes()[row.lane];
  const int w = timeAreaWidth();
  std::vector<profiler::DrawItem> items;
  if (row.depth < lane.levels.size()) {
    const auto& level = lane.levels[row.depth];
    profiler::buildLevelDrawList(level, lane.blocks[row.depth], axis_, w, items);
    if (row.depth == 0) paintBubbles(p, row, y, items);
    // A row holds few distinct names: colours are worked out once per name and frame, not once
    // per item (HSV conversions dominated the row). Labels go on once the fills are done.
    std::unordered_map<std::uint32_t, SpanStyle> styles;
    std::vector<std::pair<QRect, const profiler::DrawItem*>> labelled;
    {
      FillRun fills(p);
      for (const profiler::DrawItem& it : items) {
        const profiler::SpanRec& s = level[it.first];
        auto [at, added] = styles.try_emplace(s.nameCat);
        SpanStyle& style = at->second;
        if (added) style = spanStyle(*index_, s.nameCat);
        const QRect rect(kLabelWidth + it.x0, y + 1, it.x1 - it.x0, row.height - 2);
        fills.add(rect, !it.merged ? style.color : it.count > 1 ? style.block : style.lone);
        if (it.x1 - it.x0 >= 24) labelled.emplace_back(rect, &it);
      }
    }
    p.setPen(Qt::white);
    for (const auto& [rect, it] : labelled) {
      const QRect text = rect.adjusted(2, 0, -2, 0);
      if (it->merged) {
        labels_.draw(p, text, QString::number(it->count));
        continue;
      }
      const QString& name = styles[level[it->first].nameCat].name;
      // A name with length variants (U+009C) always goes through Qt's elision.
      const bool whole = !name.contains(QChar(0x9c)) && labels_.width(p, name) <= text.width();
      labels_.draw(p, text, name, whole ? -1 : text.width());
    }
    if (selected_.valid() && selected_.lane == row.lane && selected_.depth == row.depth) {
      const profiler::SpanRec& s = index_->span(selected_);
      const double x0 = std::max(-1.0, axis_.x(s.startNs));
      const double x1 = std::min(w + 1.0, std::max(axis_.x(s.endNs), x0 + 1));
      p.setPen(QPen(Qt::black, 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(QRectF(kLabelWidth + x0, y + 1, x1 - x0, row.height - 2));
    }
  }
  if (row.depth != 0 || lane.instants.empty()) return;
  items.clear();
  profiler::buildInstantDrawList(lane.instants, axis_, w, items);
  p.setPen(QColor(0x33, 0x33, 0x33));
  for (const profiler::DrawItem& it : items) {
    const int x = kLabelWidth + it.x0;
    p.drawLine(x, y, x, y + 5);
  }
}

// Idle time between pipeline instructions on a rank: the gap between two drawn instruction
// spans of one step, shaded over the row. Between steps is not a bubble: the run may have been
// paused there, or be loading data.
void TimelineView::paintBubbles(QPainter& p, const profiler::TimelineRow& row, int y,
                                const std::vector<profiler::DrawItem>& items) const {
  const auto& level = index_->lanes()[row.lane].levels[0];
  const std::vector<profiler::SpanDetail>& details = index_->details();
  for (std::size_t k = 1; k < items.size(); ++k) {
    const profiler::SpanRec& a = level[items[k - 1].first + items[k - 1].count - 1];
    const profiler::SpanRec& b = level[items[k].first];
    const bool instructions =
        static_cast<profiler::Category>(a.nameCat & 15) == profiler::Category::Instruction &&
        static_cast<profiler::Category>(b.nameCat & 15) == profiler::Category::Instruction;
    const std::int32_t step = details[a.detail].step;
    if (!instructions || step < 0 || details[b.detail].step != step ||
        items[k].x0 - items[k - 1].x1 < 2)
      continue;
    p.fillRect(QRect(kLabelWidth + items[k - 1].x1, y, items[k].x0 - items[k - 1].x1, row.height),
               QColor(0xff, 0x40, 0x40, 60));
  }
}

void TimelineView::paintCounterRow(QPainter& p, const profiler::TimelineRow& row, int y) const {
  const profiler::CounterTrack& track = index_->counters()[row.counter];
  std::vector<profiler::CounterSample> samples;
  const int w = timeAreaWidth();
  profiler::sampleCounter(track.points, axis_, w, samples);
  auto yOf = [&](std::int64_t v) {
    return y + row.height - 2 -
           (row.height - 4) * profiler::counterHeight(v, track.minValue, track.maxValue);
  };
  // Opaque bars per sample: a filled path's spans would go to Qt's thread pool (fillTall).
  const QColor c = trackColor(*index_, row.counter);
  const QColor fill = QColor(c.red(), c.green(), c.blue()).lighter(115);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const int x0 = kLabelWidth + samples[i].x;
    // The last value holds to the end of the trace (bytes still live when recording stopped
    // are live), not only to the track's last point, and never past the trace.
    const int x1 =
        i + 1 < samples.size()
            ? kLabelWidth + samples[i + 1].x
            : kLabelWidth + static_cast<int>(std::clamp(
                                axis_.x(std::max(index_->endNs(), track.points.back().timeNs)) + 1,
                                0.0, 1.0 * w));
    const int top = static_cast<int>(yOf(samples[i].value));
    p.fillRect(QRect(x0, top, std::max(1, x1 - x0), y + row.height - 2 - top), fill);
  }
  p.setPen(c.darker(140));
  p.drawLine(kLabelWidth, y + row.height - 1, width(), y + row.height - 1);
  // The scale: the row's top is the track's largest value (its floor is 0).
  const QString top =
      QString::fromStdString(profiler::formatCounterValue(track.category, track.maxValue));
  p.setPen(QColor(0x55, 0x55, 0x55));
  p.drawText(QRect(kLabelWidth + 4, y, w - 8, row.height), Qt::AlignTop | Qt::AlignRight, top);
}

// Flows sorted by where they start (flows are only appended, so the order is rebuilt only
// when their count changes) and the longest one: a frame looks at the flows that can touch it.
void TimelineView::sortFlows() const {
  const auto& flows = index_->flows();
  if (flowOrder_.size() == flows.size()) return;
  flowOrder_.resize(flows.size());
  std::iota(flowOrder_.begin(), flowOrder_.end(), 0u);
  auto from = [&](std::uint32_t f) {
    return std::min(index_->span(flows[f].from).endNs, index_->span(flows[f].to).startNs);
  };
  std::sort(flowOrder_.begin(), flowOrder_.end(),
            [&](std::uint32_t a, std::uint32_t b) { return from(a) < from(b); });
  longestFlowNs_ = 0;
  for (const profiler::Flow& f : flows) {
    const std::int64_t a = index_->span(f.from).endNs, b = index_->span(f.to).startNs;
    longestFlowNs_ = std::max(longestFlowNs_, std::max(a, b) - std::min(a, b));
  }
}

void TimelineView::paintFlows(QPainter& p) const {
  sortFlows();
  const std::int64_t t0 = axis_.startNs, t1 = axis_.endNs(timeAreaWidth());
  // Past this many arrows they hide the spans: then only the selected span's flows show.
  constexpr std::size_t kMaxArrows = 256;
  std::vector<QLineF> lines;
  auto line = [&](const profiler::Flow& f) {
    const int ya = rowY(f.from), yb = rowY(f.to);
    if (ya < 0 || yb < 0) return false;
    lines.emplace_back(kLabelWidth + axis_.x(index_->span(f.from).endNs), ya + 9,
                       kLabelWidth + axis_.x(index_->span(f.to).startNs), yb + 9);
    return true;
  };
  const auto& flows = index_->flows();
  auto it = std::lower_bound(flowOrder_.begin(), flowOrder_.end(), t0 - longestFlowNs_,
                             [&](std::uint32_t f, std::int64_t t) {
                               return std::min(index_->span(flows[f].from).endNs,
                                               index_->span(flows[f].to).startNs) < t;
                             });
  for (; it != flowOrder_.end() && lines.size() <= kMaxArrows; ++it) {
    const profiler::Flow& f = flows[*it];
    const std::int64_t a = index_->span(f.from).endNs, b = index_->span(f.to).startNs;
    if (std::min(a, b) > t1) break;
    if (std::max(a, b) >= t0) line(f);
  }
  if (lines.size() > kMaxArrows) {
    lines.clear();
    if (selected_.valid()) {
      for (const profiler::Flow& f : flows) {
        if (f.from == selected_ || f.to == selected_) line(f);
      }
    }
  }
  // Aliased one-pixel lines: antialiased ones are filled as spans on Qt's thread pool (fillTall).
  p.setPen(QPen(QColor(0x30, 0x30, 0x30), 0));
  for (const QLineF& l : lines) {
    p.drawLine(l);
    const QLineF head = QLineF(l.p2(), l.p1());
    QLineF side1 = head, side2 = head;
    side1.setLength(6);
    side2.setLength(6);
    side1.setAngle(head.angle() + 25);
    side2.setAngle(head.angle() - 25);
    p.drawLine(side1);
    p.drawLine(side2);
  }
}

void TimelineView::paintRuler(QPainter& p) const {
  p.fillRect(QRect(0, 0, width(), kRulerHeight), QColor(0xee, 0xef, 0xf1));
  p.setPen(QColor(0x44, 0x44, 0x44));
  const int w = timeAreaWidth();
  // A bookmark's name takes the place of the tick labels it would cover.
  const std::vector<QRect> flags = bookmarkLabels(p.fontMetrics());
  for (const profiler::Tick& t : profiler::rulerTicks(axis_, index_->beginNs(), w, 90)) {
    const int x = kLabelWidth + static_cast<int>(t.x);
    p.drawLine(x, kRulerHeight - 8, x, kRulerHeight);
    const QString label = QString::fromStdString(t.label);
    const QRect text(x + 3, 0, p.fontMetrics().horizontalAdvance(label), 14);
    if (std::none_of(flags.begin(), flags.end(),
                     [&](const QRect& f) { return f.intersects(text); }))
      p.drawText(x + 3, 12, label);
  }
  // Every search hit marked: one mark per column that holds any.
  p.setPen(QColor(0xff, 0x8c, 0x00));
  auto it =
      std::lower_bound(hits_.begin(), hits_.end(), axis_.startNs,
                       [](const profiler::SearchHit& h, std::int64_t t) { return h.startNs < t; });
  while (it != hits_.end() && axis_.column(it->startNs) < w) {
    const std::int64_t c = axis_.column(it->startNs);
    p.drawLine(kLabelWidth + static_cast<int>(c), kRulerHeight - 7,
               kLabelWidth + static_cast<int>(c), kRulerHeight - 1);
    it = std::upper_bound(it, hits_.end(), c, [&](std::int64_t col, const profiler::SearchHit& h) {
      return col < axis_.column(h.startNs);
    });
  }
  p.setPen(QColor(0xaa, 0xaa, 0xaa));
  p.drawLine(0, kRulerHeight - 1, width(), kRulerHeight - 1);
  paintBookmarkFlags(p);
  // The label column covers a flag's name that runs left of the time area.
  p.fillRect(QRect(0, 0, kLabelWidth, kRulerHeight - 1), QColor(0xee, 0xef, 0xf1));
  p.setPen(QColor(0x22, 0x22, 0x22));
  p.drawText(
      QRect(4, 0, kLabelWidth - 8, kRulerHeight), Qt::AlignVCenter,
      QString::fromStdString(profiler::formatDuration(saturatingFromDouble(axis_.nsPerPx * w))));
}

namespace {

const QColor kBookmarkColor(0x8e, 0x44, 0xad);
constexpr int kBookmarkNameWidth = 140;  // pixels of a flag's name before it is elided

// The bookmarks in view, [first, last): their columns lie in the time area.
std::pair<std::size_t, std::size_t> visibleBookmarks(const profiler::BookmarkList& list,
                                                     const profiler::TimeAxis& axis, int w) {
  const auto& all = list.all();
  std::size_t first = 0;
  while (first < all.size() && axis.column(all[first].ns) < 0) ++first;
  std::size_t last = first;
  while (last < all.size() && axis.column(all[last].ns) < w) ++last;
  return {first, last};
}

}  // namespace

void TimelineView::paintBookmarkLines(QPainter& p) const {
  const auto [first, last] = visibleBookmarks(bookmarks_, axis_, timeAreaWidth());
  p.setPen(QPen(kBookmarkColor, 1, Qt::DashLine));
  for (std::size_t i = first; i < last; ++i) {
    const int x = kLabelWidth + static_cast<int>(axis_.column(bookmarks_.all()[i].ns));
    p.drawLine(x, kRulerHeight, x, height());
  }
}

// A flag per bookmark on the ruler: a triangle at its time and its name beside it, over the
// tick labels (a later flag's name covers an earlier one's).
// The name boxes of the bookmarks in view, in time order: beside each flag, elided to
// kBookmarkNameWidth.
std::vector<QRect> TimelineView::bookmarkLabels(const QFontMetrics& metrics) const {
  const auto [first, last] = visibleBookmarks(bookmarks_, axis_, timeAreaWidth());
  std::vector<QRect> out;
  for (std::size_t i = first; i < last; ++i) {
    const profiler::Bookmark& b = bookmarks_.all()[i];
    const int x = kLabelWidth + static_cast<int>(axis_.column(b.ns));
    const QString name =
        metrics.elidedText(QString::fromStdString(b.name), Qt::ElideRight, kBookmarkNameWidth);
    out.emplace_back(x + 7, 1, metrics.horizontalAdvance(name) + 6, 15);
  }
  return out;
}

void TimelineView::paintBookmarkFlags(QPainter& p) const {
  const auto [first, last] = visibleBookmarks(bookmarks_, axis_, timeAreaWidth());
  const QFontMetrics metrics = p.fontMetrics();
  const std::vector<QRect> labels = bookmarkLabels(metrics);
  for (std::size_t i = first; i < last; ++i) {
    const profiler::Bookmark& b = bookmarks_.all()[i];
    const int x = kLabelWidth + static_cast<int>(axis_.column(b.ns));
    const QString name =
        metrics.elidedText(QString::fromStdString(b.name), Qt::ElideRight, kBookmarkNameWidth);
    const QRect& label = labels[i - first];
    p.fillRect(label, QColor(0xf4, 0xec, 0xf7));
    p.setPen(kBookmarkColor);
    p.drawText(label.adjusted(3, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft, name);
    p.setBrush(kBookmarkColor);
    p.setPen(Qt::NoPen);
    const QPoint flag[3] = {QPoint(x, 1), QPoint(x + 7, 5), QPoint(x, 9)};
    p.drawPolygon(flag, 3);
    p.setPen(kBookmarkColor);
    p.drawLine(x, 1, x, kRulerHeight - 1);
  }
  p.setBrush(Qt::NoBrush);
}

QString TimelineView::bookmarkTooltip(QPoint pos) const {
  if (pos.x() < kLabelWidth || index_->eventCount() == 0) return {};
  const auto [first, last] = visibleBookmarks(bookmarks_, axis_, timeAreaWidth());
  // The flag nearest the pointer within its triangle's width.
  std::optional<std::size_t> best;
  int bestDistance = 8;
  for (std::size_t i = first; i < last; ++i) {
    const int x = kLabelWidth + static_cast<int>(axis_.column(bookmarks_.all()[i].ns));
    if (std::abs(pos.x() - x) <= bestDistance) {
      bestDistance = std::abs(pos.x() - x);
      best = i;
    }
  }
  if (!best) return {};
  const profiler::Bookmark& b = bookmarks_.all()[*best];
  return QStringLiteral("%1\nat %2 (bookmark %3 of %4)")
      .arg(QString::fromStdString(b.name),
           QString::fromStdString(profiler::formatDuration(saturatingSub(b.ns, index_->beginNs()))))
      .arg(*best + 1)
      .arg(bookmarks_.size());
}

void TimelineView::paintLabels(QPainter& p) const {
  fillTall(p, QRect(0, kRulerHeight, kLabelWidth, height()), QColor(0xf2, 0xf3, 0xf5));
  p.setPen(QColor(0x22, 0x22, 0x22));
  for (const profiler::TimelineRow& row : rows_) {
    const int y = row.y - scrollY_ + kRulerHeight;
    if (y + row.height < kRulerHeight) continue;
    if (y > height()) break;
    QString text;
    if (row.kind == profiler::TimelineRow::Kind::RankHeader) {
      const auto named = index_->rankNames().find(row.rank);
      const QString name = named != index_->rankNames().end()
                               ? QString::fromStdString(named->second)
                               : QStringLiteral("rank %1").arg(row.rank);
      const bool folded = layoutOptions_.collapsed.count(row.rank) > 0;
      text = QString(folded ? QStringLiteral("▸ ") : QStringLiteral("▾ ")) + name;
      // A predicted rank's stage is its measured rank's, named just above it; the label has no
      // room for both.
      if (row.stage >= 0 && !profiler::isPredictedRank(row.rank)) {
        text += QStringLiteral("  (stage %1)").arg(row.stage);
      }
    } else if (row.kind == profiler::TimelineRow::Kind::Level && row.depth == 0) {
      text = QStringLiteral("   ") + QString::fromStdString(index_->lanes()[row.lane].name);
    } else if (row.kind == profiler::TimelineRow::Kind::Counter) {
      const profiler::CounterTrack& c = index_->counters()[row.counter];
      text = QStringLiteral("   ") + QString::fromStdString(index_->name(c.name));
    }
    if (!text.isEmpty())
      labels_.draw(p, QRect(4, y, kLabelWidth - 8, row.height), text, kLabelWidth - 8);
  }
  p.setPen(QColor(0xc8, 0xc8, 0xc8));
  p.drawLine(kLabelWidth - 1, kRulerHeight, kLabelWidth - 1, height());
}

void TimelineView::paintOverlay(QPainter& p) const {
  if (drag_ == Drag::Box && dragMoved_) {
    p.setPen(QPen(QColor(0x20, 0x60, 0xe0), 1, Qt::DashLine));
    p.setBrush(QColor(0x40, 0x80, 0xff, 30));
    p.drawRect(QRect(dragStart_, dragLast_).normalized());
  }
  QString text = message_;
  if (showHelp_) {
    text = QStringLiteral(
        "Wheel: zoom at the cursor    Drag: pan    Shift+drag: select a box\n"
        "W / S: zoom in / out    A / D: pan left / right\n"
        "Double-click: zoom to the span    F: fit the selection    Home: fit all\n"
        "[ / ]: follow the selected span's flow back / forward\n"
        "B: bookmark the time under the cursor    , / .: previous / next bookmark\n"
        "Shift+wheel: scroll the rows    Click a rank header: fold it\n"
        "?: this list    Esc: close it");
  }
  if (text.isEmpty()) return;
  const QRect box = p.fontMetrics()
                        .boundingRect(QRect(0, 0, width() - 40, height()), Qt::TextWordWrap, text)
                        .adjusted(-14, -10, 14, 10);
  const QRect at(QPoint((width() - box.width()) / 2, (height() - box.height()) / 2), box.size());
  p.setPen(QColor(0x80, 0x80, 0x80));
  p.setBrush(QColor(255, 255, 240, 235));
  p.drawRoundedRect(at, 6, 6);
  p.setPen(Qt::black);
  p.drawText(at.adjusted(14, 10, -14, -10), Qt::TextWordWrap, text);
}

}  // namespace parascope::ui
