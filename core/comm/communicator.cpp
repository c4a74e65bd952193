// Communicator: argument validation (the same for every backend) and the blocking, async and
// tensor forms of the ten operations over CommBackend::start, and their trace spans.
#include "core/comm/communicator.h"

#include <cstdint>
#include <limits>
#include <numeric>
#include <string>

#include "core/comm/collective_traits.h"
#include "core/comm/threads/thread_backend.h"
#include "core/common/error.h"
#include "core/trace/trace.h"

namespace parascope {
namespace {

std::string where(const CommBackend& b, CommOp op) {
  return operationPrefix(commOpName(op), b.name(), b.rank(), b.size()) + ": ";
}

// The buffer ranges this rank touches come from the operation's row; an empty one (a non-root's
// receive buffer of reduce or gather, the unused side of send or recv) may be null.
void validate(const CommBackend& b, const CommArgs& a) {
  const CollectiveTraits& t = commTraits(a.op);
  const int size = b.size();
  if (t.root != RootRole::None) {
    const char* what = t.root == RootRole::Root ? "root" : "peer";
    if (a.root < 0 || a.root >= size)
      throw UserError(where(b, a.op) + what + " " + std::to_string(a.root) +
                      " is out of range (allowed 0.." + std::to_string(size - 1) + ")");
  }
  const std::size_t limit =
      std::numeric_limits<std::size_t>::max() / 16 / static_cast<std::size_t>(size);
  if (a.count > limit / dtypeSize(a.dtype))
    throw UserError(where(b, a.op) + "count " + std::to_string(a.count) + " is too large");
  const bool isRoot = b.rank() == a.root;
  const std::uint64_t bytes = a.count * dtypeSize(a.dtype);
  const std::uint64_t sendBytes = spanOf(t.sendBuffer, bytes, size, isRoot);
  const std::uint64_t recvBytes = spanOf(t.recvBuffer, bytes, size, isRoot);
  if (sendBytes > 0 && a.send == nullptr)
    throw UserError(where(b, a.op) + "send buffer is null with count " + std::to_string(a.count));
  if (recvBytes > 0 && a.recv == nullptr)
    throw UserError(where(b, a.op) + "receive buffer is null with count " +
                    std::to_string(a.count));
  if (sendBytes == 0 || recvBytes == 0 || t.inPlace == InPlace::OneBuffer) return;
  const auto s = reinterpret_cast<std::uintptr_t>(a.send);
  const auto r = reinterpret_cast<std::uintptr_t>(a.recv);
  const std::ptrdiff_t offset = inPlaceOffset(t.inPlace, bytes, b.rank());
  const bool inPlace = static_cast<std::ptrdiff_t>(s - r) == offset;
  const bool overlap = s < r + recvBytes && r < s + sendBytes;
  if (overlap && !inPlace)
    throw UserError(where(b, a.op) +
                    "send and receive buffers overlap but are not in place (in place means the "
                    "send buffer starts " +
                    std::to_string(offset) + " bytes after the receive buffer)");
}

// The same id on every member and in every process: "world" is 0, other groups a hash of
// their name (names are equal across members by construction, see split).
std::int32_t groupIdOf(const std::string& name) {
  if (name == "world") return 0;
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return static_cast<std::int32_t>(h & 0x7fffffffu);
}

std::shared_ptr<CommTraceInfo> makeTraceInfo(const CommBackend& b, std::vector<int> worldRanks) {
  auto info = std::make_shared<CommTraceInfo>();
  info->worldRanks = std::move(worldRanks);
  info->groupId = groupIdOf(b.name());
  info->sends.assign(static_cast<std::size_t>(b.size()), 0);
  info->receives.assign(static_cast<std::size_t>(b.size()), 0);
  return info;
}

int worldRankOf(const CommTraceInfo& info, int groupRank) {
  return info.worldRanks.empty() ? groupRank : info.worldRanks[static_cast<std::size_t>(groupRank)];
}

// One id for the n-th transfer from world rank `from` to `to` in a group, computed alike by
// the sender and the receiver. Bit 62 keeps it apart from trace::newCorrelationId's ids.
std::uint64_t p2pCorrelation(std::int32_t group, int from, int to, std::uint64_t n) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the four values
  for (std::uint64_t v : {static_cast<std::uint64_t>(group), static_cast<std::uint64_t>(from),
                          static_cast<std::uint64_t>(to), n}) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  }
  return (h & ((std::uint64_t{1} << 62) - 1)) | (std::uint64_t{1} << 62);
}

