// TraceLoader; see trace_loader.h. The worker only touches its own data and the message queue
// (under mutex_); the GUI thread is woken by a queued call by name that carries nothing, then
// drains the queue and drops messages from superseded jobs. Results cross threads only through
// the mutex, so ThreadSanitizer sees the hand-over (Qt's own event queue is not instrumented).
#include "ui/timeline/trace_loader.h"

#include <QMetaObject>
#include <exception>

#include "profiler/io/chrome_import.h"

namespace parascope::ui {

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {}

TraceLoader::~TraceLoader() {
  ++job_;
  join();
}

void TraceLoader::join() {
  if (worker_.joinable()) worker_.join();
}

void TraceLoader::load(const QStringList& paths) {
  std::vector<std::string> files;
  for (const QString& p : paths) files.push_back(p.toStdString());
  start(tr("Reading %1 file(s)").arg(paths.size()), paths.join(", "),
        [files] { return profiler::importChromeTraces(files); });
}

void TraceLoader::load(const QString& what, Reader read) {
  start(tr("Reading %1").arg(what), what, std::move(read));
}

void TraceLoader::start(const QString& reading, const QString& what, Reader read) {
  const std::uint64_t job = ++job_;
  join();
  finished_ = false;
  // Said here rather than by the worker: a message the worker posts before its import, and
  // this thread frees during it, made the import a sixth slower (measured with
  // --bench-timeline); after the import the worker's messages cost nothing measurable.
  emit progress(reading, -1);
  worker_ = std::thread([this, what, read = std::move(read), job] { run(what, read, job); });
}

void TraceLoader::cancel() {
  ++job_;
  emit cancelled();
}

void TraceLoader::post(Message m) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(m));
  }
  QMetaObject::invokeMethod(this, "drain", Qt::QueuedConnection);
}

void TraceLoader::drain() {
  std::vector<Message> messages;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    messages.swap(queue_);
  }
  for (Message& m : messages) {
    if (m.job != job_) continue;
    switch (m.kind) {
      case Message::Progress: emit progress(m.text, m.fraction); break;
      case Message::Loaded: emit loaded(std::move(m.index), m.events); break;
      case Message::Failed: emit failed(m.text); break;
    }
  }
}

void TraceLoader::run(const QString& what, const Reader& read, std::uint64_t job) {
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag = true; }
  } done{finished_};
  auto say = [&](Message::Kind kind, QString text, double fraction) {
    Message m;
    m.kind = kind;
    m.job = job;
    m.text = std::move(text);
    m.fraction = fraction;
    post(std::move(m));
  };
  try {
    const profiler::TraceData trace = read();
    if (job_ != job) return;
    auto index = std::make_shared<profiler::TimelineIndex>();
    const bool complete = index->build(trace, [&](double f) {
      say(Message::Progress, tr("Building the timeline"), f);
      return job_ == job;
    });
    if (!complete) return;
    if (trace.events.empty()) {
      say(Message::Failed, tr("%1: the trace holds no events").arg(what), 0);
      return;
    }
    Message m;
    m.kind = Message::Loaded;
    m.job = job;
    m.index = std::move(index);
    m.events = static_cast<qint64>(trace.events.size());
    post(std::move(m));
  } catch (const std::exception& e) {
    say(Message::Failed, QString::fromUtf8(e.what()), 0);
  }
}

}  // namespace parascope::ui
