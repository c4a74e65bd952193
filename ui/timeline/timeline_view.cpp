// TimelineView: state, hit testing and interaction. Painting is in timeline_paint.cpp.
#include "ui/timeline/timeline_view.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "core/common/error.h"
#include "core/plan/memory_estimate.h"
#include "profiler/timeline/timeline_prediction.h"

namespace parascope::ui {

TimelineView::TimelineView(QWidget* parent)
    : QWidget(parent), index_(std::make_shared<profiler::TimelineIndex>()) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setMinimumSize(400, 200);
  axisWidth_ = timeAreaWidth();
}

TimelineView::~TimelineView() = default;

void TimelineView::setIndex(std::shared_ptr<profiler::TimelineIndex> index) {
  index_ = std::move(index);
  liveStopped_ = false;
  flowOrder_.clear();
  sortFlows();  // once here, not in the first frame
  hits_.clear();
  selection_.reset();
  selected_ = {};
  bookmarks_ = {};
  scrollY_ = 0;
  followLive_ = true;
  relayout();
  fitAll();
  emit indexReplaced();
}

void TimelineView::setBookmarks(profiler::BookmarkList bookmarks) {
  bookmarks_ = std::move(bookmarks);
  update();
}

std::size_t TimelineView::addBookmark(std::int64_t ns, const std::string& name) {
  const std::size_t i = bookmarks_.add(ns, name);
  update();
  emit bookmarksChanged();
  return i;
}

void TimelineView::renameBookmark(std::size_t i, const std::string& name) {
  bookmarks_.rename(i, name);
  update();
  emit bookmarksChanged();
}

void TimelineView::removeBookmark(std::size_t i) {
  bookmarks_.remove(i);
  update();
  emit bookmarksChanged();
}

void TimelineView::showBookmark(std::size_t i) {
  const double half = axis_.nsPerPx * timeAreaWidth() / 2;
  axis_.startNs = saturatingSub(bookmarks_.all().at(i).ns, profiler::clampedTime(half));
  userMoved();
}

bool TimelineView::nextBookmark(int direction) {
  // Past the centre by half a pixel: the bookmark just centred (to the nanosecond it rounds to)
  // is not the next one.
  const std::int64_t centre = axis_.time(timeAreaWidth() / 2.0);
  const std::int64_t half = std::max<std::int64_t>(1, profiler::clampedTime(axis_.nsPerPx / 2));
  const auto i = bookmarks_.next(
      direction > 0 ? saturatingAdd(centre, half) : saturatingSub(centre, half), direction);
  if (!i) return false;
  showBookmark(*i);
  return true;
}

void TimelineView::appendEvents(const std::vector<profiler::Event>& events) {
  if (events.empty() || liveStopped_) return;
  const bool first = index_->eventCount() == 0;
  try {
    index_->append(events.data(), events.size());
    if (layoutShape() != shape_) relayout();
  } catch (const std::bad_alloc&) {
    // An exception leaving a slot aborts the application. The index goes first: what it held
    // is the memory the message and the empty index need.
    const std::size_t held = index_->eventCount();
    index_.reset();
    setIndex(std::make_shared<profiler::TimelineIndex>());
    liveStopped_ = true;
    setMessage(tr("The live timeline stopped: out of memory while indexing the run's events "
                  "(%1 held); the run goes on, and its trace file is written when it ends")
                   .arg(held));
    return;
  }
  if (first) {
    fitAll();
  } else if (followLive_) {
    axis_.startNs =
        saturatingSub(index_->endNs(), profiler::clampedTime(axis_.nsPerPx * timeAreaWidth()));
  }
  update();
}

std::size_t TimelineView::layoutShape() const {
  std::size_t n = index_->lanes().size() + index_->counters().size() * 1000003;
  for (const profiler::Lane& l : index_->lanes()) n += l.levels.size() * 7919;
  return n;
}

void TimelineView::setMessage(const QString& message) {
  message_ = message;
  update();
}

void TimelineView::setAxis(const profiler::TimeAxis& axis) {
  axis_ = axis;
  update();
}

