// What a run will need in memory, per rank, before anything is allocated: parameters, gradients,
// optimizer state (AdamW's two moments and, in mixed precision, fp32 master weights, each
// sharded by the ZeRO stage), activations from the layout (micro-batch, context, width and the
// layers a pipeline stage holds, times the micro-batches its schedule keeps in flight), and the
// training data. A pure function of the config and the data's size, so the CLI's check and the
// workbench's strategy panel show the same numbers. An estimate: it ignores kernel workspaces
// and allocator slack, so it errs low, and a refusal is never a false alarm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace parascope {

struct MemoryItem {
  std::string name;  // "parameters", "gradients", "optimizer state", "activations", "data"
  double bytes = 0;  // per rank; double, so that absurd settings never overflow
};

struct MemoryEstimate {
  std::vector<MemoryItem> items;  // per rank, in the order above
  int ranksSharingMemory = 1;     // ranks of this job in one machine's memory
  double perRankBytes() const;
  double totalBytes() const { return perRankBytes() * ranksSharingMemory; }
  const MemoryItem& largest() const;
};

// `dataBytes`: what the data set holds in memory once loaded (dataBytesInMemory).
// `ranksSharingMemory`: threads backend, the world size; under mpirun, the ranks on this node.
MemoryEstimate estimateMemory(const TrainConfig& c, double dataBytes, int ranksSharingMemory);

// The data set's size in memory once loaded, from file sizes (text: the files under data.path;
// IDX: the sizes the gzip trailers state). 0 when the path cannot be read (loading then fails
// with its own message).
double dataBytesInMemory(const DataSpec& data);

// Memory this process may still use: the smaller of the kernel's MemAvailable and the control
// group's limit minus its usage; a negative value when neither is known.
double availableMemoryBytes();

// UserError "memory: the run needs about ... (largest: ...), more than the ... available; ..."
// when the estimate exceeds `availableBytes` (ignored when negative).
void checkMemory(const MemoryEstimate& estimate, double availableBytes);

// "1.5 GiB", "640 KiB", for messages and the strategy panel.
std::string formatBytes(double bytes);

}  // namespace parascope
