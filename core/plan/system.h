// A hardware description: what the cost model (cost_model.h) prices a step's instructions with.
// Per device: matrix-product throughput by precision with an efficiency curve over the product's
// smallest side, the bandwidth of element-wise kernels and of the optimizer's update, a fixed
// cost per compute instruction, cores and memory. Per link class (in-process, within a node,
// across nodes): latency and bus bandwidth of the ring and tree algorithms, as nccl-tests
// reports them. One JSON schema, read strictly (every key required, none unknown, none
// negative); docs/planner.md documents each key. `parascope-cli plan calibrate` writes this
// machine's.
#pragma once

#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor/dtype.h"

namespace parascope {

struct MatmulRate {
  double peakFlops = 0;          // flop/s of large products in forward passes
  double backwardPeakFlops = 0;  // and in backward passes (other operand layouts)
  // A product whose smallest side is d runs at peak * d / (d + halfDimension).
  double halfDimension = 0;
  // Seconds per weight element cast between its stored 16-bit value and f32 per pass (mixed
  // precision; 0 for fp32, which casts nothing).
  double castSeconds = 0;
};

enum class LinkClass : std::uint8_t { InProcess, Node, Network };
inline constexpr int kLinkClassCount = 3;
const char* linkClassKey(LinkClass c);  // "in_process", "node", "network"

struct LinkAlgorithm {
  double latency = 0;    // seconds per algorithm step
  double bandwidth = 0;  // bytes/s of bus bandwidth (nccl-tests' busbw)
};

struct LinkDescription {
  LinkAlgorithm ring, tree;
};

struct DeviceDescription {
  // "cpu": every rank of a node is a thread or process sharing `cores` (time-sliced when there
  // are more busy threads than cores); "gpu": one rank per device, communication on its own
  // engines beside compute.
  std::string kind = "cpu";
  // Threads' worth of compute the ranks' busy threads get together (cpu), in units of one thread
  // alone: the cores, or fewer where cores share execution units or memory bandwidth.
  double cores = 1;
  double memoryBytes = 0;  // a cpu node's, shared by its ranks; a gpu device's own
  MatmulRate matmulF32, matmulBF16, matmulF16;
  double elementwiseBandwidth = 0;  // bytes/s
  double optimizerBandwidth = 0;    // bytes/s of the optimizer's update (AdamW: 28 bytes/element)
  double instructionOverhead = 0;   // seconds per compute instruction
  const MatmulRate& matmul(DType compute) const;
  bool sharesCores() const { return kind == "cpu"; }
};

// The disk a node's swap files go to (ZeRO-Infinity's offload_optimizer and offload_param
// "nvme"), shared by the node's ranks: sequential direct I/O, as core/offload/disk_probe.h
// measures it. All zero when the description has no "disk" block; a strategy that swaps is then
// refused by the cost model rather than priced as free.
struct DiskDescription {
  double readBandwidth = 0, writeBandwidth = 0;  // bytes/s
  double swapBandwidth = 0;  // bytes/s read and written together, a chunk read while one is written
  bool described() const { return swapBandwidth > 0; }
};

struct SystemDescription {
  std::string name;
  DeviceDescription device;
  DiskDescription disk;
  int devicesPerNode = 1;  // ranks on one node; every rank of an in-process run is one process
  std::array<LinkDescription, kLinkClassCount> links;
  double stepOverhead = 0;  // seconds per step outside the programs (data loading, loss sums)
  const LinkDescription& link(LinkClass c) const { return links[static_cast<std::size_t>(c)]; }
};

// UserError "system <source>: <key>: ..." for a missing, unknown, mistyped or negative key.
SystemDescription parseSystem(const nlohmann::json& document, const std::string& source);
SystemDescription readSystem(const std::string& path);
// The systems ParaScope ships (resources/systems/<name>.json), with their sources in
// docs/planner.md: "a100-80gb", "h100-80gb".
const std::vector<std::string>& systemPresets();
// A preset by name, else a description file by path. UserError naming the presets when `name`
// is neither.
SystemDescription readSystemNamed(const std::string& name);

// The JSON form, keys in the documented order and units.
nlohmann::ordered_json systemToJson(const SystemDescription& system);

}  // namespace parascope
