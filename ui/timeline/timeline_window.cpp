// TimelineWindow; see timeline_window.h.
#include "ui/timeline/timeline_window.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <regex>

#include "core/common/checked_math.h"
#include "core/common/error.h"
#include "profiler/timeline/flame_graph.h"
#include "ui/name_columns.h"
#include "ui/timeline/timeline_export.h"
#include "ui/workbench/workbench_settings.h"

namespace parascope::ui {

TimelineWindow::TimelineWindow(QWidget* parent)
    : QMainWindow(parent),
      view_(new TimelineView),
      stats_(new SelectionStatsModel(this)),
      flame_(new FlameView),
      loader_(new TraceLoader(this)) {
  setWindowTitle(tr("ParaScope timeline"));
  auto* table = new QTableView;
  table->setObjectName(QStringLiteral("statsTable"));
  table->setModel(stats_);
  fitNamesBesideNumbers(table, SelectionStatsModel::Name);
  table->setMinimumWidth(380);  // name, count and total readable beside the timeline
  // New statistics are read from their first row.
  connect(stats_, &QAbstractItemModel::modelReset, table, &QTableView::scrollToTop);
  // Until a box is selected the table is empty; say how to fill it.
  auto* hint =
      new QLabel(tr("Shift+drag a box over the timeline to see per-name statistics "
                    "(count, total, mean, min, max, share) of the spans inside it."));
  hint->setObjectName(QStringLiteral("statsHint"));
  hint->setWordWrap(true);
  hint->setAlignment(Qt::AlignCenter);
  hint->setEnabled(false);  // drawn in the palette's disabled (grey) text colour
  connect(stats_, &QAbstractItemModel::modelReset, hint,
          [this, hint] { hint->setVisible(stats_->rowCount() == 0); });
  // The selected span's details: args, the spans it lies in, its flows (TimelineView).
  details_ = new QLabel;
  details_->setObjectName(QStringLiteral("spanDetails"));
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  details_->setTextFormat(Qt::PlainText);
  details_->setText(tr("Click a span to see its details."));
  // The selection as per-name statistics or as a flame graph, one tab each.
  auto* statsPage = new QWidget;
  auto* statsLayout = new QVBoxLayout(statsPage);
  statsLayout->setContentsMargins(0, 0, 0, 0);
  statsLayout->addWidget(hint);
  statsLayout->addWidget(table, 1);
  auto* flameScroll = new QScrollArea;
  flameScroll->setWidget(flame_);
  flameScroll->setWidgetResizable(true);
  auto* selectionTabs = new QTabWidget;
  selectionTabs->setObjectName(QStringLiteral("selectionTabs"));
  selectionTabs->addTab(statsPage, tr("Statistics"));
  selectionTabs->addTab(flameScroll, tr("Flame graph"));
  auto* side = new QWidget;
  auto* sideLayout = new QVBoxLayout(side);
  sideLayout->setContentsMargins(0, 0, 0, 0);
  sideLayout->addWidget(selectionTabs, 1);
  sideLayout->addWidget(details_);
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(view_);
  splitter->addWidget(side);
  splitter->setStretchFactor(0, 4);
  splitter->setStretchFactor(1, 1);
  auto* central = new QWidget;
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(buildSearchBar());
  layout->addWidget(splitter, 1);
  setCentralWidget(central);
  progress_ = new QProgressBar;
  cancel_ = new QPushButton(tr("Cancel"));
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  progress_->hide();
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, loader_, &TraceLoader::cancel);
  connect(loader_, &TraceLoader::progress, this, &TimelineWindow::onProgress);
  connect(loader_, &TraceLoader::loaded, this, [this](auto index, qint64 n) {
    progress_->hide();
    cancel_->hide();
    view_->setMessage({});
    view_->setIndex(std::move(index));
    bookmarked_ = loading_;
    view_->setBookmarks(readBookmarks(bookmarked_));
    statusBar()->showMessage(tr("%1 events").arg(n));
  });
  connect(loader_, &TraceLoader::failed, this, [this](const QString& message) {
    progress_->hide();
    cancel_->hide();
    view_->setMessage(tr("Could not open the trace:\n%1").arg(message));
  });
  connect(loader_, &TraceLoader::cancelled, this, [this] {
    progress_->hide();
    cancel_->hide();
    view_->setMessage(tr("Loading cancelled."));
  });
  connect(view_, &TimelineView::selectionChanged, this, &TimelineWindow::updateStats);
  connect(view_, &TimelineView::spanSelected, this, [this] {
    const QString details = view_->selectedDetails();
    details_->setText(details.isEmpty() ? tr("Click a span to see its details.") : details);
  });
  connect(view_, &TimelineView::bookmarksChanged, this, [this] {
    if (!bookmarked_.isEmpty()) writeBookmarks(bookmarked_, view_->bookmarks());
  });
  connect(view_, &TimelineView::refused, this,
          [this](const QString& why) { statusBar()->showMessage(why, 10000); });
  // Another trace: the old selection's statistics go, and a search counts in the new one.
  connect(view_, &TimelineView::indexReplaced, this, [this] {
    bookmarked_.clear();  // a live run's, until a loaded trace's files say otherwise
    stats_->setStats({});
    flame_->setGraph({});
    details_->setText(tr("Click a span to see its details."));
    if (search_->text().isEmpty()) {
      hitCount_->clear();
    } else {
      runSearch();
    }
  });
  buildMenus();
  resize(1400, 850);
}