void TimelineView::fitAll() {
  if (index_->eventCount() == 0) return;
  axis_.fit(index_->beginNs(), index_->endNs(), timeAreaWidth());
  followLive_ = true;
  update();
}

void TimelineView::fitRange(std::int64_t fromNs, std::int64_t toNs) {
  // A little margin so the fitted range's edges stay visible.
  const std::int64_t pad = std::max<std::int64_t>(saturatingSub(toNs, fromNs) / 20, 1);
  axis_.fit(saturatingSub(fromNs, pad), saturatingAdd(toNs, pad), timeAreaWidth());
  update();
}

void TimelineView::setRankCollapsed(std::int32_t rank, bool collapsed) {
  if (collapsed)
    layoutOptions_.collapsed.insert(rank);
  else
    layoutOptions_.collapsed.erase(rank);
  relayout();
}

void TimelineView::setOrderByStage(bool byStage) {
  layoutOptions_.byStage = byStage;
  relayout();
}

void TimelineView::relayout() {
  rows_ = profiler::layoutRows(*index_, layoutOptions_);
  shape_ = layoutShape();
  laneFirstRow_.assign(index_->lanes().size(), -1);
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    if (rows_[r].kind == profiler::TimelineRow::Kind::Level && rows_[r].depth == 0) {
      laneFirstRow_[rows_[r].lane] = static_cast<int>(r);
    }
  }
  const int content = rows_.empty() ? 0 : rows_.back().y + rows_.back().height;
  scrollY_ = std::clamp(scrollY_, 0, std::max(0, content - (height() - kRulerHeight)));
  update();
}

int TimelineView::rowY(profiler::SpanRef ref) const {
  if (!ref.valid() || ref.lane >= laneFirstRow_.size() || laneFirstRow_[ref.lane] < 0) return -1;
  const profiler::TimelineRow& row =
      rows_[static_cast<std::size_t>(laneFirstRow_[ref.lane]) + ref.depth];
  return row.y - scrollY_ + kRulerHeight;
}

std::size_t TimelineView::setSearch(const QString& pattern, bool regex) {
  hits_ = profiler::searchSpans(*index_, pattern.toStdString(), regex);
  currentHit_ = 0;
  if (!hits_.empty()) nextHit(0);
  update();
  return hits_.size();
}

// direction 0: the first hit at or after the view's start; +1 / -1: the next / previous hit.
void TimelineView::nextHit(int direction) {
  if (hits_.empty()) return;
  if (direction == 0) {
    auto it = std::lower_bound(
        hits_.begin(), hits_.end(), axis_.startNs,
        [](const profiler::SearchHit& h, std::int64_t t) { return h.startNs < t; });
    currentHit_ = it == hits_.end() ? 0 : static_cast<std::size_t>(it - hits_.begin());
  } else {
    currentHit_ =
        (currentHit_ + hits_.size() + static_cast<std::size_t>(direction + 2) - 2) % hits_.size();
  }
  selectSpan(hits_[currentHit_].ref);
  const profiler::SpanRec& s = index_->span(selected_);
  if (direction != 0 || axis_.x(s.startNs) > timeAreaWidth()) {
    const std::int64_t half = profiler::clampedTime(axis_.nsPerPx * timeAreaWidth() / 2);
    axis_.startNs = saturatingSub(s.startNs, half);
    followLive_ = false;
  }
  // The hit may be on a rank scrolled out of sight: its row comes into view.
  const int y = rowY(selected_);
  if (y >= 0 && (y < kRulerHeight || y > height() - 20))
    scrollY_ = std::max(0, scrollY_ + y - height() / 2);
  update();
}

void TimelineView::selectSpan(profiler::SpanRef ref) {
  selected_ = ref;
  emit spanSelected();
  update();
}

// The row under a widget position in the time area, and the position's x in it.
const profiler::TimelineRow* TimelineView::rowUnder(QPoint pos, int& x) const {
  x = pos.x() - kLabelWidth;
  const int r = profiler::rowAt(rows_, pos.y() - kRulerHeight + scrollY_);
  if (x < 0 || pos.y() < kRulerHeight || r < 0) return nullptr;
  return &rows_[static_cast<std::size_t>(r)];
}

