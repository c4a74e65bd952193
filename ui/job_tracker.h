// The GUI's one way to run work off the GUI thread (reading and analysing traces, diffs,
// predictions, plan searches, calibration), as hotspot's JobTracker: each job runs under a
// named slot on a thread of its own; starting a slot's job again (or cancelling it) drops the
// older job's result, so a result never lands in a view that has moved on; the GUI thread never
// waits for a job. Results cross to the GUI thread through a mutex a timer polls while jobs run,
// not through a queued Qt call, so ThreadSanitizer sees the hand-over (Qt's own event queue is
// not instrumented). A dropped job is told through its Job (cancelled()), is left to end on its
// own, and its thread is joined once it has ended, or when the tracker goes.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace parascope::ui {

class JobTracker : public QObject {
  Q_OBJECT
 public:
  // The state a job and the tracker share.
  struct State {
    std::atomic<bool> cancelled{false};
    std::mutex mutex;  // guards what follows
    bool done = false;
    QString error;  // the exception's message when the work threw
    QString stage;  // the newest progress report
    double fraction = -1;
    bool progressed = false;
  };

  // What a running job sees: whether its result will be dropped (return early then), and a
  // way to say how far it is (the tracker's `progressed` signal carries it to the GUI).
  class Job {
   public:
    explicit Job(std::shared_ptr<State> state) : state_(std::move(state)) {}
    bool cancelled() const { return state_->cancelled.load(std::memory_order_relaxed); }
    // For work that takes a flag to poll (the plan search).
    const std::atomic<bool>* cancelFlag() const { return &state_->cancelled; }
    // fraction in [0, 1], or < 0 when unknown.
    void progress(const QString& stage, double fraction) const;

   private:
    std::shared_ptr<State> state_;
  };

  explicit JobTracker(QObject* parent = nullptr);
  // Cancels every job and waits for each to end: owners hold their tracker as the last member,
  // so no job outlives what it reads.
  ~JobTracker() override;
  JobTracker(const JobTracker&) = delete;
  JobTracker& operator=(const JobTracker&) = delete;

  // Runs `work(job)` as `slot`'s job, replacing (cancelling) the one it runs. On the GUI thread,
  // once the work returns: `done(result)`; once it throws: `failed(message)`. Neither is called
  // for a job replaced or cancelled before it ended.
  template <typename Work, typename Done>
  void start(const QString& slot, Work work, Done done,
             std::function<void(const QString&)> failed = {}) {
    using Result = decltype(work(std::declval<Job&>()));
    auto result = std::make_shared<Result>();
    auto state = std::make_shared<State>();
    std::thread thread([state, result, work = std::move(work)]() mutable {
      Job job(state);
      QString error;
      try {
        *result = work(job);
      } catch (const std::exception& e) {
        error = QString::fromUtf8(e.what());
      }
      std::lock_guard lock(state->mutex);
      state->error = error;
      state->done = true;
    });
    add(slot, state, std::move(thread),
        [result, done = std::move(done), failed = std::move(failed)](const QString& error) {
          if (error.isEmpty()) {
            done(std::move(*result));
          } else if (failed) {
            failed(error);
          }
        });
  }

  // Drops the slot's job, if one runs: its result is never delivered.
  void cancel(const QString& slot);
  bool running(const QString& slot) const;
  // Jobs running, dropped ones still ending included (what a test waits for).
  int threads() const { return static_cast<int>(jobs_.size()); }

 signals:
  // A job's newest progress report, at most once per poll.
  void progressed(const QString& slot, const QString& stage, double fraction);

 private:
  struct Entry {
    QString slot;  // empty once dropped
    std::uint64_t serial = 0;
    std::shared_ptr<State> state;
    std::thread thread;
    std::function<void(const QString&)> deliver;
  };
  void add(const QString& slot, std::shared_ptr<State> state, std::thread thread,
           std::function<void(const QString&)> deliver);
  void poll();

  std::vector<Entry> jobs_;
  // Each slot's newest start or cancel: only a job whose serial is its slot's newest delivers.
  std::map<QString, std::uint64_t> latest_;
  std::uint64_t serial_ = 0;
  QTimer poll_;
};

}  // namespace parascope::ui
