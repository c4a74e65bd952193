// The timeline widget: rank groups of lanes over one aligned time axis, painted every frame
// from a draw list built for the visible rows (timeline_lod.h), so a frame costs pixels, not
// events. Fed a whole index (files) or live events (appendEvents). Interaction as in Perfetto
// and Tracy: wheel zooms at the cursor, drag pans, Shift+drag selects a box, W/A/S/D, F, Home,
// [ and ] follow flows, B bookmarks the time under the cursor, ? lists the shortcuts.
#pragma once

#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "profiler/timeline/timeline_bookmarks.h"
#include "profiler/timeline/timeline_index.h"
#include "profiler/timeline/timeline_layout.h"
#include "profiler/timeline/timeline_lod.h"
#include "profiler/timeline/timeline_search.h"
#include "ui/timeline/label_cache.h"

class QFontMetrics;
class QPainter;

namespace parascope::ui {

struct TimelineSelection {
  std::int64_t fromNs = 0, toNs = 0;
  std::vector<std::uint32_t> lanes;  // lanes with a row inside the box
};

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  ~TimelineView() override;

  void setIndex(std::shared_ptr<profiler::TimelineIndex> index);
  const profiler::TimelineIndex& index() const { return *index_; }
  // Live: appends without rebuilding; the view follows the newest time unless the user moved.
  // When memory runs out while indexing them, the view lets go of its index (a half-grown one
  // cannot be trusted), says why and takes no more live events until the next setIndex.
  void appendEvents(const std::vector<profiler::Event>& events);
  bool liveStopped() const { return liveStopped_; }
  // Whether the view still follows live events (the user has not zoomed, panned or selected).
  bool followsLive() const { return followLive_; }
  void setMessage(const QString& message);
  QString message() const { return message_; }

  const profiler::TimeAxis& axis() const { return axis_; }
  void setAxis(const profiler::TimeAxis& axis);
  void fitAll();
  void fitRange(std::int64_t fromNs, std::int64_t toNs);
  void setRankCollapsed(std::int32_t rank, bool collapsed);
  void setOrderByStage(bool byStage);
  const std::vector<profiler::TimelineRow>& rows() const { return rows_; }

  // Search: returns the hit count and selects the first hit at or after the view's start.
  std::size_t setSearch(const QString& pattern, bool regex);
  const std::vector<profiler::SearchHit>& searchHits() const { return hits_; }
  // The selected hit's place in searchHits() (meaningful while there are hits).
  std::size_t currentHit() const { return currentHit_; }
  void nextHit(int direction);

  std::optional<TimelineSelection> selection() const { return selection_; }
  profiler::SpanRef selectedSpan() const { return selected_; }
  void selectSpan(profiler::SpanRef ref);

  // What lies under a widget position: a span, or the first span of a merged block.
  struct Hit {
    profiler::SpanRef ref;
    std::uint32_t count = 0;  // spans under the pixel's item (1 for a drawn span)
  };
  Hit hitTest(QPoint pos) const;
  const profiler::TimelineRow* rowUnder(QPoint pos, int& x) const;
  QString counterTooltip(QPoint pos) const;
  QString tooltipText(QPoint pos) const;
  // Its fields, and an imported span's other args: all of them, or the first `maxArgs` lines.
  QString spanDescription(profiler::SpanRef ref, int maxArgs = -1) const;
  // The selected span as Perfetto's details panel gives it: its description, the spans it lies
  // in from the innermost out, and the spans its flows join it to. Empty with no selection.
  QString selectedDetails() const;
  bool shortcutsShown() const { return showHelp_; }

  // Bookmarks: named times of this trace (B adds one at the cursor, "," and "." centre the
  // previous and the next). setIndex clears them: they mark the old trace's times.
  const profiler::BookmarkList& bookmarks() const { return bookmarks_; }
  void setBookmarks(profiler::BookmarkList bookmarks);
  // Adds one at `ns` (an empty name: "Bookmark N") and returns its place; UserError, changing
  // nothing, as BookmarkList::add.
  std::size_t addBookmark(std::int64_t ns, const std::string& name = {});
  void renameBookmark(std::size_t i, const std::string& name);  // UserError as BookmarkList
  void removeBookmark(std::size_t i);
  // Centres the view on bookmark i, keeping the zoom.
  void showBookmark(std::size_t i);
  // Centres the nearest bookmark more than half a pixel before (direction < 0) or after the
  // view's centre; false when there is none.
  bool nextBookmark(int direction);
  int timeAreaLeft() const { return kLabelWidth; }
  int timeAreaWidth() const { return std::max(1, width() - kLabelWidth); }
  int contentTop() const { return kRulerHeight; }

  // Paints the whole view into any device (image, SVG generator) of the widget's size.
  void render(QPainter& p) const;

 signals:
  void selectionChanged();
  void spanSelected();
  // setIndex gave the view another trace (or none): what was found in the old one is stale.
  void indexReplaced();
  void bookmarksChanged();
  // A key's action was refused (a bookmark past the limit): why, in one line.
  void refused(const QString& why);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;

 private:
  static constexpr int kLabelWidth = 160;
  static constexpr int kRulerHeight = 26;

  void relayout();
  std::size_t layoutShape() const;  // changes when lanes, levels or counters are added
  void paintRows(QPainter& p) const;
  void paintLevelRow(QPainter& p, const profiler::TimelineRow& row, int y) const;
  void paintCounterRow(QPainter& p, const profiler::TimelineRow& row, int y) const;
  void paintBubbles(QPainter& p, const profiler::TimelineRow& row, int y,
                    const std::vector<profiler::DrawItem>& items) const;
  void paintFlows(QPainter& p) const;
  void paintBookmarkLines(QPainter& p) const;
  void paintBookmarkFlags(QPainter& p) const;
  std::vector<QRect> bookmarkLabels(const QFontMetrics& metrics) const;
  QString bookmarkTooltip(QPoint pos) const;
  void sortFlows() const;
  void paintRuler(QPainter& p) const;
  void paintLabels(QPainter& p) const;
  void paintOverlay(QPainter& p) const;
  int rowY(profiler::SpanRef ref) const;  // widget y of the span's row, -1 if not shown
  void followFlow(int direction);
  void userMoved();
  void keepTraceInView();
  void finishBox(QPoint end);

  std::shared_ptr<profiler::TimelineIndex> index_;
  profiler::TimeAxis axis_;
  profiler::LayoutOptions layoutOptions_;
  std::vector<profiler::TimelineRow> rows_;
  std::vector<int> laneFirstRow_;  // lane -> row of depth 0, -1 when folded
  std::size_t shape_ = 0;
  mutable std::vector<std::uint32_t> flowOrder_;  // flows by start; see sortFlows
  mutable std::int64_t longestFlowNs_ = 0;
  mutable LabelCache labels_;  // shaped label text, kept from frame to frame
  int axisWidth_ = 1;          // the time area's width the axis was last set for
  int scrollY_ = 0;
  QString message_;
  std::vector<profiler::SearchHit> hits_;
  std::size_t currentHit_ = 0;
  std::optional<TimelineSelection> selection_;
  profiler::SpanRef selected_;
  profiler::BookmarkList bookmarks_;
  std::optional<int> cursorX_;  // widget x of the pointer's last move over the view
  bool followLive_ = true;
  bool liveStopped_ = false;  // appendEvents ran out of memory
  bool showHelp_ = false;
  enum class Drag { None, Pan, Box } drag_ = Drag::None;
  QPoint dragStart_, dragLast_;
  bool dragMoved_ = false;
};

}  // namespace parascope::ui
