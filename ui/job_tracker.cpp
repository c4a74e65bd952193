// JobTracker; see job_tracker.h. A job's thread is joined only after it set `done` (its last
// act), so the join returns at once; delivery runs after the entry left the list, so a
// callback may start or cancel jobs of any slot.
#include "ui/job_tracker.h"

#include <algorithm>

namespace parascope::ui {

namespace {
// How often results and progress are looked for while jobs run: a frame at 60 per second.
constexpr int kPollMs = 16;
}  // namespace

void JobTracker::Job::progress(const QString& stage, double fraction) const {
  std::lock_guard lock(state_->mutex);
  state_->stage = stage;
  state_->fraction = fraction;
  state_->progressed = true;
}

JobTracker::JobTracker(QObject* parent) : QObject(parent) {
  poll_.setInterval(kPollMs);
  connect(&poll_, &QTimer::timeout, this, &JobTracker::poll);
}

JobTracker::~JobTracker() {
  for (Entry& e : jobs_) e.state->cancelled = true;
  for (Entry& e : jobs_) e.thread.join();
}

void JobTracker::add(const QString& slot, std::shared_ptr<State> state, std::thread thread,
                     std::function<void(const QString&)> deliver) {
  cancel(slot);
  jobs_.push_back({slot, latest_[slot], std::move(state), std::move(thread), std::move(deliver)});
  poll_.start();
}

void JobTracker::cancel(const QString& slot) {
  latest_[slot] = ++serial_;
  for (Entry& e : jobs_) {
    if (e.slot != slot) continue;
    e.slot.clear();
    e.state->cancelled = true;
    e.deliver = nullptr;  // what it captured (the result) goes with the thread
  }
}

bool JobTracker::running(const QString& slot) const {
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const Entry& e) { return e.slot == slot; });
}

void JobTracker::poll() {
  struct Ended {
    QString slot;
    std::uint64_t serial;
    QString error;
    std::function<void(const QString&)> deliver;
  };
  std::vector<Ended> ended;
  std::vector<std::pair<QString, std::pair<QString, double>>> reports;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    bool done = false;
    QString error;
    {
      std::lock_guard lock(it->state->mutex);
      if (it->state->progressed && !it->slot.isEmpty()) {
        reports.push_back({it->slot, {it->state->stage, it->state->fraction}});
        it->state->progressed = false;
      }
      done = it->state->done;
      error = it->state->error;
    }
    if (!done) {
      ++it;
      continue;
    }
    it->thread.join();
    if (!it->slot.isEmpty()) ended.push_back({it->slot, it->serial, error, std::move(it->deliver)});
    it = jobs_.erase(it);
  }
  if (jobs_.empty()) poll_.stop();
  for (const auto& [slot, report] : reports) emit progressed(slot, report.first, report.second);
  // A callback may start or cancel a slot whose job also ended in this poll: that result is
  // then stale and is dropped like any other.
  for (Ended& e : ended) {
    if (latest_[e.slot] == e.serial) e.deliver(e.error);
  }
}

}  // namespace parascope::ui