TimelineView::Hit TimelineView::hitTest(QPoint pos) const {
  int x = 0;
  const profiler::TimelineRow* under = rowUnder(pos, x);
  if (under == nullptr || under->kind != profiler::TimelineRow::Kind::Level) return {};
  const profiler::TimelineRow& row = *under;
  const profiler::Lane& lane = index_->lanes()[row.lane];
  if (row.depth >= lane.levels.size()) return {};
  std::vector<profiler::DrawItem> items;
  profiler::buildLevelDrawList(lane.levels[row.depth], lane.blocks[row.depth], axis_,
                               timeAreaWidth(), items);
  auto it = std::upper_bound(items.begin(), items.end(), x,
                             [](int v, const profiler::DrawItem& d) { return v < d.x0; });
  if (it == items.begin() || x >= std::prev(it)->x1) return {};
  --it;
  return {profiler::SpanRef{row.lane, row.depth, it->first}, it->count};
}

// A counter row: its value at the time under the pointer, and its largest.
QString TimelineView::counterTooltip(QPoint pos) const {
  int x = 0;
  const profiler::TimelineRow* row = rowUnder(pos, x);
  if (row == nullptr || row->kind != profiler::TimelineRow::Kind::Counter) return {};
  const profiler::CounterTrack& track = index_->counters()[row->counter];
  const std::int64_t t = axis_.time(x);
  const std::optional<std::int64_t> value =
      t <= std::max(index_->endNs(), track.points.back().timeNs) ? counterValueAt(track.points, t)
                                                                 : std::nullopt;
  if (!value) return {};
  return QStringLiteral("%1 %2\nrank %3, at %4\nlargest %5")
      .arg(QString::fromStdString(index_->name(track.name)),
           QString::fromStdString(profiler::formatCounterValue(track.category, *value)))
      .arg(track.rank)
      .arg(QString::fromStdString(profiler::formatDuration(t - index_->beginNs())),
           QString::fromStdString(profiler::formatCounterValue(track.category, track.maxValue)));
}

QString TimelineView::selectedDetails() const {
  if (!selected_.valid()) return {};
  auto brief = [this](profiler::SpanRef ref) {
    const profiler::Event e = index_->event(ref);
    return QStringLiteral("%1 (%2, rank %3, %4)")
        .arg(QString::fromUtf8(e.name),
             QString::fromStdString(profiler::formatDuration(e.durationNs())))
        .arg(e.rank)
        .arg(QString::fromStdString(index_->lanes()[ref.lane].name));
  };
  QString text = spanDescription(selected_);
  // Each level above holds, sorted by start and without overlaps, the span enclosing this one
  // if any: the last one starting at or before it.
  const profiler::Lane& lane = index_->lanes()[selected_.lane];
  const profiler::SpanRec& s = index_->span(selected_);
  QStringList parents;
  for (std::uint32_t d = selected_.depth; d-- > 0;) {
    const std::vector<profiler::SpanRec>& level = lane.levels[d];
    auto it =
        std::upper_bound(level.begin(), level.end(), s.startNs,
                         [](std::int64_t t, const profiler::SpanRec& r) { return t < r.startNs; });
    if (it == level.begin()) break;
    --it;
    if (it->endNs < s.endNs) break;
    parents << brief(
        profiler::SpanRef{selected_.lane, d, static_cast<std::uint32_t>(it - level.begin())});
  }
  if (!parents.isEmpty())
    text += QStringLiteral("\n\nin: ") + parents.join(QStringLiteral("\nin: "));
  QStringList flows;
  for (const profiler::Flow& f : index_->flows()) {
    if (f.from == selected_) flows << QStringLiteral("flow to ") + brief(f.to);
    if (f.to == selected_) flows << QStringLiteral("flow from ") + brief(f.from);
  }
  if (!flows.isEmpty()) text += QStringLiteral("\n\n") + flows.join(QStringLiteral("\n"));
  return text;
}

