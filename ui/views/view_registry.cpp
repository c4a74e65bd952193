// The workbench's views of a run (workbench_view.h): adding one is its file and a line here.
#include <QtGlobal>

#include "ui/views/analyses_view.h"
#include "ui/views/breakdown_view.h"
#include "ui/views/communication_view.h"
#include "ui/views/memory_view.h"
#include "ui/views/pipeline_view.h"
#include "ui/views/workbench_view.h"

namespace parascope::ui {

void WorkbenchView::strategySwitched(const parascope::TrainConfig& /*to*/, int /*step*/) {}
void WorkbenchView::sessionStopped(bool /*failed*/) {}

const std::vector<ViewRegistration>& workbenchViews() {
  static const std::vector<ViewRegistration> views = {
      {QT_TRANSLATE_NOOP("WorkbenchView", "Memory"),
       []() -> WorkbenchView* { return new MemoryView; }},
      {QT_TRANSLATE_NOOP("WorkbenchView", "Pipeline"),
       []() -> WorkbenchView* { return new PipelineView; }},
      {QT_TRANSLATE_NOOP("WorkbenchView", "Communication"),
       []() -> WorkbenchView* { return new CommunicationView; }},
      {QT_TRANSLATE_NOOP("WorkbenchView", "Breakdown"),
       []() -> WorkbenchView* { return new BreakdownView; }},
      {QT_TRANSLATE_NOOP("WorkbenchView", "Analyses"),
       []() -> WorkbenchView* { return new AnalysesView; }},
  };
  return views;
}

}  // namespace parascope::ui
