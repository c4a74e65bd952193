// The workbench's Planner tab: plan a job for a cluster from the desk (core/plan/search.h, what
// `parascope-cli plan` runs). Pick a model (the strategy panel's, or one of resources/models), a
// system (a preset, or this machine's description) and a GPU count; settings given as key=value
// change the model's config, and the strategy keys among them are kept by the search
// (semi-auto). The search runs off the GUI thread and the strategies it simulates fill the table
// as they come, fastest first (sortable by any column, filtered by key=value). Selecting one
// shows its predicted step as a timeline of one rank per pipeline rank (its data- and
// tensor-parallel peers run the same program), its step split and what limits it, and its memory
// per GPU by category against the device's. Apply puts a candidate of the panel's own model in
// the strategy panel and applies it: a live switch while a session runs.
#pragma once

#include <QWidget>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/plan/search.h"
#include "core/plan/system.h"
#include "ui/adaptive_splitter.h"
#include "ui/job_tracker.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableView;
class QTableWidget;

namespace parascope::profiler {
class TimelineIndex;
}  // namespace parascope::profiler

namespace parascope::ui {

class PlanCandidateModel;
class PlanFilterModel;
class TimelineView;

class PlannerView : public QWidget {
  Q_OBJECT
 public:
  explicit PlannerView(QWidget* parent = nullptr);

  // The model choice "The strategy panel's": its document, read when a search starts.
  void setPanelDocument(std::function<nlohmann::json()> document);
  // This machine's description (Session > Calibrate this machine): the system choice "This
  // machine". Without one that choice says how to make one.
  void setThisMachine(std::optional<parascope::SystemDescription> system);

  QComboBox* modelChoice() const { return model_; }
  QComboBox* systemChoice() const { return system_; }
  QSpinBox* gpuCount() const { return gpus_; }
  QLineEdit* settings() const { return settings_; }
  QLineEdit* filter() const { return filter_; }
  QPushButton* planButton() const { return plan_; }
  QPushButton* applyButton() const { return apply_; }
  PlanCandidateModel* candidates() const { return candidates_; }
  PlanFilterModel* filtered() const { return filtered_; }
  QTableView* table() const { return table_; }
  TimelineView* timeline() const { return timeline_; }
  QTableWidget* memoryTable() const { return memory_; }
  // The line above the table: the search's progress and counts, or why it failed.
  QString summary() const;
  // The selected candidate's step split and limit.
  QString detail() const;
  bool searching() const { return searching_; }
  // From this height of the table's and the details' splitter on, the details go under the
  // table; below it, beside it.
  static constexpr int kStackedFrom = 300;
  AdaptiveSplitter* split() const { return split_; }

 public slots:
  // Searches the chosen model, system and GPUs (a search in flight is cancelled).
  void plan();
  // The selected candidate into the strategy panel (applyRequested).
  void apply();

 signals:
  void searchEnded(bool failed);
  // The selected candidate's detail and predicted timeline are shown (or why not, in detail()).
  void candidateShown();
  // Apply: the panel's document with the candidate's strategy keys set.
  void applyRequested(const nlohmann::json& document);

 private:
  // What a search's threads hand the GUI thread while it runs.
  struct Progress {
    std::mutex mutex;
    std::vector<parascope::PlanEstimate> simulated;
  };
  struct Detail {
    std::shared_ptr<profiler::TimelineIndex> index;
    int pipelineRanks = 0;
  };
  void takeSimulated();
  void showSearch(const parascope::PlanSearch& result);
  void showSelected();
  void showDetail(Detail d);
  void updateApply();
  void setSummary(const QString& text, bool error);
  parascope::PlanSearchRequest request() const;
  std::optional<parascope::SystemDescription> chosenSystem() const;

  QComboBox* model_ = nullptr;
  QComboBox* system_ = nullptr;
  QSpinBox* gpus_ = nullptr;
  QLineEdit* settings_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QPushButton* plan_ = nullptr;
  QPushButton* apply_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* detail_ = nullptr;
  QLabel* timelineTitle_ = nullptr;
  PlanCandidateModel* candidates_ = nullptr;
  PlanFilterModel* filtered_ = nullptr;
  QTableView* table_ = nullptr;
  QTableWidget* memory_ = nullptr;
  TimelineView* timeline_ = nullptr;
  AdaptiveSplitter* split_ = nullptr;
  QSplitter* below_ = nullptr;

  std::function<nlohmann::json()> panelDocument_;
  std::optional<parascope::SystemDescription> thisMachine_;
  // The search shown: its request (what Apply writes the strategy into), system and progress.
  parascope::PlanSearchRequest shown_;
  bool shownPanelModel_ = false;
  std::shared_ptr<Progress> progress_;
  bool searching_ = false;
  // Last: its jobs end before what they report into goes.
  JobTracker jobs_;
};

}  // namespace parascope::ui