namespace {

// One "key: value" line per member of an imported event's args (strings without their quotes),
// in the order the file wrote them; with a limit, the lines past it are counted, and each line
// is cut at 160 characters.
QString argLines(std::string_view members, int limit) {
  if (members.empty()) return {};
  const auto args = nlohmann::ordered_json::parse("{" + std::string(members) + "}", nullptr, false);
  if (args.is_discarded()) return QStringLiteral("\n") + QString::fromUtf8(members);
  QStringList lines;
  for (const auto& item : args.items()) {
    if (limit >= 0 && lines.size() == limit) {
      lines << QStringLiteral("… %1 more args (click the span to see all)")
                   .arg(static_cast<qsizetype>(args.size()) - limit);
      break;
    }
    const nlohmann::ordered_json& v = item.value();
    QString line = QString::fromStdString(item.key() + ": " +
                                          (v.is_string() ? v.get<std::string>() : v.dump()));
    if (limit >= 0 && line.size() > 160) line = line.left(159) + QChar(0x2026);
    lines << line;
  }
  return QStringLiteral("\n") + lines.join(QLatin1Char('\n'));
}

}  // namespace

QString TimelineView::spanDescription(profiler::SpanRef ref, int maxArgs) const {
  const profiler::Event e = index_->event(ref);
  QString s = QStringLiteral("%1\n%2 (%3)")
                  .arg(QString::fromUtf8(e.name),
                       QString::fromStdString(profiler::formatDuration(e.durationNs())),
                       QString::fromUtf8(parascope::trace::categoryName(e.category).data()));
  s += QStringLiteral("\nrank %1, %2")
           .arg(e.rank)
           .arg(QString::fromStdString(index_->lanes()[ref.lane].name));
  if (e.bytes) {
    s += QStringLiteral("\nbytes %1 (%2)")
             .arg(e.bytes)
             .arg(QString::fromStdString(formatBytes(static_cast<double>(e.bytes))));
  }
  if (e.bytes && e.category == profiler::Category::Communication && e.durationNs() > 0) {
    // For collectives the bytes are the ring's, so this is nccl-tests' bus bandwidth: in GiB/s
    // as every size here is binary, and in nccl-tests' own GB/s (bytes per ns) to compare.
    const double gbps = static_cast<double>(e.bytes) / static_cast<double>(e.durationNs());
    s += QStringLiteral("\nbus bandwidth %1 GiB/s (%2 GB/s)")
             .arg(gbps * 1e9 / (1 << 30), 0, 'f', 2)
             .arg(gbps, 0, 'f', 2);
  }
  if (e.peer >= 0) {
    s += (e.flags & parascope::trace::flag::kReceive) ? QStringLiteral("\nfrom rank %1")
                                                      : QStringLiteral("\nto rank %1");
    s = s.arg(e.peer);
  }
  if (e.group >= 0) s += QStringLiteral("\ngroup %1").arg(e.group);
  if (e.step >= 0) s += QStringLiteral("\nstep %1").arg(e.step);
  if (e.stage >= 0) s += QStringLiteral("\nstage %1").arg(e.stage);
  if (e.microBatch >= 0) s += QStringLiteral("\nmicro-batch %1").arg(e.microBatch);
  if (e.instruction >= 0) s += QStringLiteral("\ninstruction %1").arg(e.instruction);
  if (e.correlation) s += QStringLiteral("\ncorrelation %1").arg(e.correlation);
  s += argLines(index_->argsText(ref), maxArgs);
  return s;
}

