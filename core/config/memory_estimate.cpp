// Memory estimate. Activation counts follow Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models" (2022): a block keeps about
// B T C (34 + 5 a T / C) bytes at 2 bytes per element, i.e. B T C (17 + 2.5 a T / C) elements;
// selective recompute drops the attention core (the a T / C term), full recompute keeps the
// block input only.
#include "core/config/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/common/error.h"
#include "core/parallel/schedule.h"

namespace parascope {

namespace {

namespace fs = std::filesystem;

// Micro-batches' worth of a whole stage's activations that the busiest rank holds at once: the
// schedule's own promised peak (ScheduleInfo::promisedPeak, in units of one chunk's forward, so
// divided by the chunks per rank); one without a pipeline.
double microBatchesInFlight(const TrainConfig& c) {
  if (!c.pipeline.enabled) return 1;
  const PipelineShape shape{c.parallel.pipeline, c.gradientAccumulation, c.pipeline.chunks};
  const int held = busiestRankPeak(findSchedule(c.pipeline.schedule), shape).held;
  return static_cast<double>(held) / shape.chunks;
}

std::uint32_t gzipStatedSize(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char tail[4] = {0, 0, 0, 0};
  in.seekg(-4, std::ios::end);
  if (!in.read(reinterpret_cast<char*>(tail), 4)) return 0;
  return tail[0] | (tail[1] << 8) | (tail[2] << 16) | (std::uint32_t{tail[3]} << 24);
}

double readMeminfoAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

double readNumber(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stod(text);
  } catch (...) {
    return -1;
  }
}

}  // namespace

double MemoryEstimate::perRankBytes() const {
  double sum = 0;
  for (const MemoryItem& i : items) sum += i.bytes;
  return sum;
}

const MemoryItem& MemoryEstimate::largest() const {
  return *std::max_element(
      items.begin(), items.end(),
      [](const MemoryItem& a, const MemoryItem& b) { return a.bytes < b.bytes; });
}

MemoryEstimate estimateMemory(const TrainConfig& c, double dataBytes, int ranksSharingMemory) {
  const ParallelStrategy& s = c.parallel;
  const ModelCounts n = c.model.kind->counts(c);
  const bool mixed = s.compute != DType::F32;
  const double half = mixed ? 2 : 4, d = s.data;
  const double full = n.parameters * half;
  // Whole buckets around a layer's pass: those of the running layer and the next (prefetched or
  // still reducing), reaching past the two by `extra` buckets; never beyond what the rank holds.
  // A bucket closes once it holds bucketElements, so it can exceed that by a parameter.
  const double bucket = static_cast<double>(s.bucketElements) + n.largestParameter;
  auto buckets = [&](double extra) {
    return std::min(n.parameters, n.adjacentPair + extra * bucket) * half;
  };
  // ZeRO-3 keeps a shard and gathers whole buckets around each layer's forward and backward:
  // the running layer's and the next one's, a bucket past them at either end.
  const double params = s.zeroStage >= 3 ? full / d + buckets(2) : full;
  // ZeRO-2 / 3 keep a gradient shard, plus whole buckets from a layer's backward until their
  // reduce-scatter (as above, and two more in flight). In pipeline programs a stage's gradients
  // accumulate over the step's micro-batches in full-size buckets until the one reduce-scatter.
  const double grads = s.zeroStage < 2      ? full
                       : c.pipeline.enabled ? full + full / d
                                            : full / d + buckets(4);
  // AdamW's m and v in fp32, plus fp32 master weights in mixed precision.
  const double optimizer = n.parameters * (mixed ? 12 : 8) / (s.zeroStage >= 1 ? d : 1);
  const double activations = n.activations * half * microBatchesInFlight(c);
  MemoryEstimate e;
  e.items = {{"parameters", params},
             {"gradients", grads},
             {"optimizer state", optimizer},
             {"activations", activations},
             {"data", dataBytes}};
  e.ranksSharingMemory = std::max(1, ranksSharingMemory);
  return e;
}

double dataBytesInMemory(const DataSpec& data) {
  std::error_code ec;
  double total = 0;
  if (data.kind == DataSpec::Kind::Idx) {
    for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
      const fs::path f = fs::path(data.path) / name;
      if (fs::is_regular_file(f, ec)) total += gzipStatedSize(f);
    }
    return total;
  }
  const fs::file_status st = fs::status(data.path, ec);
  if (ec) return 0;
  if (fs::is_regular_file(st)) return static_cast<double>(fs::file_size(data.path, ec));
  if (!fs::is_directory(st)) return 0;
  for (auto it = fs::recursive_directory_iterator(data.path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code fileEc;
    if (it->is_regular_file(fileEc) && !it->is_symlink(fileEc)) {
      const auto size = it->file_size(fileEc);
      if (!fileEc) total += static_cast<double>(size);
    }
  }
  return total;
}

double availableMemoryBytes() {
  const double meminfo = readMeminfoAvailable();
  const double limit = readNumber("/sys/fs/cgroup/memory.max");
  const double used = readNumber("/sys/fs/cgroup/memory.current");
  const double cgroup = limit >= 0 && used >= 0 ? std::max(0.0, limit - used) : -1;
  if (meminfo < 0) return cgroup;
  if (cgroup < 0) return meminfo;
  return std::min(meminfo, cgroup);
}

std::string formatBytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

void checkMemory(const MemoryEstimate& e, double availableBytes) {
  if (availableBytes < 0 || e.totalBytes() <= availableBytes) return;
  std::string parts;
  for (const MemoryItem& i : e.items) {
    parts += (parts.empty() ? "" : ", ") + i.name + " " + formatBytes(i.bytes);
  }
  const std::string ranks =
      e.ranksSharingMemory > 1
          ? std::to_string(e.ranksSharingMemory) + " ranks x " + formatBytes(e.perRankBytes())
          : "one rank";
  throw UserError("memory: the run needs about " + formatBytes(e.totalBytes()) + " (" + ranks +
                  ": " + parts + "; largest: " + e.largest().name + "), more than the " +
                  formatBytes(availableBytes) +
                  " available; use a smaller model or micro-batch, more ranks, a higher ZeRO "
                  "stage or recompute");
}

}  // namespace parascope
