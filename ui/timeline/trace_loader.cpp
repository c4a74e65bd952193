// TraceLoader; see trace_loader.h.
#include "ui/timeline/trace_loader.h"

#include <stdexcept>

#include "profiler/io/chrome_import.h"

namespace parascope::ui {

namespace {
struct Loaded {
  std::shared_ptr<profiler::TimelineIndex> index;  // null when the load was cancelled
  qint64 events = 0;
};
}  // namespace

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {
  connect(&jobs_, &JobTracker::progressed, this,
          [this](const QString&, const QString& stage, double fraction) {
            emit progress(stage, fraction);
          });
}

void TraceLoader::load(const QStringList& paths) {
  std::vector<std::string> files;
  for (const QString& p : paths) files.push_back(p.toStdString());
  start(tr("Reading %1 file(s)").arg(paths.size()), paths.join(", "),
        [files](const JobTracker::Job& job) {
          profiler::ImportOptions options;
          options.cancel = job.cancelFlag();  // a closed view waits for no file
          return profiler::importChromeTraces(files, options);
        });
}

void TraceLoader::load(const QString& what, const Reader& read) {
  start(tr("Reading %1").arg(what), what, [read](const JobTracker::Job&) { return read(); });
}

void TraceLoader::start(const QString& reading, const QString& what, JobReader read) {
  // Said here rather than by the job: a report the job makes before its import changes nothing
  // the user sees, and the import is most of the load.
  emit progress(reading, -1);
  const QString building = tr("Building the timeline");
  const std::string empty = tr("%1: the trace holds no events").arg(what).toStdString();
  jobs_.start(
      kSlot,
      [read = std::move(read), building, empty](const JobTracker::Job& job) {
        const profiler::TraceData trace = read(job);
        if (trace.events.empty()) throw std::runtime_error(empty);
        Loaded out;
        auto index = std::make_shared<profiler::TimelineIndex>();
        const bool complete = index->build(trace, [&](double f) {
          job.progress(building, f);
          return !job.cancelled();
        });
        if (complete) out = {std::move(index), static_cast<qint64>(trace.events.size())};
        return out;
      },
      [this](Loaded loaded) {
        if (loaded.index) emit this->loaded(std::move(loaded.index), loaded.events);
      },
      [this](const QString& message) { emit failed(message); });
}

void TraceLoader::cancel() {
  jobs_.cancel(kSlot);
  emit cancelled();
}

}  // namespace parascope::ui
