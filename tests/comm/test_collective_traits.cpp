// The collective traits table against expectations written out here from the definitions
// (nccl-tests for message sizes and bus bandwidth, docs/communication.md for bytes per peer,
// buffers and in place), and makeRecord's figures against both, for every operation.
#include <QtTest>

#include <string>
#include <vector>

#include "core/comm/adjoint.h"
#include "core/comm/collective_traits.h"
#include "core/comm/comm_bytes.h"

using namespace parascope;

namespace parascope {
// Found by QCOMPARE through argument-dependent lookup, to print mismatches.
char* toString(CommOp op) {
  return qstrdup(std::string(commOpName(op)).c_str());
}
char* toString(RootRole r) {
  return qstrdup(r == RootRole::Root ? "root" : r == RootRole::Peer ? "peer" : "none");
}
char* toString(Span s) {
  return qstrdup(QByteArray::number(static_cast<int>(s)).constData());
}
}  // namespace parascope

namespace {

// One operation by its definition. Amounts are multiples of S on a group of 4 ranks with root
// (or peer) 1, seen from the root and from rank 2; "others" are ranks 0 and 3 seen from rank 2.
struct Expected {
  CommOp op;
  const char* name;
  RootRole root;
  bool reduces;
  int message;        // CommRecord::bytes / S
  const double* bus;  // bus factor on 1, 2, 4, 8 ranks
  CommOp adjoint;
  int rootSends, rootReceives, sendsToRoot, receivesFromRoot, withOthers;  // direct, per peer
  int sendAtRoot, sendElsewhere, recvAtRoot, recvElsewhere;                // buffers
  int inPlaceSlots;  // (send - recv) / S in place on rank 2
  bool oneBuffer;    // nothing to check for overlap
};

constexpr double kAllReduce[4] = {0.0, 1.0, 1.5, 1.75};  // 2(n-1)/n
constexpr double kParts[4] = {0.0, 0.5, 0.75, 0.875};    // (n-1)/n
constexpr double kWhole[4] = {0.0, 1.0, 1.0, 1.0};
constexpr int kRanks[4] = {1, 2, 4, 8};

// clang-format off
const Expected kExpected[] = {
  // op, name, root, reduces, message, bus factors;
  //   adjoint, direct (root sends, root receives, to root, from root, others),
  //   buffers (send at root, elsewhere, receive at root, elsewhere), in place
  {CommOp::Broadcast,     "broadcast",     RootRole::Root, false, 1, kWhole,
     CommOp::Reduce,        1, 0, 0, 1, 0,   1, 1, 1, 1,    0, true},
  {CommOp::Reduce,        "reduce",        RootRole::Root, true,  1, kWhole,
     CommOp::Broadcast,     1, 1, 1, 1, 1,   1, 1, 1, 0,    0, false},
  {CommOp::AllReduce,     "allReduce",     RootRole::None, true,  1, kAllReduce,
     CommOp::AllReduce,     1, 1, 1, 1, 1,   1, 1, 1, 1,    0, false},
  {CommOp::Gather,        "gather",        RootRole::Root, false, 4, kParts,
     CommOp::Scatter,       0, 1, 1, 0, 0,   1, 1, 4, 0,    2, false},
  {CommOp::AllGather,     "allGather",     RootRole::None, false, 4, kParts,
     CommOp::ReduceScatter, 1, 1, 1, 1, 1,   1, 1, 4, 4,    2, false},
  {CommOp::Scatter,       "scatter",       RootRole::Root, false, 4, kParts,
     CommOp::Gather,        1, 0, 0, 1, 0,   4, 0, 1, 1,   -2, false},
  {CommOp::ReduceScatter, "reduceScatter", RootRole::None, true,  4, kParts,
     CommOp::AllGather,     1, 1, 1, 1, 1,   4, 4, 1, 1,   -2, false},
  {CommOp::AllToAll,      "allToAll",      RootRole::None, false, 4, kParts,
     CommOp::AllToAll,      1, 1, 1, 1, 1,   4, 4, 4, 4,    0, false},
  {CommOp::Send,          "send",          RootRole::Peer, false, 1, kWhole,
     CommOp::Recv,          0, 0, 1, 0, 0,   1, 1, 0, 0,    0, true},
  {CommOp::Recv,          "recv",          RootRole::Peer, false, 1, kWhole,
     CommOp::Send,          0, 0, 0, 1, 0,   0, 0, 1, 1,    0, true},
};
// clang-format on

QByteArray text(std::string_view s) {
  return {s.data(), static_cast<qsizetype>(s.size())};
}

// "12 0 12 12": QCOMPARE prints it on a mismatch.
QByteArray text(const std::vector<std::uint64_t>& v) {
  QByteArray s;
  for (std::uint64_t x : v) s += (s.isEmpty() ? "" : " ") + QByteArray::number(x);
  return s;
}

void addRows() {
  QTest::addColumn<int>("index");
  for (int i = 0; i < static_cast<int>(std::size(kExpected)); ++i)
    QTest::newRow(kExpected[i].name) << i;
}

}  // namespace

class TestCollectiveTraits : public QObject {
  Q_OBJECT
 private slots:
  void everyOperationHasARow();
  void identity_data() { addRows(); }
  void identity();
  void busFactor_data() { addRows(); }
  void busFactor();
  void recordBytes_data() { addRows(); }
  void recordBytes();
  void buffers_data() { addRows(); }
  void buffers();
  void adjointOfAdjointIsIdentity();
  void reducingOpsAreExactlyTheThree();
};