QString TimelineView::tooltipText(QPoint pos) const {
  if (pos.y() < kRulerHeight) return bookmarkTooltip(pos);
  if (const QString counter = counterTooltip(pos); !counter.isEmpty()) return counter;
  const Hit h = hitTest(pos);
  if (!h.ref.valid()) return {};
  QString s = spanDescription(h.ref, 12);
  if (h.count > 1) return QStringLiteral("%1 spans merged; the first:\n").arg(h.count) + s;
  // With a prediction beside the run: the same instruction on the other side, and how far the
  // prediction is from the measurement.
  const profiler::SpanRef other = profiler::counterpartSpan(*index_, h.ref);
  if (!other.valid()) return s;
  const bool predicted = profiler::isPredictedRank(index_->lanes()[h.ref.lane].rank);
  const std::int64_t thisNs = index_->span(h.ref).endNs - index_->span(h.ref).startNs;
  const std::int64_t otherNs = index_->span(other).endNs - index_->span(other).startNs;
  const std::int64_t measuredNs = predicted ? otherNs : thisNs;
  const std::int64_t predictedNs = predicted ? thisNs : otherNs;
  s += predicted ? QStringLiteral("\nmeasured %1") : QStringLiteral("\npredicted %1");
  s = s.arg(QString::fromStdString(profiler::formatDuration(otherNs)));
  if (measuredNs > 0) {
    const double error = static_cast<double>(predictedNs - measuredNs) / measuredNs;
    s += QStringLiteral("\nprediction error %1%2%")
             .arg(error >= 0 ? QStringLiteral("+") : QString())
             .arg(100 * error, 0, 'f', 1);
  }
  return s;
}

bool TimelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    const auto* help = static_cast<QHelpEvent*>(e);
    const QString text = tooltipText(help->pos());
    if (text.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return QWidget::event(e);
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  render(p);
}

// The visible time range stays the same when the view changes width.
void TimelineView::resizeEvent(QResizeEvent*) {
  axis_.nsPerPx *= static_cast<double>(axisWidth_) / timeAreaWidth();
  axisWidth_ = timeAreaWidth();
  relayout();
}

void TimelineView::userMoved() {
  followLive_ = false;
  keepTraceInView();
  update();
}

// Panning and zooming keep the trace in view: the window reaches at most a twentieth of its
// width past either end of the trace (the margin F leaves around what it fits), and a window
// wider than the trace shows all of it. Compared in double, changed only when out of bounds:
// a trace's times may be since the epoch, beyond double's exact integers.
void TimelineView::keepTraceInView() {
  if (index_->eventCount() == 0) return;
  const double view = axis_.nsPerPx * timeAreaWidth();
  const double margin = view / 20;
  double lo = static_cast<double>(index_->beginNs()) - margin;
  double hi = static_cast<double>(index_->endNs()) + margin - view;
  if (lo > hi) std::swap(lo, hi);
  const auto start = static_cast<double>(axis_.startNs);
  if (start < lo) axis_.startNs = saturatingFromDouble(lo);
  if (start > hi) axis_.startNs = saturatingFromDouble(hi);
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (e->modifiers() & Qt::ShiftModifier) {
    const int content = rows_.empty() ? 0 : rows_.back().y + rows_.back().height;
    scrollY_ = std::clamp(scrollY_ - static_cast<int>(steps * 60), 0,
                          std::max(0, content - (height() - kRulerHeight)));
    update();
    return;
  }
  axis_.zoomAt(e->position().x() - kLabelWidth, std::pow(0.8, steps));
  userMoved();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  drag_ = (e->modifiers() & Qt::ShiftModifier) ? Drag::Box : Drag::Pan;
  dragStart_ = dragLast_ = e->position().toPoint();
  dragMoved_ = false;
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  cursorX_ = pos.x();
  if (drag_ == Drag::None) return;
  dragMoved_ = dragMoved_ || (pos - dragStart_).manhattanLength() > 3;
  if (drag_ == Drag::Pan && dragMoved_) {
    axis_.startNs = axis_.time(dragLast_.x() - pos.x());
    const int content = rows_.empty() ? 0 : rows_.back().y + rows_.back().height;
    scrollY_ = std::clamp(scrollY_ - (pos.y() - dragLast_.y()), 0,
                          std::max(0, content - (height() - kRulerHeight)));
    userMoved();
  }
  dragLast_ = pos;
  update();
}

