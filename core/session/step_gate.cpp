// StepGate: the wanted state under one mutex; rank 0 decides, the others follow.
#include "core/session/step_gate.h"

#include <chrono>
#include <stdexcept>

#include "core/common/stop_signal.h"

namespace parascope {

void StepGate::pause() {
  std::lock_guard lock(mutex_);
  paused_ = true;
  credits_ = 0;
}

void StepGate::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
  }
  changed_.notify_all();
}

void StepGate::stepOnce() {
  {
    std::lock_guard lock(mutex_);
    paused_ = true;
    ++credits_;
  }
  changed_.notify_all();
}

void StepGate::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
}

void StepGate::requestSwitch() {
  {
    std::lock_guard lock(mutex_);
    switchWanted_ = true;
  }
  changed_.notify_all();
}

void StepGate::requestSave() {
  {
    std::lock_guard lock(mutex_);
    saveWanted_ = true;
  }
  changed_.notify_all();
}

void StepGate::fail(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) failure_ = reason;
  }
  changed_.notify_all();
}

bool StepGate::paused() const {
  std::lock_guard lock(mutex_);
  return held_;
}

StepGate::Decision StepGate::decide(bool heartbeat) {
  std::unique_lock lock(mutex_);
  // A stop signal cannot notify the condition variable from its handler, so a paused wait looks
  // for it every tenth of a second.
  auto ready = [this] {
    return stopping_ || !paused_ || credits_ > 0 || switchWanted_ || saveWanted_ ||
           !failure_.empty() || pendingStopSignal() != 0;
  };
  held_ = !ready();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (!changed_.wait_for(lock, std::chrono::milliseconds(100), ready)) {
    if (heartbeat && std::chrono::steady_clock::now() >= until) break;
  }
  if (!failure_.empty()) throw std::runtime_error(failure_);
  if (pendingStopSignal() != 0) {
    held_ = false;
    lock.unlock();
    throwIfStopRequested();
  }
  if (stopping_) return Decision::Stop;
  if (switchWanted_) {
    switchWanted_ = false;
    return Decision::Switch;
  }
  if (saveWanted_) {
    saveWanted_ = false;
    return Decision::Save;
  }
  if (!paused_) {
    held_ = false;
    return Decision::Run;
  }
  if (credits_ > 0) {
    --credits_;
    held_ = false;
    return Decision::Run;
  }
  return Decision::Wait;
}

GateAction StepGate::sharedNext(int rank, int boundary) {
  if (rank == 0) {
    const Decision d = decide(false);
    {
      std::lock_guard lock(mutex_);
      decided_ = boundary;
      decisions_[boundary % kKept] = d;
    }
    changed_.notify_all();
    return static_cast<GateAction>(d);
  }
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return decided_ >= boundary || !failure_.empty(); });
  if (decided_ < boundary) throw std::runtime_error(failure_);
  return static_cast<GateAction>(decisions_[boundary % kKept]);
}

GateAction StepGate::next(Communicator& world, int boundary) {
  if (shared_) return sharedNext(world.rank(), boundary);
  for (;;) {
    int d = world.rank() == 0 ? static_cast<int>(decide(true)) : 0;
    if (world.size() > 1) world.broadcast(&d, 1, DType::I32, 0);
    if (d != static_cast<int>(Decision::Wait)) return static_cast<GateAction>(d);
  }
}

}  // namespace parascope
