// parascope-cli bench switch: live strategy switches and checkpoints of a GPT of about 100M
// parameters (12 layers, width 768) with its optimizer state, in-process. A paused session
// switches back and forth (D4 <-> T2 x P2, ZeRO-0 <-> ZeRO-3) with no step between, so each switch
// is the whole cost: building the new layout and copying the state. Next to each, memcpy of the
// same bytes in the same run; checkpoint save and load next to a plain write (with fsync) and
// read of the same bytes, and the load with its checksum checks against the same load without.
#include "bench/switch.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/common/scratch_directory.h"
#include "core/plan/memory_estimate.h"
#include "core/session/run_summary.h"
#include "core/session/session.h"

namespace parascope::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Collects switch and checkpoint reports and lets the bench wait for the next one.
class Waiter final : public SessionObserver {
 public:
  void onSwitch(const SwitchReport& r) override {
    std::lock_guard lock(mutex_);
    switches_.push_back(r);
    changed_.notify_all();
  }
  void onCheckpoint(const CheckpointReport& r) override {
    std::lock_guard lock(mutex_);
    checkpoints_.push_back(r);
    changed_.notify_all();
  }
  void onError(const ErrorReport& e) override {
    std::lock_guard lock(mutex_);
    error_ = e.reason;
    changed_.notify_all();
  }
  SwitchReport nextSwitch() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return switches_.size() > seenSwitches_ || !error_.empty(); });
    if (!error_.empty()) throw std::runtime_error(error_);
    return switches_[seenSwitches_++];
  }
  CheckpointReport nextCheckpoint() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return checkpoints_.size() > seenCheckpoints_ || !error_.empty(); });
    if (!error_.empty()) throw std::runtime_error(error_);
    return checkpoints_[seenCheckpoints_++];
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<SwitchReport> switches_;
  std::vector<CheckpointReport> checkpoints_;
  std::size_t seenSwitches_ = 0, seenCheckpoints_ = 0;
  std::string error_;
};

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Best of three memcpy passes over `bytes`, in seconds. fresh: into newly allocated memory each
// time, page faults included, as a switch's new layout is; else into memory touched before.
double memcpySeconds(std::int64_t bytes, bool fresh) {
  const auto n = static_cast<std::size_t>(bytes);
  std::vector<char> from(n, 1);
  std::vector<char> touched(fresh ? 0 : n, 0);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const std::unique_ptr<char[]> untouched(fresh ? new char[n] : nullptr);
    char* to = fresh ? untouched.get() : touched.data();
    const auto start = Clock::now();
    std::memcpy(to, from.data(), n);
    // The destination is never read: without this the compiler may drop the copy (Clang does).
    asm volatile("" : : "r"(to) : "memory");
    best = std::min(best, secondsSince(start));
  }
  return best;
}

