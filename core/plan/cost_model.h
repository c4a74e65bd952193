// What each instruction of a planned step costs on a described system (system.h): compute
// instructions from the model kind's per-layer work (matrix products on the efficiency curve,
// element-wise bytes at the device's bandwidth, a fixed cost, and the tensor-parallel
// collectives the layers issue inside them), transfers and collectives from the link class their
// group spans (ring or tree, whichever is faster, with nccl-tests' bus-bandwidth factors), the
// optimizer step from the elements this rank updates. Calibration (calibrate.h) fits the same
// features, so the model it fits is the one that prices.
#pragma once

#include <vector>

#include "core/comm/comm_types.h"
#include "core/plan/strategy_plan.h"
#include "core/plan/system.h"

namespace parascope {

// A compute instruction's terms, linear in the device's parameters.
struct ComputeFeatures {
  double forwardFlops = 0;        // matrix products of forward passes (recompute's too)
  double backwardFlops = 0;       // and of backward passes
  double flopsOverDimension = 0;  // sum of each product's flops / its smallest side
  double bytes = 0;               // element-wise kernels
  // Weight elements cast between the 16-bit stored values and f32 (widened for a pass, gradients
  // rounded back): mixed precision's per-pass cost; fp32 descriptions price it at 0.
  double castElements = 0;
  // Of the products above, the attention core's: what the context group's exchange hides
  // behind (ring attention overlaps each step's transfer with a block's products).
  double attentionForwardFlops = 0, attentionBackwardFlops = 0, attentionFlopsOverDimension = 0;
  double flops() const { return forwardFlops + backwardFlops; }
  struct Collective {
    CommOp op;
    double bytes;          // message size (nccl-tests)
    bool context = false;  // over the context group, else the tensor group
  };
  std::vector<Collective> collectives;
};

// A compute instruction's own time on `device` in `compute` precision, its collectives aside.
double kernelSeconds(const DeviceDescription& device, DType compute, const ComputeFeatures& f);

// A data-parallel collective a program instruction issues (asynchronous, on the rank's
// communication thread).
struct IssuedCollective {
  CommOp op = CommOp::AllReduce;
  double bytes = 0;  // message size (nccl-tests)
  double seconds = 0;
};

class CostModel {
 public:
  // UserError when the strategy swaps to a disk (offload_optimizer or offload_param "nvme") and
  // the system describes none: that time cannot be priced as nothing.
  CostModel(const SystemDescription& system, const StrategyPlan& plan);
  virtual ~CostModel() = default;

  ComputeFeatures features(const RankPlan& rank, const Instruction& in) const;
  // The simulator asks through the four virtual members, which tests replace with the unit
  // durations of the schedules' papers.
  // Seconds of a compute instruction alone on a core (or device), collectives included: the
  // tensor group's in full, the context group's where they outlast the attention core's products.
  virtual double computeSeconds(const RankPlan& rank, const Instruction& in) const;
  double computeSeconds(const ComputeFeatures& f) const;
  // From a send to its message being there (SendActivation / SendGrad: the stage boundary).
  virtual double transferSeconds() const;
  // ReduceGradBucket, ZeroScatter, ZeroGather: the collective they issue (a gather of swapped
  // parameters first reads the rank's parts from its swap file).
  virtual IssuedCollective dataParallel(const RankPlan& rank, const Instruction& in) const;
  // The OptStep's own work on `rank`: the tied embedding's exchange, the gradient norm's sums,
  // the update, ZeRO-1/2's gather of the updated parameters. Swapped to a disk, the update reads
  // and writes back the swap files as it goes, and takes as long as the slower of the two.
  virtual double optimizerSeconds(const RankPlan& rank) const;
  // One collective of message size `bytes` over `size` ranks spaced `stride` world ranks apart.
  double collectiveSeconds(CommOp op, double bytes, int size, int stride) const;
  // A rank's reads and writes of its swap files, while every rank of its node does the same on
  // the node's one disk: `bytes` read alone, or read and written back together (`writeBack`).
  double diskSeconds(double bytes, bool writeBack) const;

  const SystemDescription& system() const { return system_; }

 private:
  SystemDescription system_;
  const StrategyPlan& plan_;
  double activationBytes_;  // activationElementBytes
};

// Bytes of an activation element, which element-wise kernels, tensor-parallel collectives and
// stage boundaries move: 4 on a CPU (its engine computes activations in f32 under mixed
// precision, storing only what layers keep in the compute type), the compute type's on a GPU (in
// bf16 or fp16, as Megatron-LM does).
double activationElementBytes(const DeviceDescription& device, DType compute);

// The link a group of `size` ranks `stride` world ranks apart uses: in-process for the threads
// backend on a CPU, else the node's while the group spans no more than a node, else the network.
LinkClass linkClassOf(const SystemDescription& system, RankBackend backend, int size, int stride);

// One collective of message size `bytes` over that group on `linkClass` (docs/planner.md).
double linkSeconds(const SystemDescription& system, LinkClass linkClass, CommOp op, double bytes,
                   int size, int stride);

}  // namespace parascope
