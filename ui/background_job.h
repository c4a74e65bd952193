// Work for the GUI done on a thread of its own (reading and analysing trace files), whose result
// the frame timer picks up. The handoff is a mutex the timer polls, not a queued Qt call, so
// ThreadSanitizer sees the synchronisation (Qt's own is not instrumented). The GUI thread never
// waits for a job: one replaced while it runs is joined once it has ended (or at destruction).
#pragma once

#include <QString>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace parascope::ui {

template <typename Result>
class BackgroundJob {
 public:
  BackgroundJob() = default;
  ~BackgroundJob() {
    if (thread_.joinable()) thread_.join();
    for (Retired& r : retired_) r.thread.join();
  }
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;

  // Runs `work` (returning a Result; an exception's message becomes the error) at once; the
  // previous job's result is dropped if it was not taken, and that job left to end on its own.
  template <typename Work>
  void start(Work work) {
    reap();
    if (thread_.joinable()) retired_.push_back({std::move(thread_), std::move(state_)});
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
    reap();
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
  struct Retired {
    std::thread thread;
    std::shared_ptr<State> state;
  };

  // Joins the replaced jobs that have ended (a join that does not wait).
  void reap() {
    std::erase_if(retired_, [](Retired& r) {
      {
        std::lock_guard lock(r.state->mutex);
        if (!r.state->done) return false;
      }
      r.thread.join();
      return true;
    });
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
  std::vector<Retired> retired_;
};

}  // namespace parascope::ui
