#include "core/offload/parameter_swap.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace parascope {

std::int64_t ParameterSwapLayout::recordBytes(int b) const {
  return AioFile::aligned(partElements[static_cast<std::size_t>(b)] * elementBytes);
}

std::int64_t ParameterSwapLayout::recordOffset(int b) const {
  std::int64_t at = 0;
  for (int i = 0; i < b; ++i) at += recordBytes(i);
  return at;
}

std::int64_t ParameterSwapLayout::largestRecordBytes() const {
  std::int64_t most = 0;
  for (int b = 0; b < records(); ++b) most = std::max(most, recordBytes(b));
  return most;
}

std::int64_t ParameterSwapLayout::fileBytes() const {
  return recordOffset(records());
}

int ParameterSwapLayout::buffers() const {
  return std::min(bufferCount, records());
}

std::int64_t ParameterSwapLayout::memoryBytes() const {
  return records() == 0 ? 0 : largestRecordBytes() * buffers() + AioFile::kAlignment;
}

ParameterSwap::ParameterSwap(ParameterSwapLayout layout, const ParallelStrategy& s,
                             Allocator& allocator)
    : layout_(std::move(layout)),
      swap_(s.offloadParam, "zero_optimization.offload_param.nvme_path", layout_.fileBytes(),
            layout_.records() > 0 ? layout_.memoryBytes() - AioFile::kAlignment : 0, s.aio,
            {"parameter swap read", "parameter swap write"}, allocator, MemoryCategory::Parameter) {
}

char* ParameterSwap::buffer(int i) const {
  return swap_.buffers() + layout_.largestRecordBytes() * i;
}

AioFile::Ticket ParameterSwap::read(int record, char* buffer) {
  return swap_.file().read(buffer, layout_.recordBytes(record), layout_.recordOffset(record));
}

AioFile::Ticket ParameterSwap::write(int record, const char* buffer) {
  return swap_.file().write(buffer, layout_.recordBytes(record), layout_.recordOffset(record));
}

void ParameterSwap::stageIn(DType type) {
  if (staged_.defined()) return;
  const std::int64_t elements =
      std::accumulate(layout_.partElements.begin(), layout_.partElements.end(), std::int64_t{0});
  staged_ = Tensor::empty({elements}, type, MemoryCategory::Parameter, swap_.allocator());
  Sweep sweep(*this, false);
  auto* out = static_cast<char*>(staged_.raw());
  for (int b = 0; b < layout_.records(); ++b) {
    const std::int64_t bytes =
        layout_.partElements[static_cast<std::size_t>(b)] * layout_.elementBytes;
    std::memcpy(out, sweep.record(b), static_cast<std::size_t>(bytes));
    out += bytes;
  }
  sweep.finish();
}

void ParameterSwap::stageOut() {
  if (!staged_.defined()) return;
  if (quiesce_) quiesce_();
  const int buffers = layout_.buffers();
  std::vector<AioFile::Ticket> pending(static_cast<std::size_t>(buffers), 0);
  const auto* in = static_cast<const char*>(staged_.raw());
  for (int b = 0; b < layout_.records(); ++b) {
    AioFile::Ticket& t = pending[static_cast<std::size_t>(b % buffers)];
    if (t != 0) swap_.file().wait(t);
    const std::int64_t bytes =
        layout_.partElements[static_cast<std::size_t>(b)] * layout_.elementBytes;
    char* buf = buffer(b % buffers);
    std::memcpy(buf, in, static_cast<std::size_t>(bytes));
    // The padding is written as zeros, as the first records were, so the file holds no stale bytes.
    std::memset(buf + bytes, 0, static_cast<std::size_t>(layout_.recordBytes(b) - bytes));
    t = write(b, buf);
    in += bytes;
  }
  swap_.file().waitAll();
  staged_ = Tensor();
}

ParameterSwap::Sweep::Sweep(ParameterSwap& swap, bool writeBack)
    : swap_(swap),
      writeBack_(writeBack),
      pending_(static_cast<std::size_t>(std::max(1, swap.layout().buffers())), 0) {
  if (swap.quiesce_) swap.quiesce_();
  ahead_ = swapReadAhead(swap.layout().buffers());
}

void ParameterSwap::Sweep::settle(int b) {
  AioFile::Ticket& t = pending_[static_cast<std::size_t>(b % static_cast<int>(pending_.size()))];
  if (t != 0) swap_.file().wait(t);
  t = 0;
}

char* ParameterSwap::Sweep::record(int b) {
  const int buffers = static_cast<int>(pending_.size());
  if (b < current_) throw std::logic_error("ParameterSwap::Sweep: records are visited in order");
  if (b != current_) {
    if (writeBack_ && current_ >= 0)
      pending_[static_cast<std::size_t>(current_ % buffers)] =
          swap_.write(current_, swap_.buffer(current_ % buffers));
    const int last = std::min(b + ahead_, swap_.layout().records() - 1);
    for (issued_ = std::max(issued_, b); issued_ <= last; ++issued_) {
      settle(issued_);
      pending_[static_cast<std::size_t>(issued_ % buffers)] =
          swap_.read(issued_, swap_.buffer(issued_ % buffers));
    }
    settle(b);
    current_ = b;
  }
  return swap_.buffer(b % buffers);
}

void ParameterSwap::Sweep::finish() {
  if (writeBack_ && current_ >= 0) {
    const int buffers = static_cast<int>(pending_.size());
    pending_[static_cast<std::size_t>(current_ % buffers)] =
        swap_.write(current_, swap_.buffer(current_ % buffers));
  }
  current_ = -1;
  swap_.file().waitAll();
}

}  // namespace parascope