// A plain sequential write of `bytes` to one file with fsync, then reading it back; seconds each.
std::pair<double, double> diskSeconds(const std::string& path, std::int64_t bytes) {
  std::vector<char> block(std::size_t{8} << 20, 7);
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw UserError("bench switch: cannot write " + path + ": " + std::strerror(errno));
  for (std::int64_t left = bytes; left > 0;) {
    const auto n = static_cast<std::size_t>(std::min<std::int64_t>(left, block.size()));
    if (::write(fd, block.data(), n) != static_cast<ssize_t>(n)) {
      ::close(fd);
      throw std::runtime_error("bench switch: writing " + path + " failed");
    }
    left -= static_cast<std::int64_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  const double write = secondsSince(start);
  const auto readStart = Clock::now();
  const int in = ::open(path.c_str(), O_RDONLY);
  while (::read(in, block.data(), block.size()) > 0) {
  }
  ::close(in);
  const double read = secondsSince(readStart);
  return {write, read};
}

void print(bool json, const nlohmann::json& row, const std::string& text) {
  if (json) {
    std::printf("%s\n", row.dump().c_str());
  } else {
    std::printf("%s\n", text.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

void runBenchSwitch(const BenchSwitchOptions& o) {
  // Made before any work, so a bad --dir is refused at once; removed with what is in it.
  const ScratchDirectory scratch(o.dir, "parascope-bench-switch", "bench switch --dir");
  nlohmann::json base = readJsonFile(o.config);
  // About 100M parameters: 12 layers of width 768 (85M in the blocks), byte vocabulary.
  for (const char* a :
       {"model.num_layers=12", "model.hidden_size=768", "model.num_attention_heads=12",
        "model.context_length=64", "train_batch_size=8", "train_micro_batch_size_per_gpu=1",
        "train_iters=1000", "eval_interval=0"}) {
    applyOverride(base, a);
  }
  base.erase("gradient_accumulation_steps");
  for (const std::string& a : o.overrides) applyOverride(base, a);
  auto layout = [&](const std::vector<std::string>& keys) {
    nlohmann::json doc = base;
    for (const std::string& k : keys) applyOverride(doc, k);
    return parseTrainConfig(doc);
  };
  const TrainConfig d4 = layout({"data_parallel_size=4"});
  const TrainConfig t2p2 = layout({"tensor_model_parallel_size=2", "pipeline_model_parallel_size=2",
                                   "train_micro_batch_size_per_gpu=2"});
  const TrainConfig d4z3 = layout({"data_parallel_size=4", "zero_optimization.stage=3"});

  SessionOptions options;
  options.evaluate = false;
  Session session(d4, options);
  Waiter waiter;
  session.addObserver(waiter);
  session.start(/*paused=*/true);

  const std::int64_t parameters = [&] {
    std::int64_t n = 0;
    for (const LogicalTensor& t : logicalTensors(d4)) n += shapeNumel(t.shape);
    return n;
  }();
  if (!o.json) {
    std::printf("bench switch: GPT %.1fM parameters, f32 + AdamW state (%s), in-process\n",
                static_cast<double>(parameters) / 1e6,
                formatBytes(static_cast<double>(parameters) * 12).c_str());
    std::printf(
        "memcpy: of the same bytes in this run, into new memory (page faults included, as\n"
        "the new layout's memory is) and into memory touched before; ratio: to new memory;\n"
        "reused: the new layout's bytes on pages an old layout gave back (not faulted in)\n");
    std::printf("%-36s %8s %10s %10s %6s %10s %11s %6s %9s\n", "switch", "ms", "moved", "reused",
                "GB/s", "memcpy new", "memcpy warm", "ratio", "s/100M p");
  }
  const std::vector<std::pair<TrainConfig, TrainConfig>> pairs = {{d4, t2p2}, {d4, d4z3}};
  const TrainConfig* now = &d4;
  for (const auto& [a, b] : pairs) {
    for (int round = 0; round < o.rounds; ++round) {
      for (const TrainConfig* target : {&b, &a}) {
        if (target == now) continue;
        session.switchStrategy(*target);
        const SwitchReport r = waiter.nextSwitch();
        now = target;
        const double seconds = r.milliseconds / 1e3;
        const double gbps = static_cast<double>(r.bytesMoved) / seconds / 1e9;
        const double fresh =
            static_cast<double>(r.bytesMoved) / memcpySeconds(r.bytesMoved, true) / 1e9;
        const double warm =
            static_cast<double>(r.bytesMoved) / memcpySeconds(r.bytesMoved, false) / 1e9;
        const double per100M = seconds * 1e8 / static_cast<double>(parameters);
        char text[256];
        std::snprintf(text, sizeof text, "%-36s %8.1f %10s %10s %6.2f %10.2f %11.2f %5.0f%% %9.2f",
                      (r.before + " -> " + r.after).c_str(), r.milliseconds,
                      formatBytes(static_cast<double>(r.bytesMoved)).c_str(),
                      formatBytes(static_cast<double>(r.bytesReused)).c_str(), gbps, fresh, warm,
                      100 * gbps / fresh, per100M);
        print(o.json,
              {{"event", "switch"},
               {"before", r.before},
               {"after", r.after},
               {"world_before", r.worldBefore},
               {"world_after", r.worldAfter},
               {"switch_ms", r.milliseconds},
               {"bytes_moved", r.bytesMoved},
               {"bytes_reused", r.bytesReused},
               {"seconds_per_100m_parameters", per100M},
               {"effective_gb_per_s", gbps},
               {"memcpy_new_memory_gb_per_s", fresh},
               {"memcpy_warm_memory_gb_per_s", warm},
               {"ratio_to_memcpy_new_memory", gbps / fresh}},
              text);
      }
    }
  }

  // Checkpoints of the layout running now, against plain sequential I/O of the same bytes.
  const std::string dir = scratch.path() + "/checkpoint";
  session.saveCheckpoint(dir);
  const CheckpointReport saved = waiter.nextCheckpoint();
  session.stop();
  session.wait();
  // Each load into a new session (new memory, as a restart has), with and without checking
  // every byte against the checksums, alternated; the fastest of `rounds` of each.
  const auto load = [&](bool verify) {
    SessionOptions loading = options;
    loading.load = saved.path;
    loading.verifyLoad = verify;
    Session again(d4z3, loading);
    Waiter loadWaiter;
    again.addObserver(loadWaiter);
    again.start(/*paused=*/true);
    const CheckpointReport r = loadWaiter.nextCheckpoint();
    again.stop();
    again.wait();
    return r;
  };
  CheckpointReport loaded, unchecked;
  for (int round = 0; round < o.rounds; ++round) {
    const CheckpointReport u = load(false), c = load(true);
    if (round == 0 || u.milliseconds < unchecked.milliseconds) unchecked = u;
    if (round == 0 || c.milliseconds < loaded.milliseconds) loaded = c;
  }
  const auto [writeSeconds, readSeconds] = diskSeconds(scratch.path() + "/plain.bin", saved.bytes);
  for (const auto& [r, plain, what] :
       {std::tuple{saved, writeSeconds, "save"}, std::tuple{loaded, readSeconds, "load"}}) {
    const double gbps = static_cast<double>(r.bytes) / (r.milliseconds / 1e3) / 1e9;
    const double plainGbps = static_cast<double>(saved.bytes) / plain / 1e9;
    char text[256];
    std::snprintf(
        text, sizeof text, "checkpoint %-17s %10.1f %12s %10.2f %12.2f %7.0f%%  (vs plain %s)",
        what, r.milliseconds, formatBytes(static_cast<double>(r.bytes)).c_str(), gbps, plainGbps,
        100 * gbps / plainGbps, std::string(what) == "save" ? "write + fsync" : "read");
    print(o.json,
          {{"event", std::string("checkpoint_") + what},
           {"checkpoint_ms", r.milliseconds},
           {"bytes", r.bytes},
           {"effective_gb_per_s", gbps},
           {"plain_io_gb_per_s", plainGbps},
           {"ratio_to_plain_io", gbps / plainGbps}},
          text);
  }
  const double share = loaded.milliseconds / unchecked.milliseconds - 1;
  char text[256];
  std::snprintf(
      text, sizeof text,
      "checkpoint load, checks off %10.1f ms; checking every slice's CRC-32 costs %+.1f%% "
      "of the load",
      unchecked.milliseconds, 100 * share);
  print(o.json,
        {{"event", "checkpoint_load_check"},
         {"checked_ms", loaded.milliseconds},
         {"unchecked_ms", unchecked.milliseconds},
         {"bytes", loaded.bytes},
         {"check_share_of_load", share}},
        text);
}

}  // namespace parascope::bench