// The operation as a Communication span from issue to completion with the bytes this rank
// sent (a receive: the bytes it received, flagged), and for a collective one instant per peer
// with the bytes sent to it: the counts are the CommRecord's, i.e. the algorithm's own.
void traceOperation(const CommRecord& r, const CommTraceMark& mark) {
  trace::Recorder* rec = trace::recorder();
  if (!rec) return;
  const CommTraceInfo& info = *mark.info;
  trace::Event e;
  trace::stampContext(e);
  if (!info.worldRanks.empty()) e.rank = worldRankOf(info, r.rank);
  e.name = commOpName(r.op).data();  // a string literal
  e.category = trace::Category::Communication;
  e.lane = trace::lane::kCommunication;
  e.group = info.groupId;
  e.startNs = mark.startTicks;
  e.endNs = trace::ticks();
  e.correlation = mark.correlation;
  if (isPointToPoint(r.op)) {
    e.peer = worldRankOf(info, r.root);
    const bool receive = r.op == CommOp::Recv;
    e.bytes = static_cast<std::int64_t>(receive ? r.totalReceived() : r.totalSent());
    e.flags = receive ? trace::flag::kReceive : trace::flag::kFlowSource;
    rec->record(e);
    return;
  }
  e.bytes = static_cast<std::int64_t>(r.totalSent());
  rec->record(e);
  trace::Event peer = e;
  peer.kind = trace::EventKind::Instant;
  peer.startNs = e.endNs;
  for (std::size_t p = 0; p < r.sentTo.size(); ++p) {
    if (r.sentTo[p] == 0) continue;
    peer.peer = worldRankOf(info, static_cast<int>(p));
    peer.bytes = static_cast<std::int64_t>(r.sentTo[p]);
    rec->record(peer);
  }
}

}  // namespace

bool CommHandle::test() {
  if (!request_) throw UserError("CommHandle::test on an empty handle");
  if (!request_->test()) return false;
  finish();
  return true;
}

const CommRecord& CommHandle::wait() {
  if (!request_) throw UserError("CommHandle::wait on an empty handle");
  request_->wait();
  finish();
  return request_->record;
}

void CommHandle::finish() {
  if (request_->reported) return;
  request_->reported = true;
  request_->record.endNs = commNowNs();
  if (mark_.startTicks >= 0) traceOperation(request_->record, mark_);
  if (backend_->observer) backend_->observer(request_->record);
}

// The self group's rank is whichever world rank uses it, so its events take the thread's
// trace context rank.
Communicator::Communicator() : backend_(makeSelfBackend()), trace_(makeTraceInfo(*backend_, {})) {}

Communicator::Communicator(std::shared_ptr<CommBackend> backend) : backend_(std::move(backend)) {
  if (!backend_) throw UserError("Communicator: null backend");
  std::vector<int> identity(static_cast<std::size_t>(backend_->size()));
  std::iota(identity.begin(), identity.end(), 0);
  trace_ = makeTraceInfo(*backend_, std::move(identity));
}

Communicator Communicator::split(int color, int key) const {
  if (color < 0)
    throw UserError("[split] group '" + name() + "': color " + std::to_string(color) +
                    " is negative; every rank must name the group it joins (color >= 0)");
  Communicator out(backend_->split(color, key));
  // The members' world ranks, for naming peers in traces: one all-gather straight on the new
  // backend (not traced, not observed). NCCL groups take device buffers; they keep group ranks.
  std::vector<int> world;
  if (backendKind() != "nccl" && !trace_->worldRanks.empty()) {
    world.resize(static_cast<std::size_t>(out.size()));
    const int mine = worldRankOf(*trace_, rank());
    out.backend_->start({CommOp::AllGather, &mine, world.data(), 1, DType::I32}, true)->wait();
  }
  out.trace_ = makeTraceInfo(*out.backend_, std::move(world));
  return out;
}

