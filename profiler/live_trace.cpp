// LiveTrace: begin installs a tracer and starts the drain thread; end stops the thread,
// uninstalls the tracer (no rank records into it afterwards), publishes the rest and writes the
// file the way profiler::TraceRecording does, so the file and what the GUI was fed agree.
#include "profiler/live_trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>

#include "core/common/error.h"
#include "profiler/clock_sync.h"
#include "profiler/io/chrome_export.h"

namespace parascope::profiler {

namespace {
// Half the timeline's feed period (5 a second): a feed finds the events at most 100 ms old.
// Each wake costs CPU time the ranks could use; the tracer's buffers hold far more than that.
constexpr std::chrono::milliseconds kLiveDrainInterval{100};
}  // namespace

LiveTrace::~LiveTrace() {
  stopDraining();
}

void LiveTrace::recordDevice(int /*cudaIndex*/) {
  gpu_ = true;  // CUPTI's records name their device
}

void LiveTrace::begin(parascope::Communicator* mpiWorld, int worldSize) {
  profiler::ClockOffset offset;
  if (mpiWorld) offset = profiler::estimateClockOffset(*mpiWorld);
  tracer_ = std::make_unique<profiler::Tracer>();
  tracer_->setWorldSize(worldSize);
  tracer_->setClockOffset(offset.offsetNs, offset.worldResidualNs);
  tracer_->install();
  if (gpu_) {
    cupti_ = std::make_unique<CuptiCollector>(*tracer_, makeCuptiActivitySource(),
                                              mpiWorld != nullptr ? mpiWorld->rank() : 0);
    cupti_->start();  // or host-only, said in one line
  }
  drainer_ = std::thread([this] { drainLoop(); });
}

void LiveTrace::drainLoop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kLiveDrainInterval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    try {
      if (cupti_) cupti_->flush();
      const profiler::TraceData part = tracer_->drain();
      whole_.merge(part);
      publish(part);
    } catch (const std::bad_alloc&) {
      // An exception leaving this thread would abort the application. The feed ends here: what
      // it holds is released, the ranks go on recording into the tracer's bounded buffers, and
      // the run ends without its trace (end() says why).
      // Nothing here allocates: the message is a literal, and empty vectors own no memory.
      lock.lock();
      failure_ = "out of memory while collecting the run's events; the live timeline stopped";
      std::vector<profiler::Event>().swap(pending_.events);
      lock.unlock();
      std::vector<profiler::Event>().swap(whole_.events);
      return;
    }
    lock.lock();
  }
}

void LiveTrace::publish(const profiler::TraceData& part) {
  if (part.events.empty()) return;
  std::lock_guard lock(mutex_);
  pending_.merge(part);
}

void LiveTrace::stopDraining() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (drainer_.joinable()) drainer_.join();
  if (cupti_) cupti_->stop();
  if (tracer_) tracer_->uninstall();
}

std::string LiveTrace::end(int rank) {
  stopDraining();
  if (const std::string why = failure(); !why.empty()) {
    throw UserError("the run's trace was not written: " + why);
  }
  const profiler::TraceData rest = tracer_->drain();
  whole_.merge(rest);
  publish(rest);
  whole_.sortByTime();
  // A run switched to more ranks: the file names the most it ran on, not the ranks it began with.
  for (const profiler::Event& e : whole_.events)
    whole_.worldSize = std::max(whole_.worldSize, e.rank + 1);
  if (const std::uint64_t lost = tracer_->dropped()) {
    std::fprintf(stderr,
                 "profiler: %llu events were dropped (a thread reached the tracer's limit of "
                 "events); the trace is incomplete\n",
                 static_cast<unsigned long long>(lost));
  }
  const std::string path = rank < 0 ? path_ : profiler::perRankPath(path_, rank);
  whole_.runConfig = config_;
  profiler::exportChromeTrace(whole_, path);
  auto ended = std::make_shared<const profiler::TraceData>(std::move(whole_));
  std::lock_guard lock(mutex_);
  ended_ = std::move(ended);
  return path;
}

std::shared_ptr<const profiler::TraceData> LiveTrace::trace() {
  std::lock_guard lock(mutex_);
  return ended_;
}

std::string LiveTrace::failure() {
  std::lock_guard lock(mutex_);
  return failure_ ? failure_ : "";
}

profiler::TraceData LiveTrace::take() {
  profiler::TraceData out;
  std::lock_guard lock(mutex_);
  std::swap(out, pending_);
  return out;
}

}  // namespace parascope::profiler
