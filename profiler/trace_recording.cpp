// TraceRecording: the drain thread wakes every 250 ms, moves what the tracer holds into the
// accumulated trace and goes back to sleep; finish() stops it, uninstalls the tracer (no
// thread records into it afterwards), drains the rest and exports.
#include "profiler/trace_recording.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/common/error.h"

#include "profiler/io/chrome_export.h"

namespace parascope::profiler {

namespace {
constexpr std::chrono::milliseconds kDrainInterval{250};
}  // namespace

namespace {
// Checked before the run starts, so that a typo costs seconds, not a whole run.
void checkWritable(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0) {
    throw UserError("trace file '" + path + "': directory '" + dir.string() +
                    "' does not exist or is not writable");
  }
}
}  // namespace

TraceRecording::TraceRecording(std::string path, int worldSize, std::unique_ptr<ActivitySource> gpu,
                               std::int32_t rank)
    : path_(std::move(path)) {
  checkWritable(path_);
  tracer_.setWorldSize(worldSize);
  tracer_.install();
  if (gpu) {
    cupti_ = std::make_unique<CuptiCollector>(tracer_, std::move(gpu), rank);
    cupti_->start();
  }
  drainer_ = std::thread([this] { drainLoop(); });
}

TraceRecording::~TraceRecording() {
  stop();
}

void TraceRecording::setRunConfig(std::string config) {
  const std::lock_guard lock(mutex_);
  data_.runConfig = std::move(config);
}

void TraceRecording::setClockOffset(const ClockOffset& offset) {
  tracer_.setClockOffset(offset.offsetNs, offset.worldResidualNs);
}

void TraceRecording::drainLoop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kDrainInterval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    if (cupti_) cupti_->flush();
    TraceData part = tracer_.drain();
    lock.lock();
    data_.merge(part);
  }
}

void TraceRecording::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (drainer_.joinable()) drainer_.join();
  if (cupti_) cupti_->stop();
  tracer_.uninstall();
}

std::string TraceRecording::finish(std::int32_t rank) {
  stop();
  data_.merge(tracer_.drain());
  data_.sortByTime();
  if (const std::uint64_t lost = tracer_.dropped()) {
    std::fprintf(stderr,
                 "profiler: %llu events were dropped (a thread reached the tracer's limit of "
                 "events); the trace is incomplete\n",
                 static_cast<unsigned long long>(lost));
  }
  if (rank < 0) {
    exportChromeTrace(data_, path_);
    return path_;
  }
  const std::string path = perRankPath(path_, rank);
  exportChromeTrace(data_, path);
  return path;
}

}  // namespace parascope::profiler