// Sequence numbers advance whether or not tracing is on, so both ends of a transfer agree on
// its id even when one of them started tracing later.
CommTraceMark Communicator::traceMark(const CommArgs& args) {
  const bool send = args.op == CommOp::Send, p2p = isPointToPoint(args.op);
  std::uint64_t n = 0;
  if (p2p) {
    const auto peer = static_cast<std::size_t>(args.root);
    n = send ? trace_->sends[peer]++ : trace_->receives[peer]++;
  }
  if (!trace::recorder()) return {};
  std::uint64_t correlation = 0;
  if (p2p) {
    const int me = worldRankOf(*trace_, rank()), other = worldRankOf(*trace_, args.root);
    correlation = send ? p2pCorrelation(trace_->groupId, me, other, n)
                       : p2pCorrelation(trace_->groupId, other, me, n);
  }
  return {trace_, trace::ticks(), correlation};
}

CommHandle Communicator::issue(const CommArgs& args, bool blocking) {
  validate(*backend_, args);
  CommTraceMark mark = traceMark(args);
  return CommHandle(backend_->start(args, blocking), backend_, std::move(mark));
}

CommHandle Communicator::startAsync(const CommArgs& args) {
  return issue(args, false);
}

CommRecord Communicator::run(const CommArgs& args) {
  return issue(args, true).wait();
}

CommHandle Communicator::broadcastAsync(void* buf, std::size_t count, DType t, int root) {
  return startAsync({CommOp::Broadcast, buf, buf, count, t, ReduceOp::Sum, root});
}
CommHandle Communicator::reduceAsync(const void* send, void* recv, std::size_t count, DType t,
                                     ReduceOp op, int root) {
  return startAsync({CommOp::Reduce, send, recv, count, t, op, root});
}
CommHandle Communicator::allReduceAsync(const void* send, void* recv, std::size_t count, DType t,
                                        ReduceOp op) {
  return startAsync({CommOp::AllReduce, send, recv, count, t, op, -1});
}
CommHandle Communicator::gatherAsync(const void* send, void* recv, std::size_t count, DType t,
                                     int root) {
  return startAsync({CommOp::Gather, send, recv, count, t, ReduceOp::Sum, root});
}
CommHandle Communicator::allGatherAsync(const void* send, void* recv, std::size_t count, DType t) {
  return startAsync({CommOp::AllGather, send, recv, count, t, ReduceOp::Sum, -1});
}
CommHandle Communicator::scatterAsync(const void* send, void* recv, std::size_t count, DType t,
                                      int root) {
  return startAsync({CommOp::Scatter, send, recv, count, t, ReduceOp::Sum, root});
}
CommHandle Communicator::reduceScatterAsync(const void* send, void* recv, std::size_t count,
                                            DType t, ReduceOp op) {
  return startAsync({CommOp::ReduceScatter, send, recv, count, t, op, -1});
}
CommHandle Communicator::allToAllAsync(const void* send, void* recv, std::size_t count, DType t) {
  return startAsync({CommOp::AllToAll, send, recv, count, t, ReduceOp::Sum, -1});
}
CommHandle Communicator::sendAsync(const void* buf, std::size_t count, DType t, int peer) {
  return startAsync({CommOp::Send, buf, nullptr, count, t, ReduceOp::Sum, peer});
}
CommHandle Communicator::recvAsync(void* buf, std::size_t count, DType t, int peer) {
  return startAsync({CommOp::Recv, nullptr, buf, count, t, ReduceOp::Sum, peer});
}

