// Loads trace files and builds the timeline index as a JobTracker job, reporting progress and
// honouring cancel: a result from a superseded or cancelled load is dropped. Failures (missing,
// corrupt, truncated or unsupported files) arrive as a message, never as a crash.
#pragma once

#include <QObject>
#include <QStringList>
#include <functional>
#include <memory>

#include "profiler/timeline/timeline_index.h"
#include "profiler/trace_data.h"
#include "ui/job_tracker.h"

namespace parascope::ui {

class TraceLoader : public QObject {
  Q_OBJECT
 public:
  explicit TraceLoader(QObject* parent = nullptr);

  // Files are read as one trace (one file per rank, or one merged file).
  void load(const QStringList& paths);
  // A trace `read` on the worker thread (composed from several, say); `what` names it in
  // messages, and an exception `read` throws fails the load with its message.
  using Reader = std::function<profiler::TraceData()>;
  void load(const QString& what, const Reader& read);
  void cancel();
  bool running() const { return jobs_.running(kSlot); }

 signals:
  void progress(const QString& stage, double fraction);  // fraction < 0: unknown
  void loaded(std::shared_ptr<parascope::profiler::TimelineIndex> index, qint64 eventCount);
  void failed(const QString& message);
  void cancelled();

 private:
  static inline const QString kSlot = QStringLiteral("load");
  using JobReader = std::function<profiler::TraceData(const JobTracker::Job&)>;
  void start(const QString& reading, const QString& what, JobReader read);

  JobTracker jobs_;
};

}  // namespace parascope::ui