void TestCollectiveTraits::everyOperationHasARow() {
  QCOMPARE(static_cast<int>(std::size(kCollectiveTraits)), kCommOpCount);
  QCOMPARE(static_cast<int>(std::size(kExpected)), kCommOpCount);
  for (int i = 0; i < kCommOpCount; ++i) {
    QCOMPARE(kCollectiveTraits[i].op, static_cast<CommOp>(i));
    QCOMPARE(kExpected[i].op, static_cast<CommOp>(i));
  }
}

void TestCollectiveTraits::identity() {
  QFETCH(int, index);
  const Expected& e = kExpected[index];
  const CollectiveTraits& t = commTraits(e.op);
  QCOMPARE(text(t.name), QByteArray(e.name));
  QCOMPARE(text(commOpName(e.op)), QByteArray(e.name));
  QVERIFY(commOpNamed(e.name) == e.op);
  QCOMPARE(t.root, e.root);
  QCOMPARE(isPointToPoint(e.op), e.root == RootRole::Peer);
  QCOMPARE(t.reduces, e.reduces);
  QCOMPARE(t.adjoint, e.adjoint);
  QCOMPARE(adjointOf(e.op), e.adjoint);
}

void TestCollectiveTraits::busFactor() {
  QFETCH(int, index);
  const Expected& e = kExpected[index];
  for (int i = 0; i < 4; ++i) {
    const double want = e.bus[i], got = busBandwidthFactor(e.op, kRanks[i]);
    QVERIFY2(got == want && commTraits(e.op).busFactor(kRanks[i]) == want,
             qPrintable(QString("on %1 ranks: %2, expected %3").arg(kRanks[i]).arg(got).arg(want)));
  }
}

// makeRecord on 4 ranks, root 1, 3 i32 (S = 12 bytes), direct, seen from the root and rank 2.
void TestCollectiveTraits::recordBytes() {
  QFETCH(int, index);
  const Expected& e = kExpected[index];
  const std::uint64_t S = 12;
  const CommArgs args{e.op, nullptr, nullptr, 3, DType::I32, ReduceOp::Sum, 1};
  const CommRecord root = makeRecord("test", "world", 1, 4, args, CommAlgorithm::Direct);
  const CommRecord two = makeRecord("test", "world", 2, 4, args, CommAlgorithm::Direct);
  QCOMPARE(root.bytes, std::size_t{e.message * S});
  QCOMPARE(two.bytes, std::size_t{e.message * S});
  QCOMPARE(std::uint64_t{root.bytes}, messageBytes(e.op, 3, DType::I32, 4));
  const std::uint64_t rootSends = e.rootSends * S, rootReceives = e.rootReceives * S;
  QCOMPARE(text(root.sentTo), text({rootSends, 0, rootSends, rootSends}));
  QCOMPARE(text(root.receivedFrom), text({rootReceives, 0, rootReceives, rootReceives}));
  const std::uint64_t others = e.withOthers * S;
  QCOMPARE(text(two.sentTo), text({others, e.sendsToRoot * S, 0, others}));
  QCOMPARE(text(two.receivedFrom), text({others, e.receivesFromRoot * S, 0, others}));
}

void TestCollectiveTraits::buffers() {
  QFETCH(int, index);
  const Expected& e = kExpected[index];
  const CollectiveTraits& t = commTraits(e.op);
  QCOMPARE(spanOf(t.sendBuffer, 1, 4, true), std::uint64_t(e.sendAtRoot));
  QCOMPARE(spanOf(t.sendBuffer, 1, 4, false), std::uint64_t(e.sendElsewhere));
  QCOMPARE(spanOf(t.recvBuffer, 1, 4, true), std::uint64_t(e.recvAtRoot));
  QCOMPARE(spanOf(t.recvBuffer, 1, 4, false), std::uint64_t(e.recvElsewhere));
  QCOMPARE(inPlaceOffset(t.inPlace, 12, 2), std::ptrdiff_t{e.inPlaceSlots * 12});
  QCOMPARE(t.inPlace == InPlace::OneBuffer, e.oneBuffer);
}

// An adjoint moves the same data backwards: same root role, message size and bus factor.
void TestCollectiveTraits::adjointOfAdjointIsIdentity() {
  for (const CollectiveTraits& t : kCollectiveTraits) {
    const CollectiveTraits& a = commTraits(t.adjoint);
    QCOMPARE(a.adjoint, t.op);
    QCOMPARE(a.root, t.root);
    QCOMPARE(a.message, t.message);
    for (int n : kRanks) QCOMPARE(a.busFactor(n), t.busFactor(n));
  }
}

void TestCollectiveTraits::reducingOpsAreExactlyTheThree() {
  QByteArray reducing;
  for (const CollectiveTraits& t : kCollectiveTraits)
    if (t.reduces) reducing += text(t.name) + " ";
  QCOMPARE(reducing, QByteArray("reduce allReduce reduceScatter "));
  QVERIFY(!commOpNamed("allreduce"));  // names are case-sensitive
}

QTEST_GUILESS_MAIN(TestCollectiveTraits)
#include "test_collective_traits.moc"
