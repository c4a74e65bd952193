// Loads trace files and builds the timeline index on a worker thread, reporting progress and
// honouring cancel (hotspot's job tracker: results come back to the GUI thread through a
// queued call and a result from a superseded or cancelled load is dropped). Failures (missing,
// corrupt, truncated or unsupported files) arrive as a message, never as a crash.
#pragma once

#include <QObject>
#include <QStringList>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "profiler/timeline/timeline_index.h"
#include "profiler/trace_data.h"

namespace parascope::ui {

class TraceLoader : public QObject {
  Q_OBJECT
 public:
  explicit TraceLoader(QObject* parent = nullptr);
  ~TraceLoader() override;  // cancels and joins a running load

  // Files are read as one trace (one file per rank, or one merged file).
  void load(const QStringList& paths);
  // A trace `read` on the worker thread (composed from several, say); `what` names it in
  // messages, and an exception `read` throws fails the load with its message.
  using Reader = std::function<profiler::TraceData()>;
  void load(const QString& what, Reader read);
  void cancel();
  bool running() const { return worker_.joinable() && !finished_; }

 signals:
  void progress(const QString& stage, double fraction);  // fraction < 0: unknown
  void loaded(std::shared_ptr<parascope::profiler::TimelineIndex> index, qint64 eventCount);
  void failed(const QString& message);
  void cancelled();

 private:
  struct Message {
    enum Kind { Progress, Loaded, Failed } kind = Progress;
    std::uint64_t job = 0;
    QString text;
    double fraction = 0;
    std::shared_ptr<profiler::TimelineIndex> index;
    qint64 events = 0;
  };
  void start(const QString& reading, const QString& what, Reader read);
  void run(const QString& what, const Reader& read, std::uint64_t job);
  void join();
  void post(Message m);      // worker thread
  Q_INVOKABLE void drain();  // GUI thread

  std::thread worker_;
  std::atomic<std::uint64_t> job_{0};  // bumped by load and cancel: older jobs are stale
  std::atomic<bool> finished_{true};
  std::mutex mutex_;            // guards queue_
  std::vector<Message> queue_;  // written by the worker as it ends
};

}  // namespace parascope::ui