CommRecord Communicator::broadcast(void* buf, std::size_t count, DType t, int root) {
  return issue({CommOp::Broadcast, buf, buf, count, t, ReduceOp::Sum, root}, true).wait();
}
CommRecord Communicator::reduce(const void* send, void* recv, std::size_t count, DType t,
                                ReduceOp op, int root) {
  return issue({CommOp::Reduce, send, recv, count, t, op, root}, true).wait();
}
CommRecord Communicator::allReduce(const void* send, void* recv, std::size_t count, DType t,
                                   ReduceOp op) {
  return issue({CommOp::AllReduce, send, recv, count, t, op, -1}, true).wait();
}
CommRecord Communicator::gather(const void* send, void* recv, std::size_t count, DType t,
                                int root) {
  return issue({CommOp::Gather, send, recv, count, t, ReduceOp::Sum, root}, true).wait();
}
CommRecord Communicator::allGather(const void* send, void* recv, std::size_t count, DType t) {
  return issue({CommOp::AllGather, send, recv, count, t, ReduceOp::Sum, -1}, true).wait();
}
CommRecord Communicator::scatter(const void* send, void* recv, std::size_t count, DType t,
                                 int root) {
  return issue({CommOp::Scatter, send, recv, count, t, ReduceOp::Sum, root}, true).wait();
}
CommRecord Communicator::reduceScatter(const void* send, void* recv, std::size_t count, DType t,
                                       ReduceOp op) {
  return issue({CommOp::ReduceScatter, send, recv, count, t, op, -1}, true).wait();
}
CommRecord Communicator::allToAll(const void* send, void* recv, std::size_t count, DType t) {
  return issue({CommOp::AllToAll, send, recv, count, t, ReduceOp::Sum, -1}, true).wait();
}
CommRecord Communicator::send(const void* buf, std::size_t count, DType t, int peer) {
  return issue({CommOp::Send, buf, nullptr, count, t, ReduceOp::Sum, peer}, true).wait();
}
CommRecord Communicator::recv(void* buf, std::size_t count, DType t, int peer) {
  return issue({CommOp::Recv, nullptr, buf, count, t, ReduceOp::Sum, peer}, true).wait();
}

CommHandle Communicator::allReduceAsync(const Tensor& t, ReduceOp op) {
  return allReduceAsync(t.raw(), t.raw(), static_cast<std::size_t>(t.numel()), t.dtype(), op);
}

CommHandle Communicator::reduceScatterAsync(const Tensor& in, const Tensor& out, ReduceOp op) {
  if (in.dtype() != out.dtype())
    throw UserError("[reduceScatter] input is " + std::string(dtypeName(in.dtype())) +
                    " but output is " + std::string(dtypeName(out.dtype())));
  if (in.numel() % size() != 0)
    throw UserError("[reduceScatter] input of " + std::to_string(in.numel()) +
                    " elements is not divisible by the group size " + std::to_string(size()));
  if (out.numel() * size() != in.numel())
    throw UserError(
        "[reduceScatter] output has " + std::to_string(out.numel()) +
        " elements; it must hold input / group size = " + std::to_string(in.numel() / size()));
  return reduceScatterAsync(in.raw(), out.raw(), static_cast<std::size_t>(out.numel()), in.dtype(),
                            op);
}

CommHandle Communicator::allGatherAsync(const Tensor& in, const Tensor& out) {
  if (in.dtype() != out.dtype())
    throw UserError("[allGather] input is " + std::string(dtypeName(in.dtype())) +
                    " but output is " + std::string(dtypeName(out.dtype())));
  if (out.numel() != in.numel() * size())
    throw UserError(
        "[allGather] output has " + std::to_string(out.numel()) +
        " elements; it must hold group size x input = " + std::to_string(in.numel() * size()));
  return allGatherAsync(in.raw(), out.raw(), static_cast<std::size_t>(in.numel()), in.dtype());
}

CommHandle Communicator::broadcastAsync(const Tensor& t, int root) {
  return broadcastAsync(t.raw(), static_cast<std::size_t>(t.numel()), t.dtype(), root);
}

}  // namespace parascope
