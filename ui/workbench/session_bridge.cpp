#include "ui/workbench/session_bridge.h"

namespace parascope::ui {

void SessionBridge::push(SessionReport report) {
  std::unique_lock lock(mutex_);
  if (!closed_ && queue_.size() >= capacity_) {
    ++waits_;
    drained_.wait(lock, [this] { return closed_ || queue_.size() < capacity_; });
  }
  queue_.push_back(std::move(report));
}

void SessionBridge::onStep(const parascope::StepReport& r) {
  push(r);
  if (stopAfter_ > 0 && r.step >= stopAfter_ && stop_) stop_();
}

std::vector<SessionReport> SessionBridge::drain() {
  std::vector<SessionReport> out;
  {
    std::lock_guard lock(mutex_);
    out.reserve(queue_.size());
    for (auto& r : queue_) out.push_back(std::move(r));
    queue_.clear();
  }
  drained_.notify_all();
  return out;
}

void SessionBridge::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  drained_.notify_all();
}

std::size_t SessionBridge::waits() const {
  std::lock_guard lock(mutex_);
  return waits_;
}

}  // namespace parascope::ui
