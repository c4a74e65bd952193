// The timeline as a window: the view, a search bar (substring or regex, next/previous, hit
// count), the selection statistics table, load progress with cancel, the export actions and the
// Bookmarks menu; the bookmarks of traces opened from files are saved in the settings file and
// come back when the same files are opened again. The workbench embeds the same pieces; live
// events go to view()->appendEvents.
#pragma once

#include <QMainWindow>

#include "ui/timeline/flame_view.h"
#include "ui/timeline/selection_stats_model.h"
#include "ui/timeline/timeline_view.h"
#include "ui/timeline/trace_loader.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QPushButton;

namespace parascope::ui {

class TimelineWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit TimelineWindow(QWidget* parent = nullptr);

  TimelineView* view() const { return view_; }
  SelectionStatsModel* statsModel() const { return stats_; }
  // The selection's flame graph, in the tab beside its statistics.
  FlameView* flame() const { return flame_; }
  TraceLoader* loader() const { return loader_; }
  void openFiles(const QStringList& paths);

 private:
  void buildMenus();
  QWidget* buildSearchBar();
  void showHitCount();
  void runSearch();
  void updateStats();
  void onProgress(const QString& stage, double fraction);
  void exportWith(const QString& title, const QString& filter,
                  const std::function<void(const std::string&)>& write);
  void fillBookmarksMenu(QMenu* menu);

  TimelineView* view_;
  SelectionStatsModel* stats_;
  FlameView* flame_;
  TraceLoader* loader_;
  QLineEdit* search_ = nullptr;
  QCheckBox* regex_ = nullptr;
  QLabel* hitCount_ = nullptr;
  QLabel* details_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QStringList loading_;     // the files being loaded
  QStringList bookmarked_;  // the files shown, whose bookmarks are saved; empty for a live run
};

}  // namespace parascope::ui
