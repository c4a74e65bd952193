// Instruction costs. Backward runs, for each forward product, one product on the input side and
// (for a weight) one for the weight's gradient, each with the forward's FLOPs; its element-wise
// kernels touch about twice the forward's bytes; its collectives are the forward's adjoints, of
// the same size. Recompute adds the forward (full) or the attention core (selective) to the
// backward that needs it.
#include "core/plan/cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/comm/adjoint.h"
#include "core/comm/collective_traits.h"
#include "core/common/error.h"
#include "core/offload/optimizer_swap.h"
#include "core/train/param_gatherer.h"

namespace parascope {

namespace {

double storageBytes(DType compute) {
  return compute == DType::F32 ? 4.0 : 2.0;
}

void addProduct(ComputeFeatures& f, const Gemm& g, bool backward) {
  const double flops = g.flops();
  const double perDimension = flops / std::max(1.0, std::min({g.m, g.n, g.k}));
  (backward ? f.backwardFlops : f.forwardFlops) += flops;
  f.flopsOverDimension += perDimension;
  if (g.weight) return;
  (backward ? f.attentionBackwardFlops : f.attentionForwardFlops) += flops;
  f.attentionFlopsOverDimension += perDimension;
}

// `scale`: the activation element's size over the 4 bytes LayerWork counts.
void addForward(ComputeFeatures& f, const LayerWork& w, bool attentionCoreOnly, double scale) {
  for (const Gemm& g : w.gemms) {
    if (!attentionCoreOnly || !g.weight) addProduct(f, g, false);
  }
  f.bytes += scale * (attentionCoreOnly ? w.recomputedBytes : w.elementwiseBytes);
  if (attentionCoreOnly) return;
  for (const LayerCollective& c : w.collectives)
    f.collectives.push_back({c.op, 4 * scale * c.elements, c.context});
}

}  // namespace

CostModel::CostModel(const SystemDescription& system, const StrategyPlan& plan)
    : system_(system),
      plan_(plan),
      activationBytes_(activationElementBytes(system.device, plan.config.parallel.compute)) {
  const ParallelStrategy& s = plan.config.parallel;
  if ((s.swapsOptimizer() || s.swapsParameters()) && !system.disk.described()) {
    throw UserError("system " + system.name +
                    " describes no disk, and this strategy swaps to one (zero_optimization." +
                    (s.swapsOptimizer() ? "offload_optimizer" : "offload_param") +
                    ".device \"nvme\"): add \"disk\": {\"read_GBps\", \"write_GBps\", "
                    "\"read_write_GBps\"} to the system file, or calibrate this machine (plan "
                    "calibrate)");
  }
}

ComputeFeatures CostModel::features(const RankPlan& rank, const Instruction& in) const {
  ComputeFeatures f;
  const LayerRange range = rank.chunks.at(static_cast<std::size_t>(in.chunk));
  const Recompute recompute = plan_.config.pipeline.recompute;
  const bool sequenceParallel = plan_.config.parallel.sequenceParallel;
  const double scale = activationBytes_ / 4;
  // The rank's own model holds its chunks' layers back to back.
  int local = 0;
  for (int c = 0; c < in.chunk; ++c) {
    const LayerRange& before = rank.chunks[static_cast<std::size_t>(c)];
    local += before.end - before.begin;
  }
  for (int l = range.begin; l < range.end; ++l, ++local) {
    const LayerWork& w = plan_.layers[static_cast<std::size_t>(l)];
    const auto weights =
        static_cast<double>(rank.modelLayers.at(static_cast<std::size_t>(local)).parameterElements);
    if (in.op == Op::Forward) {
      addForward(f, w, false, scale);
      f.castElements += weights;
      continue;
    }
    const bool inputSide = in.op != Op::BackwardWeight;
    const bool weightSide = in.op != Op::BackwardInput;
    if (inputSide && recompute != Recompute::None) {
      addForward(f, w, recompute == Recompute::Selective, scale);
      if (recompute == Recompute::Full) f.castElements += weights;
    }
    // Widened for the input gradient, rounded into the stored gradient by the weight gradient.
    f.castElements += (inputSide ? weights : 0) + (weightSide ? weights : 0);
    for (const Gemm& g : w.gemms) {
      if (inputSide) addProduct(f, g, true);
      // A weight's second product is its gradient; the attention core's is on the input side.
      if (g.weight ? weightSide : inputSide) addProduct(f, g, true);
    }
    if (inputSide) f.bytes += 2 * scale * w.elementwiseBytes;
    for (const LayerCollective& c : w.collectives) {
      const double bytes = activationBytes_ * c.elements;
      // Input side: the adjoint of each forward collective; ring attention's backward passes
      // the keys and values round again besides reducing their gradients. Weight side under
      // sequence parallelism: the gathered inputs of the column-parallel products again.
      if (inputSide) {
        if (c.context) f.collectives.push_back({c.op, bytes, true});
        f.collectives.push_back({adjointOf(c.op), bytes, c.context});
      }
      if (weightSide && !inputSide && sequenceParallel && !c.context && c.op == CommOp::AllGather)
        f.collectives.push_back({c.op, bytes});
    }
  }
  return f;
}

double kernelSeconds(const DeviceDescription& d, DType compute, const ComputeFeatures& f) {
  const MatmulRate& m = d.matmul(compute);
  return f.forwardFlops / m.peakFlops + f.backwardFlops / m.backwardPeakFlops +
         f.flopsOverDimension * m.halfDimension / m.peakFlops + f.castElements * m.castSeconds +
         f.bytes / d.elementwiseBandwidth + d.instructionOverhead;
}

double CostModel::computeSeconds(const ComputeFeatures& f) const {
  const ParallelStrategy& s = plan_.config.parallel;
  double seconds = kernelSeconds(system_.device, s.compute, f);
  // The tensor group is consecutive world ranks; the context group's are the tensor size apart.
  double ring = 0;
  for (const ComputeFeatures::Collective& c : f.collectives) {
    if (c.context)
      ring += collectiveSeconds(c.op, c.bytes, s.context, s.tensor);
    else
      seconds += collectiveSeconds(c.op, c.bytes, s.tensor, 1);
  }
  if (ring > 0) {
    const MatmulRate& m = system_.device.matmul(s.compute);
    const double core = f.attentionForwardFlops / m.peakFlops +
                        f.attentionBackwardFlops / m.backwardPeakFlops +
                        f.attentionFlopsOverDimension * m.halfDimension / m.peakFlops;
    seconds += std::max(0.0, ring - core);
  }
  return seconds;
}

double CostModel::computeSeconds(const RankPlan& rank, const Instruction& in) const {
  return computeSeconds(features(rank, in));
}

double CostModel::transferSeconds() const {
  const ParallelStrategy& s = plan_.config.parallel;
  return collectiveSeconds(CommOp::Send, activationBytes_ * plan_.boundaryElements, 2,
                           s.ranksPerPipelineRank());
}

IssuedCollective CostModel::dataParallel(const RankPlan& rank, const Instruction& in) const {
  const ParallelStrategy& s = plan_.config.parallel;
  IssuedCollective c;
  if (in.op == Op::ZeroGather) {
    c.op = CommOp::AllGather;
    double elements = 0;
    for (int b : rank.chunkBuckets.at(static_cast<std::size_t>(in.chunk)))
      elements += static_cast<double>(rank.bucketElements.at(static_cast<std::size_t>(b)));
    c.bytes = elements * storageBytes(s.compute);
    if (s.swapsParameters()) {
      const ParameterSwapLayout layout = parameterSwapLayout(rank.layout, s.compute, s);
      double read = 0;
      for (int b : rank.chunkBuckets.at(static_cast<std::size_t>(in.chunk)))
        read += static_cast<double>(layout.recordBytes(b));
      c.seconds = diskSeconds(read, false);
    }
  } else {
    c.op = in.op == Op::ZeroScatter ? CommOp::ReduceScatter : CommOp::AllReduce;
    c.bytes = static_cast<double>(rank.bucketElements.at(static_cast<std::size_t>(in.bucket))) *
              static_cast<double>(dtypeSize(s.gradComm));
  }
  c.seconds += collectiveSeconds(c.op, c.bytes, s.gradientGroup(), s.tensor);
  return c;
}

double CostModel::optimizerSeconds(const RankPlan& rank) const {
  const ParallelStrategy& s = plan_.config.parallel;
  const double stored = storageBytes(s.compute);
  const int group = s.gradientGroup();
  const double updated = s.zeroStage >= 1 ? static_cast<double>(rank.flatElements) / group
                                          : static_cast<double>(rank.parameterElements);
  // AdamW reads the parameter (or its f32 master), the gradient and both moments and writes
  // them back: 28 bytes per element, as the optimizer's bandwidth is measured.
  double seconds = updated * 28 / system_.device.optimizerBandwidth;
  // Swapped, the sweep reads each record while the one before is written back: the update runs
  // at the slower of its arithmetic and the disk.
  double swapped = 0;
  if (s.swapsOptimizer()) {
    swapped += static_cast<double>(
        optimizerSwapLayout(rank.layout.shardSize(), s.compute != DType::F32, s).fileBytes());
  }
  if (s.swapsParameters())
    swapped += static_cast<double>(parameterSwapLayout(rank.layout, s.compute, s).fileBytes());
  if (swapped > 0) seconds = std::max(seconds, diskSeconds(2 * swapped, true));
  if (s.zeroStage == 1 || s.zeroStage == 2)
    seconds += collectiveSeconds(CommOp::AllGather, static_cast<double>(rank.flatElements) * stored,
                                 group, s.tensor);
  const int pipelineStride = s.ranksPerPipelineRank();
  if (rank.tiedEmbeddingElements > 0) {
    const double bytes = static_cast<double>(rank.tiedEmbeddingElements) * stored;
    seconds += collectiveSeconds(CommOp::Send, bytes, 2, pipelineStride);
    if (s.zeroStage >= 2) seconds += collectiveSeconds(CommOp::AllReduce, bytes, group, s.tensor);
  }
  // The gradient norm's and the overflow check's sums: one value each over the groups.
  seconds += collectiveSeconds(CommOp::AllReduce, 8, group, s.tensor) +
             collectiveSeconds(CommOp::AllReduce, 8, s.tensor, 1) +
             collectiveSeconds(CommOp::AllReduce, 8, s.pipeline, pipelineStride);
  return seconds;
}

LinkClass linkClassOf(const SystemDescription& system, RankBackend backend, int size, int stride) {
  if (backend == RankBackend::Threads && system.device.sharesCores()) return LinkClass::InProcess;
  const long span = static_cast<long>(stride) * (size - 1) + 1;
  return span <= system.devicesPerNode ? LinkClass::Node : LinkClass::Network;
}

double linkSeconds(const SystemDescription& system, LinkClass linkClass, CommOp op, double bytes,
                   int size, int stride) {
  if (size <= 1) return 0;
  LinkDescription link = system.link(linkClass);
  if (op == CommOp::Send || op == CommOp::Recv)
    return link.ring.latency + bytes / link.ring.bandwidth;
  if (linkClass == LinkClass::Network) {
    // The network figures are one device's (its own NIC). NCCL runs a ring or tree through each
    // NIC of a node the group has a rank behind, so k ranks per node move k times the bytes, up to
    // what the node's links carry.
    const int perNode = std::clamp(system.devicesPerNode / std::max(1, stride), 1, size);
    const LinkDescription& node = system.link(LinkClass::Node);
    link.ring.bandwidth = std::min(node.ring.bandwidth, perNode * link.ring.bandwidth);
    link.tree.bandwidth = std::min(node.tree.bandwidth, perNode * link.tree.bandwidth);
  }
  const double n = size;
  const double moved = bytes * commTraits(op).busFactor(size);
  const double ringSteps = op == CommOp::AllReduce ? 2 * (n - 1) : n - 1;
  const double ring = ringSteps * link.ring.latency + moved / link.ring.bandwidth;
  if (op != CommOp::AllReduce) return ring;
  const double tree = 2 * std::ceil(std::log2(n)) * link.tree.latency + moved / link.tree.bandwidth;
  return std::min(ring, tree);
}

double CostModel::collectiveSeconds(CommOp op, double bytes, int size, int stride) const {
  return linkSeconds(system_, linkClassOf(system_, plan_.config.parallel.backend, size, stride), op,
                     bytes, size, stride);
}

double CostModel::diskSeconds(double bytes, bool writeBack) const {
  const ParallelStrategy& s = plan_.config.parallel;
  const int world = s.worldSize();
  const int sharing = linkClassOf(system_, s.backend, world, 1) == LinkClass::InProcess
                          ? world
                          : std::clamp(system_.devicesPerNode, 1, world);
  const DiskDescription& disk = system_.disk;
  return bytes * sharing / (writeBack ? disk.swapBandwidth : disk.readBandwidth);
}

double activationElementBytes(const DeviceDescription& device, DType compute) {
  return device.sharesCores() ? 4.0 : storageBytes(compute);
}

}  // namespace parascope