QWidget* TimelineWindow::buildSearchBar() {
  auto* bar = new QWidget;
  auto* row = new QHBoxLayout(bar);
  row->setContentsMargins(6, 4, 6, 4);
  search_ = new QLineEdit;
  search_->setPlaceholderText(tr("Search span names"));
  regex_ = new QCheckBox(tr("Regex"));
  auto* prev = new QPushButton(tr("Previous"));
  auto* next = new QPushButton(tr("Next"));
  hitCount_ = new QLabel;
  hitCount_->setObjectName(QStringLiteral("hitCount"));
  row->addWidget(search_, 1);
  row->addWidget(regex_);
  row->addWidget(prev);
  row->addWidget(next);
  row->addWidget(hitCount_);
  connect(search_, &QLineEdit::returnPressed, this, &TimelineWindow::runSearch);
  connect(regex_, &QCheckBox::toggled, this, &TimelineWindow::runSearch);
  connect(prev, &QPushButton::clicked, this, [this] {
    view_->nextHit(-1);
    showHitCount();
  });
  connect(next, &QPushButton::clicked, this, [this] {
    view_->nextHit(+1);
    showHitCount();
  });
  return bar;
}

// "k of N", as Perfetto's search box: which hit is selected, across every rank.
void TimelineWindow::showHitCount() {
  const std::size_t n = view_->searchHits().size();
  hitCount_->setText(n == 0 ? tr("no hits") : tr("%1 of %2").arg(view_->currentHit() + 1).arg(n));
}

void TimelineWindow::runSearch() {
  try {
    view_->setSearch(search_->text(), regex_->isChecked());
    showHitCount();
  } catch (const std::regex_error& e) {
    hitCount_->setText(tr("bad regular expression: %1").arg(e.what()));
  }
}

void TimelineWindow::updateStats() {
  const auto sel = view_->selection();
  if (!sel) return;
  stats_->setStats(profiler::selectionStats(view_->index(), sel->lanes, sel->fromNs, sel->toNs));
  flame_->setGraph(profiler::flameGraph(view_->index(), sel->lanes, sel->fromNs, sel->toNs));
}

void TimelineWindow::onProgress(const QString& stage, double fraction) {
  progress_->show();
  cancel_->show();
  progress_->setFormat(stage + QStringLiteral(" %p%"));
  if (fraction < 0) {
    progress_->setRange(0, 0);
  } else {
    progress_->setRange(0, 1000);
    progress_->setValue(static_cast<int>(fraction * 1000));
  }
  view_->setMessage(stage + QStringLiteral("…"));
}

void TimelineWindow::openFiles(const QStringList& paths) {
  if (paths.isEmpty()) return;
  setWindowTitle(tr("ParaScope timeline — %1").arg(paths.join(", ")));
  loading_ = paths;
  loader_->load(paths);
}

void TimelineWindow::exportWith(const QString& title, const QString& filter,
                                const std::function<void(const std::string&)>& write) {
  const QString path = QFileDialog::getSaveFileName(this, title, {}, filter);
  if (path.isEmpty()) return;
  try {
    write(path.toStdString());
    statusBar()->showMessage(tr("Wrote %1").arg(path));
  } catch (const std::exception& e) {
    QMessageBox::warning(this, title, QString::fromUtf8(e.what()));
  }
}

void TimelineWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open…"), this, [this] {
    openFiles(QFileDialog::getOpenFileNames(this, tr("Open traces"), {},
                                            tr("Traces (*.json *.json.gz);;All files (*)")));
  });
  file->addAction(tr("Export trace (selection or all)…"), this, [this] {
    exportWith(tr("Export trace"), tr("Chrome trace (*.json *.json.gz)"), [this](auto& path) {
      const auto sel = view_->selection();
      const profiler::TimelineIndex& index = view_->index();
      exportTraceRange(index, sel ? sel->fromNs : index.beginNs(), sel ? sel->toNs : index.endNs(),
                       path);
    });
  });
  file->addAction(tr("Export view as PNG…"), this, [this] {
    exportWith(tr("Export PNG"), tr("PNG (*.png)"), [this](auto& p) { exportViewPng(*view_, p); });
  });
  file->addAction(tr("Export view as SVG…"), this, [this] {
    exportWith(tr("Export SVG"), tr("SVG (*.svg)"), [this](auto& p) { exportViewSvg(*view_, p); });
  });
  file->addAction(tr("Export selection statistics as CSV…"), this, [this] {
    exportWith(tr("Export CSV"), tr("CSV (*.csv)"),
               [this](auto& p) { exportStatsCsv(stats_->stats(), p); });
  });
  file->addSeparator();
  // Quits the window it is in: the workbench's, where the timeline is one of its views (closing
  // only the embedded timeline would leave an empty pane for the rest of the session).
  QAction* quit = file->addAction(tr("&Quit"), QKeySequence(Qt::CTRL | Qt::Key_Q), this,
                                  [this] { window()->close(); });
  quit->setObjectName(QStringLiteral("quit"));
  QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
  viewMenu->addAction(tr("Fit all (Home)"), this, [this] { view_->fitAll(); });
  QAction* byStage = viewMenu->addAction(tr("Order ranks by pipeline stage"));
  byStage->setCheckable(true);
  connect(byStage, &QAction::toggled, view_, &TimelineView::setOrderByStage);
  QMenu* bookmarks = menuBar()->addMenu(tr("&Bookmarks"));
  bookmarks->setObjectName(QStringLiteral("bookmarksMenu"));
  connect(bookmarks, &QMenu::aboutToShow, this,
          [this, bookmarks] { fillBookmarksMenu(bookmarks); });
  fillBookmarksMenu(bookmarks);
}

// Rebuilt each time it opens: the actions, then one submenu per bookmark in time order.
void TimelineWindow::fillBookmarksMenu(QMenu* menu) {
  menu->clear();
  const bool any = !view_->bookmarks().empty();
  QAction* add = menu->addAction(tr("Add at the view's centre (B: at the cursor)"), this, [this] {
    try {
      const double centre = view_->timeAreaWidth() / 2.0;
      view_->addBookmark(view_->axis().time(centre));
    } catch (const UserError& e) {
      statusBar()->showMessage(QString::fromUtf8(e.what()), 10000);
    }
  });
  add->setEnabled(view_->index().eventCount() > 0);
  menu->addAction(tr("Previous (,)"), this, [this] { view_->nextBookmark(-1); })->setEnabled(any);
  menu->addAction(tr("Next (.)"), this, [this] { view_->nextBookmark(+1); })->setEnabled(any);
  if (!any) return;
  menu->addSeparator();
  const profiler::TimelineIndex& index = view_->index();
  for (std::size_t i = 0; i < view_->bookmarks().size(); ++i) {
    const profiler::Bookmark& b = view_->bookmarks().all()[i];
    QMenu* one = menu->addMenu(tr("%1 — %2").arg(
        QString::fromStdString(b.name),
        QString::fromStdString(profiler::formatDuration(saturatingSub(b.ns, index.beginNs())))));
    one->addAction(tr("Go to"), this, [this, i] { view_->showBookmark(i); });
    one->addAction(tr("Rename…"), this, [this, i] {
      const QString now = QString::fromStdString(view_->bookmarks().all().at(i).name);
      bool ok = false;
      const QString name = QInputDialog::getText(this, tr("Rename bookmark"), tr("Name:"),
                                                 QLineEdit::Normal, now, &ok);
      if (!ok) return;
      try {
        view_->renameBookmark(i, name.toStdString());
      } catch (const UserError& e) {
        QMessageBox::warning(this, tr("Rename bookmark"), QString::fromUtf8(e.what()));
      }
    });
    one->addAction(tr("Remove"), this, [this, i] { view_->removeBookmark(i); });
  }
}

}  // namespace parascope::ui
