// Work for the GUI done on a thread of its own (reading and analysing trace files), whose result
// the frame timer picks up. The handoff is a mutex the timer polls, not a queued Qt call, so
// ThreadSanitizer sees the synchronisation (Qt's own is not instrumented).
#pragma once

#include <QString>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace parascope::ui {

template <typename Result>
class BackgroundJob {
 public:
  BackgroundJob() = default;
  ~BackgroundJob() {
    if (thread_.joinable()) thread_.join();
  }
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;

  // Runs `work` (returning a Result; an exception's message becomes the error) once the previous
  // job has ended; that job's result is dropped if it was not taken.
  template <typename Work>
  void start(Work work) {
    if (thread_.joinable()) thread_.join();
    state_ = std::make_shared<State>();
    thread_ = std::thread([state = state_, work = std::move(work)]() mutable {
      Result result{};
      QString error;
      try {
        result = work();
      } catch (const std::exception& e) {
        error = QString::fromUtf8(e.what());
      }
      std::lock_guard lock(state->mutex);
      state->result = std::move(result);
      state->error = error;
      state->done = true;
    });
  }

  // On the frame timer: true once the job has ended (then `result`, or `error` if it threw).
  bool take(Result& result, QString& error) {
    if (!state_) return false;
    {
      std::lock_guard lock(state_->mutex);
      if (!state_->done) return false;
      result = std::move(state_->result);
      error = state_->error;
    }
    state_.reset();
    thread_.join();
    return true;
  }

 private:
  struct State {
    std::mutex mutex;
    bool done = false;
    Result result;
    QString error;
  };
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace parascope::ui
