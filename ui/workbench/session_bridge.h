// Carries a session's reports from its rank threads to the GUI thread. The observer callbacks
// copy each report into a bounded queue and return; the GUI drains the queue on a timer at frame
// rate and handles everything drained in one go, so display updates are coalesced per frame.
// Nothing is dropped: when the queue is full the reporting rank waits for the next drain
// (back-pressure on training, never a lost report). close() ends the waiting for good, so a
// window can stop and destroy its session without draining.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <variant>
#include <vector>

#include "core/session/reports.h"

namespace parascope::ui {

// A step report from onRankStep is tagged so it is not taken for rank 0's onStep.
struct RankStepReport {
  parascope::StepReport step;
};

using SessionReport =
    std::variant<parascope::StartReport, parascope::StepReport, RankStepReport,
                 parascope::EvalReport, parascope::SwitchReport, parascope::CheckpointReport,
                 parascope::ErrorReport, parascope::FinishedReport>;

class SessionBridge final : public parascope::SessionObserver {
 public:
  explicit SessionBridge(std::size_t capacity = 4096) : capacity_(capacity) {}

  void onStart(const parascope::StartReport& r) override { push(r); }
  void onStep(const parascope::StepReport& r) override;
  void onRankStep(const parascope::StepReport& r) override { push(RankStepReport{r}); }
  void onEval(const parascope::EvalReport& r) override { push(r); }
  void onSwitch(const parascope::SwitchReport& r) override { push(r); }
  void onCheckpoint(const parascope::CheckpointReport& r) override { push(r); }
  void onError(const parascope::ErrorReport& r) override { push(r); }
  void onFinished(const parascope::FinishedReport& r) override { push(r); }

  // Before the session starts: `stop` is called from the reporting thread with step `steps`'s
  // report, so a session asked for N steps ends at the boundary right after step N however fast
  // steps are compared with the GUI's frames.
  void stopAfter(int steps, std::function<void()> stop) {
    stopAfter_ = steps;
    stop_ = std::move(stop);
  }
  // GUI thread: everything queued so far, oldest first; wakes ranks waiting on a full queue.
  std::vector<SessionReport> drain();
  // Pushes never wait again (the session is being torn down).
  void close();
  std::size_t capacity() const { return capacity_; }
  // Times a rank had to wait for a drain, for the benchmark and the tests.
  std::size_t waits() const;

 private:
  void push(SessionReport report);

  const std::size_t capacity_;
  mutable std::mutex mutex_;  // guards queue_, closed_, waits_
  std::condition_variable drained_;
  std::deque<SessionReport> queue_;
  bool closed_ = false;
  std::size_t waits_ = 0;
  int stopAfter_ = 0;  // 0: never
  std::function<void()> stop_;
};

}  // namespace parascope::ui
