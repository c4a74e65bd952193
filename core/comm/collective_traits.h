// Facts about each communication operation, one row per CommOp: its name, what its root
// argument means, whether it reduces, its message size (nccl-tests), the bytes its direct
// algorithm moves per peer, the buffer ranges it uses, its bus-bandwidth factor and its adjoint.
// Validation, byte accounting, backends, adjoints, benchmarks and tests read these rows instead
// of asking about operations by name, so a new operation is its CommOp value, one row here and
// its backend code. No algorithms here. S below is count x element size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

#include "core/comm/comm_types.h"

namespace parascope {

// What the `root` argument of CommArgs names.
enum class RootRole : std::uint8_t { None, Root, Peer };

// An amount on one rank of a group of n ranks, in units of S.
enum class Span : std::uint8_t {
  None,
  Vector,        // S
  Group,         // n x S
  VectorAtRoot,  // S at the root, nothing elsewhere
  GroupAtRoot,   // n x S at the root, nothing elsewhere
};

// Where the send range starts relative to the receive range when an operation is in place.
enum class InPlace : std::uint8_t {
  OneBuffer,       // broadcast has one buffer; send and recv have one side: nothing to check
  SameStart,       // send == recv
  SendAtRankSlot,  // send == recv + rank x S: the input is this rank's slice of the output
  RecvAtRankSlot,  // recv == send + rank x S: the output is this rank's slice of the input
};

// When the direct algorithm moves S between this rank and a peer p (never to itself).
enum class PeerBytes : std::uint8_t { Never, Always, IfRankIsRoot, IfPeerIsRoot };

// nccl-tests bus-bandwidth factors (busbw = algbw x factor): the fraction of the message each
// rank must move over its own link. Nothing moves on one rank.
constexpr double allReduceBusFactor(int size) {
  const double n = size;
  return size > 1 ? 2.0 * (n - 1) / n : 0.0;
}
constexpr double partsBusFactor(int size) {  // every rank's part crosses to n - 1 peers
  const double n = size;
  return (n - 1) / n;
}
constexpr double wholeBusFactor(int size) {
  return size > 1 ? 1.0 : 0.0;
}

struct CollectiveTraits {
  CommOp op;
  std::string_view name;  // "allReduce": traces, error prefixes, bench rows
  RootRole root;
  bool reduces;                 // takes a ReduceOp; the others ignore theirs
  Span message;                 // CommRecord::bytes: Vector or Group (nccl-tests totals)
  PeerBytes sent, received;     // the direct algorithm's bytes to / from each peer
  Span sendBuffer, recvBuffer;  // the ranges this rank's buffers must hold
  InPlace inPlace;
  double (*busFactor)(int size);
  CommOp adjoint;  // sum over ranks <op(x), y> == sum over ranks <x, adjoint(y)>
};

// Rows in CommOp order, fields in declaration order: op, name, root, reduces, message, direct
// sent and received, send and receive buffers, in place, bus factor, adjoint. Every backend
// accounts reduce with its chunked algorithm, so no record uses reduce's direct rule.
inline constexpr CollectiveTraits kCollectiveTraits[] = {
    {CommOp::Broadcast, "broadcast", RootRole::Root, false, Span::Vector, PeerBytes::IfRankIsRoot,
     PeerBytes::IfPeerIsRoot, Span::Vector, Span::Vector, InPlace::OneBuffer, wholeBusFactor,
     CommOp::Reduce},
    {CommOp::Reduce, "reduce", RootRole::Root, true, Span::Vector, PeerBytes::Always,
     PeerBytes::Always, Span::Vector, Span::VectorAtRoot, InPlace::SameStart, wholeBusFactor,
     CommOp::Broadcast},
    {CommOp::AllReduce, "allReduce", RootRole::None, true, Span::Vector, PeerBytes::Always,
     PeerBytes::Always, Span::Vector, Span::Vector, InPlace::SameStart, allReduceBusFactor,
     CommOp::AllReduce},
    {CommOp::Gather, "gather", RootRole::Root, false, Span::Group, PeerBytes::IfPeerIsRoot,
     PeerBytes::IfRankIsRoot, Span::Vector, Span::GroupAtRoot, InPlace::SendAtRankSlot,
     partsBusFactor, CommOp::Scatter},
    {CommOp::AllGather, "allGather", RootRole::None, false, Span::Group, PeerBytes::Always,
     PeerBytes::Always, Span::Vector, Span::Group, InPlace::SendAtRankSlot, partsBusFactor,
     CommOp::ReduceScatter},
    {CommOp::Scatter, "scatter", RootRole::Root, false, Span::Group, PeerBytes::IfRankIsRoot,
     PeerBytes::IfPeerIsRoot, Span::GroupAtRoot, Span::Vector, InPlace::RecvAtRankSlot,
     partsBusFactor, CommOp::Gather},
    {CommOp::ReduceScatter, "reduceScatter", RootRole::None, true, Span::Group, PeerBytes::Always,
     PeerBytes::Always, Span::Group, Span::Vector, InPlace::RecvAtRankSlot, partsBusFactor,
     CommOp::AllGather},
    {CommOp::AllToAll, "allToAll", RootRole::None, false, Span::Group, PeerBytes::Always,
     PeerBytes::Always, Span::Group, Span::Group, InPlace::SameStart, partsBusFactor,
     CommOp::AllToAll},
    {CommOp::Send, "send", RootRole::Peer, false, Span::Vector, PeerBytes::IfPeerIsRoot,
     PeerBytes::Never, Span::Vector, Span::None, InPlace::OneBuffer, wholeBusFactor, CommOp::Recv},
    {CommOp::Recv, "recv", RootRole::Peer, false, Span::Vector, PeerBytes::Never,
     PeerBytes::IfPeerIsRoot, Span::None, Span::Vector, InPlace::OneBuffer, wholeBusFactor,
     CommOp::Send},
};
static_assert(std::size(kCollectiveTraits) == kCommOpCount, "one row per CommOp");

constexpr const CollectiveTraits& commTraits(CommOp op) {
  return kCollectiveTraits[static_cast<std::size_t>(op)];
}
constexpr bool isPointToPoint(CommOp op) {
  return commTraits(op).root == RootRole::Peer;
}

// `span` in units of `unit` (bytes or elements) on a rank of a group of `size`.
constexpr std::uint64_t spanOf(Span span, std::uint64_t unit, int size, bool isRoot) {
  const std::uint64_t group = unit * static_cast<std::uint64_t>(size);
  switch (span) {
    case Span::None: return 0;
    case Span::Vector: return unit;
    case Span::Group: return group;
    case Span::VectorAtRoot: return isRoot ? unit : 0;
    case Span::GroupAtRoot: return isRoot ? group : 0;
  }
  return 0;
}

// Message size in the nccl-tests convention (CommRecord::bytes), from which algbw is computed.
constexpr std::uint64_t messageBytes(CommOp op, std::size_t count, DType t, int size) {
  return spanOf(commTraits(op).message, count * dtypeSize(t), size, false);
}

// send - recv in bytes when the operation is in place on `rank`, for S = `bytes`.
constexpr std::ptrdiff_t inPlaceOffset(InPlace rule, std::uint64_t bytes, int rank) {
  const auto slot = static_cast<std::ptrdiff_t>(bytes * static_cast<std::uint64_t>(rank));
  if (rule == InPlace::SendAtRankSlot) return slot;
  if (rule == InPlace::RecvAtRankSlot) return -slot;
  return 0;
}

constexpr bool movesBytes(PeerBytes rule, bool rankIsRoot, bool peerIsRoot) {
  return rule == PeerBytes::Always || (rule == PeerBytes::IfRankIsRoot && rankIsRoot) ||
         (rule == PeerBytes::IfPeerIsRoot && peerIsRoot);
}

// The operation called `name` ("allReduce"), if any.
std::optional<CommOp> commOpNamed(std::string_view name);

}  // namespace parascope
