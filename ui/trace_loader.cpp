// TraceLoader; see trace_loader.h. The worker only touches its own data; every hand-over to
// the GUI thread is a queued invocation on `this`, checked against the current job number.
#include "ui/trace_loader.h"

#include <QMetaObject>
#include <exception>

#include "profiler/io/chrome_import.h"

namespace parascope::ui {

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<parascope::ui::TimelineIndex>>();
}

TraceLoader::~TraceLoader() {
  ++job_;
  join();
}

void TraceLoader::join() {
  if (worker_.joinable()) worker_.join();
}

void TraceLoader::load(const QStringList& paths) {
  const std::uint64_t job = ++job_;
  join();
  finished_ = false;
  worker_ = std::thread([this, paths, job] { run(paths, job); });
}

void TraceLoader::cancel() {
  ++job_;
  emit cancelled();
}

void TraceLoader::run(QStringList paths, std::uint64_t job) {
  auto post = [this, job](auto&& f) {
    QMetaObject::invokeMethod(
        this,
        [this, job, f = std::forward<decltype(f)>(f)] {
          if (job_ == job) f();
        },
        Qt::QueuedConnection);
  };
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag = true; }
  } done{finished_};
  try {
    std::vector<std::string> files;
    for (const QString& p : paths) files.push_back(p.toStdString());
    post([this, n = paths.size()] { emit progress(tr("Reading %1 file(s)").arg(n), -1); });
    const profiler::TraceData trace = profiler::importChromeTraces(files);
    if (job_ != job) return;
    auto index = std::make_shared<TimelineIndex>();
    const bool complete = index->build(trace, [&](double f) {
      post([this, f] { emit progress(tr("Building the timeline"), f); });
      return job_ == job;
    });
    if (!complete) return;
    if (trace.events.empty()) {
      post([this, paths] {
        emit failed(tr("%1: the trace holds no events").arg(paths.join(", ")));
      });
      return;
    }
    post([this, index, n = trace.events.size()] { emit loaded(index, static_cast<qint64>(n)); });
  } catch (const std::exception& e) {
    post([this, message = QString::fromUtf8(e.what())] { emit failed(message); });
  }
}

}  // namespace parascope::ui
