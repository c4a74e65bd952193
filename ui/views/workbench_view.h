// The contract between the workbench and its views of a run: each view is told when a session
// starts (and shows nothing of an earlier run or trace from then on), when it switches strategy,
// when it stops, and when the trace shown is replaced (the ended run's, analysed from memory, or
// traces opened from files). No view reads the window's state; what it shows arrives here. A
// view is one file and one line in workbenchViews() (view_registry.cpp).
#pragma once

#include <QString>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "profiler/analysis/trace_analysis.h"

class QWidget;

namespace parascope::ui {

// What a replaced trace brings.
struct ShownTrace {
  std::shared_ptr<const profiler::TraceAnalysis> analysis;  // never null
  // The strategy the trace ran last, if known: for the workbench's own run the session's, else
  // the strategy panel's; for an opened trace the config it recorded.
  std::optional<parascope::TrainConfig> config;
  // The memory estimate of `config`, by rank, then by item name ("parameters", ...).
  std::map<int, std::map<std::string, double>> predictedMemory;
  // An ended run that switched live: the first step of the strategy it ended with, and when that
  // step began; the peaks beside the prediction are taken from there. -1 / INT64_MIN: the whole
  // trace.
  int fromStep = -1;
  std::int64_t fromNs = INT64_MIN;
};

class WorkbenchView {
 public:
  virtual ~WorkbenchView() = default;
  // The widget its tab holds (the view, or a scroll area around it).
  virtual QWidget* tab() = 0;
  virtual void sessionStarted(const parascope::TrainConfig& config) = 0;
  // At the step boundary after `step`, the session runs `to`.
  virtual void strategySwitched(const parascope::TrainConfig& to, int step);
  // The session ended; its trace follows as traceReplaced once analysed.
  virtual void sessionStopped(bool failed);
  virtual void traceReplaced(const ShownTrace& trace) = 0;
};

struct ViewRegistration {
  const char* title;  // the tab's (translated in the "WorkbenchView" context)
  WorkbenchView* (*make)();
};

// The views of a run, in their tabs' order (after the Log, before Compare).
const std::vector<ViewRegistration>& workbenchViews();

}  // namespace parascope::ui
