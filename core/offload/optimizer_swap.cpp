#include "core/offload/optimizer_swap.h"

#include <algorithm>
#include <vector>

namespace parascope {

int SwapLayout::groups() const {
  return elements == 0 ? 0 : static_cast<int>((elements + groupElements - 1) / groupElements);
}

std::int64_t SwapLayout::groupCount(int g) const {
  return std::min(groupElements, elements - groupBegin(g));
}

std::int64_t SwapLayout::arrayBytes() const {
  return AioFile::aligned(groupElements * static_cast<std::int64_t>(sizeof(float)));
}

std::int64_t SwapLayout::recordBytes() const {
  return arrayBytes() * arrays;
}

std::int64_t SwapLayout::fileBytes() const {
  return recordBytes() * groups();
}

int SwapLayout::buffers() const {
  return std::min(bufferCount, groups());
}

std::int64_t SwapLayout::memoryBytes() const {
  return groups() == 0 ? 0 : recordBytes() * buffers() + AioFile::kAlignment;
}

SwapLayout optimizerSwapLayout(std::int64_t shardElements, bool mixed, const ParallelStrategy& s) {
  SwapLayout l;
  l.elements = shardElements;
  l.groupElements = std::max<std::int64_t>(1, std::min(s.subGroupElements, shardElements));
  l.arrays = mixed ? 3 : 2;
  l.bufferCount = s.offloadOptimizer.bufferCount;
  return l;
}

OptimizerSwap::OptimizerSwap(const SwapLayout& layout, const ParallelStrategy& s,
                             Allocator& allocator)
    : layout_(layout),
      // One block for every buffer: AlignedBuffer adds the page that aligns it, as memoryBytes
      // counts.
      swap_(s.offloadOptimizer, "zero_optimization.offload_optimizer.nvme_path", layout.fileBytes(),
            layout.groups() > 0 ? layout.memoryBytes() - AioFile::kAlignment : 0, s.aio,
            {"optimizer swap read", "optimizer swap write"}, allocator,
            MemoryCategory::OptimizerState) {}

void OptimizerSwap::prefetch() {
  if (!prefetched_.empty()) return;
  const int first = std::min(layout_.ahead(), layout_.groups() - 1);
  const std::int64_t record = layout_.recordBytes();
  for (int g = 0; g <= first; ++g)
    prefetched_.push_back(swap_.file().read(swap_.buffers() + record * g, record, record * g));
}

void OptimizerSwap::forEach(Mode mode, const std::function<void(const Group&)>& fn) {
  const int groups = layout_.groups();
  const int buffers = layout_.buffers();
  if (groups == 0) return;
  const int ahead = layout_.ahead();
  const std::int64_t record = layout_.recordBytes();
  auto buffer = [&](int g) { return swap_.buffers() + record * (g % buffers); };
  std::vector<AioFile::Ticket> pending(static_cast<std::size_t>(buffers), 0);  // per buffer
  auto settle = [&](int g) {
    AioFile::Ticket& t = pending[static_cast<std::size_t>(g % buffers)];
    if (t != 0) swap_.file().wait(t);
    t = 0;
  };
  int issued = 0;  // sub-groups whose read has been started
  // A prefetch's reads are this pass's first; a pass that reads nothing only lets them finish.
  for (std::size_t g = 0; g < prefetched_.size(); ++g) pending[g] = prefetched_[g];
  if (mode == Mode::Write) {
    for (int g = 0; g < static_cast<int>(prefetched_.size()); ++g) settle(g);
  } else {
    issued = static_cast<int>(prefetched_.size());
  }
  prefetched_.clear();
  auto readUpTo = [&](int last) {
    for (; issued <= std::min(last, groups - 1); ++issued) {
      settle(issued);
      if (mode != Mode::Write) {
        pending[static_cast<std::size_t>(issued % buffers)] =
            swap_.file().read(buffer(issued), record, record * issued);
      }
    }
  };
  const std::int64_t array = layout_.arrayBytes() / static_cast<std::int64_t>(sizeof(float));
  for (int g = 0; g < groups; ++g) {
    readUpTo(g + ahead);
    settle(g);
    auto* base = reinterpret_cast<float*>(buffer(g));
    Group group;
    group.index = g;
    group.begin = layout_.groupBegin(g);
    group.count = layout_.groupCount(g);
    int at = 0;
    if (layout_.arrays == 3) group.master = base + array * at++;
    group.m = base + array * at++;
    group.v = base + array * at;
    fn(group);
    if (mode != Mode::Read) {
      pending[static_cast<std::size_t>(g % buffers)] =
          swap_.file().write(buffer(g), record, record * g);
    }
  }
  swap_.file().waitAll();
}

}  // namespace parascope