void TimelineView::finishBox(QPoint end) {
  const QRect box = QRect(dragStart_, end).normalized();
  TimelineSelection sel;
  sel.fromNs = axis_.time(box.left() - kLabelWidth);
  sel.toNs = axis_.time(box.right() - kLabelWidth);
  for (const profiler::TimelineRow& row : rows_) {
    const int y = row.y - scrollY_ + kRulerHeight;
    if (row.kind != profiler::TimelineRow::Kind::Level || y + row.height <= box.top() ||
        y > box.bottom()) {
      continue;
    }
    if (sel.lanes.empty() || sel.lanes.back() != row.lane) sel.lanes.push_back(row.lane);
  }
  selection_ = sel;
  emit selectionChanged();
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  const Drag drag = drag_;
  drag_ = Drag::None;
  if (drag == Drag::Box && dragMoved_) {
    finishBox(pos);
  } else if (!dragMoved_) {
    const int r = profiler::rowAt(rows_, pos.y() - kRulerHeight + scrollY_);
    if (r >= 0 &&
        rows_[static_cast<std::size_t>(r)].kind == profiler::TimelineRow::Kind::RankHeader) {
      const std::int32_t rank = rows_[static_cast<std::size_t>(r)].rank;
      setRankCollapsed(rank, !layoutOptions_.collapsed.count(rank));
    } else {
      selectSpan(hitTest(pos).ref);
    }
  }
  update();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* e) {
  const Hit h = hitTest(e->position().toPoint());
  if (!h.ref.valid()) return;
  const auto& level = index_->lanes()[h.ref.lane].levels[h.ref.depth];
  fitRange(level[h.ref.index].startNs, level[h.ref.index + h.count - 1].endNs);
  selectSpan(h.ref);
  userMoved();
}

// `[` goes to the flow's source, `]` to its (first) target.
void TimelineView::followFlow(int direction) {
  if (!selected_.valid()) return;
  for (const profiler::Flow& f : index_->flows()) {
    const profiler::SpanRef peer = direction < 0
                                       ? (f.to == selected_ ? f.from : profiler::SpanRef{})
                                       : (f.from == selected_ ? f.to : profiler::SpanRef{});
    if (!peer.valid()) continue;
    selectSpan(peer);
    const profiler::SpanRec& s = index_->span(peer);
    axis_.startNs = saturatingSub(s.startNs + (s.endNs - s.startNs) / 2,
                                  profiler::clampedTime(axis_.nsPerPx * timeAreaWidth() / 2));
    const int y = rowY(peer);
    if (y < kRulerHeight || y > height() - 20) scrollY_ = std::max(0, scrollY_ + y - height() / 2);
    userMoved();
    return;
  }
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  const double w = timeAreaWidth();
  // A tenth of the view (below 2^62 ns however far out the view is zoomed).
  const auto step = static_cast<std::int64_t>(std::min(axis_.nsPerPx * w / 10, 4e18));
  switch (e->key()) {
    case Qt::Key_W: axis_.zoomAt(w / 2, 0.8); break;
    case Qt::Key_S: axis_.zoomAt(w / 2, 1.25); break;
    case Qt::Key_A: axis_.startNs = saturatingSub(axis_.startNs, step); break;
    case Qt::Key_D: axis_.startNs = saturatingAdd(axis_.startNs, step); break;
    case Qt::Key_Home: fitAll(); return;
    case Qt::Key_F:
      if (selection_) {
        fitRange(selection_->fromNs, selection_->toNs);
      } else if (selected_.valid()) {
        fitRange(index_->span(selected_).startNs, index_->span(selected_).endNs);
      }
      break;
    case Qt::Key_BracketLeft: followFlow(-1); return;
    case Qt::Key_BracketRight: followFlow(+1); return;
    case Qt::Key_B: {
      // At the pointer when it is over the time area, else at the view's centre.
      const bool over = cursorX_ && *cursorX_ >= kLabelWidth && *cursorX_ < width();
      const double x = over ? *cursorX_ - kLabelWidth : w / 2;
      try {
        addBookmark(axis_.time(x));
      } catch (const UserError& error) {
        emit refused(QString::fromUtf8(error.what()));
      }
      return;
    }
    case Qt::Key_Comma: nextBookmark(-1); return;
    case Qt::Key_Period: nextBookmark(+1); return;
    case Qt::Key_Question: showHelp_ = !showHelp_; break;
    case Qt::Key_Escape: showHelp_ = false; break;
    default: QWidget::keyPressEvent(e); return;
  }
  userMoved();
}

}  // namespace parascope::ui
