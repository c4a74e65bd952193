// Communication in PyTorch (Kineto) traces: record_param_comms events with "Collective name",
// message sizes, dtype and process group become Communication spans with the bytes each rank
// sends under NCCL's ring algorithms (bytes / duration = nccl-tests' bus bandwidth) and one
// instant per peer, so analyze's matrix and per-operation bytes come out of PyTorch traces.
// Exact values from the formulas on a hand-written 4-rank trace, on the committed PyTorch 2.x
// fixture (tests/fixtures/kineto/ns-resolution-rank0.json.gz, tests/tools/make_kineto_fixtures.py)
// and on the real ns-resolution trace when it is beside the checkout (world size 1: nothing
// leaves the rank).
#include <QtTest>

#include <filesystem>

#include "profiler/analysis/comm_volume.h"
#include "profiler/io/chrome_import.h"
#include "profiler/io/foreign_events.h"

using namespace parascope::profiler;

namespace {

const std::string kKineto = std::string(PARASCOPE_SOURCE_DIR) + "/../shared/traces/kineto/";
const std::string kFixture =
    std::string(PARASCOPE_SOURCE_DIR) + "/tests/fixtures/kineto/ns-resolution-rank0.json.gz";

std::string comm(int ts, const char* collective, const char* dtype, long in, long out,
                 const char* extra) {
  return "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 7, "
         "\"tid\": 7, \"ts\": " +
         std::to_string(ts) +
         ", \"dur\": 10, \"args\": {"
         "\"Collective name\": \"" +
         collective + "\", \"dtype\": \"" + dtype + "\", \"In msg nelems\": " + std::to_string(in) +
         ", \"Out msg nelems\": " + std::to_string(out) + ", \"Process Group ID\": 3" + extra +
         "}}";
}

// One rank's file: the collectives every rank of a 4-rank job runs.
std::string rankTrace(int rank) {
  const char* all = ", \"Group size\": 4, \"Process Group Ranks\": \"[0, 1, 2, 3]\"";
  std::string events = comm(100, "allreduce", "Float", 1000, 1000, all) + "," +
                       comm(200, "_allgather_base", "BFloat16", 250, 1000, all) + "," +
                       comm(300, "reduce_scatter", "Float", 1000, 250, all) + "," +
                       comm(400, "broadcast", "Long", 10, 10, all) + "," +
                       comm(500, "all_to_all", "Float", 1000, 1000,
                            ", \"Group size\": 4, \"Process Group Ranks\": \"[0, 1, 2, 3]\", "
                            "\"In split size\": \"[1, 2, 3, 4]\"") +
                       "," + comm(600, "wait", "Byte", 0, 0, all);
  if (rank % 2 == 0) {  // a group of ranks 0 and 2 given by start and stride
    events += ',';
    events += comm(700, "allreduce", "Half", 64, 64,
                   ", \"Group size\": 2, \"Global rank start\": 0, \"Global rank stride\": 2");
  }
  return "{\"distributedInfo\": {\"rank\": " + std::to_string(rank) +
         ", \"world_size\": 4}, \"traceEvents\": [" + events + "]}";
}

}  // namespace

class TestKinetoComms : public QObject {
  Q_OBJECT
 private slots:
  void ringFormulas();
  void matrixAndOperations();
  void nanosecondFixture();
  void realTraceWorldSizeOne();
};

void TestKinetoComms::ringFormulas() {
  KinetoCollective c;
  c.name = "allreduce";
  c.dtype = "Float";
  c.inElements = c.outElements = 1 << 20;
  c.groupRanks = "[4, 5, 6, 7, 8, 9, 10, 11]";
  CollectiveTraffic t = collectiveTraffic(c, 11);
  QCOMPARE(t.sentBytes, std::int64_t{2 * 7 * (4 << 20) / 8});  // 2(n-1)/n x S
  QCOMPARE(t.peers.size(), std::size_t{1});
  QCOMPARE(t.peers[0].peer, 4);  // the ring wraps to the group's first rank
  c.name = "wait";
  QCOMPARE(collectiveTraffic(c, 4).sentBytes, std::int64_t{0});
  c.name = "allreduce";
  QCOMPARE(collectiveTraffic(c, 3).sentBytes, std::int64_t{0});  // not in the group
  c.dtype = "Quantum";
  QCOMPARE(collectiveTraffic(c, 4).sentBytes, std::int64_t{0});  // unknown dtype: unknown bytes
  QCOMPARE(dtypeBytes("BFloat16"), std::int64_t{2});
  QCOMPARE(dtypeBytes("Long"), std::int64_t{8});
}

void TestKinetoComms::matrixAndOperations() {
  TraceData all;
  for (int r = 0; r < 4; ++r) {
    all.merge(importChromeTraceFromMemory(rankTrace(r), "rank" + std::to_string(r)));
  }
  all.sortByTime();
  const CommVolume v = computeCommVolume(all);
  // Ring traffic to the next rank: all-reduce 2*3/4*4000 = 6000, all-gather 3/4*2000 = 1500,
  // reduce-scatter 3/4*4000 = 3000, broadcast 80; all-to-all by splits [1,2,3,4] of 10 rows of
  // 100 floats: 400 bytes per row to each other peer.
  const std::int64_t ring = 6000 + 1500 + 3000 + 80;
  for (int src = 0; src < 4; ++src) {
    for (int dst = 0; dst < 4; ++dst) {
      std::int64_t expected = src == dst ? 0 : 400 * (dst + 1);
      if (dst == (src + 1) % 4) expected += ring;
      if ((src == 0 && dst == 2) || (src == 2 && dst == 0)) expected += 2 * 1 * 128 / 2;
      QCOMPARE(v.matrix.at(src, dst), expected);
    }
  }
  auto op = [&](const std::string& name) {
    auto it =
        std::find_if(v.ops.begin(), v.ops.end(), [&](const OpTotal& o) { return o.name == name; });
    return it == v.ops.end() ? OpTotal{} : *it;
  };
  QCOMPARE(op("record_param_comms:allreduce").count, std::int64_t{6});
  QCOMPARE(op("record_param_comms:allreduce").bytes, std::int64_t{4 * 6000 + 2 * 128});
  QCOMPARE(op("record_param_comms:allreduce").timeNs, std::int64_t{6 * 10'000});
  QCOMPARE(op("record_param_comms:_allgather_base").bytes, std::int64_t{4 * 1500});
  QCOMPARE(op("record_param_comms:wait").bytes, std::int64_t{0});
  // Bytes over time is the bus bandwidth: 6000 B in 10 us = 0.6 GB/s per rank.
  QCOMPARE(op("record_param_comms:allreduce").count, std::int64_t{6});
  for (const Event& e : all.events) {
    if (e.kind == EventKind::Span && std::string_view(e.name) == "record_param_comms:allreduce") {
      QCOMPARE(e.group, 3);
      QCOMPARE(e.category, Category::Communication);
    }
  }
}

// Rank 0 of 2. Process group 0 is ranks [0, 1], group 1 rank 0 alone. record_param_comms:
// two broadcasts of 1000 Float (4000 B each to rank 1: S), three all-reduces of 2500 Float on
// group 0 (2(n-1)/n x 10000 = 10000 B each to rank 1), two all-reduces of 512 BFloat16 on
// group 1 (a group of one sends nothing) and three waits (no bytes). Each collective but the
// waits wraps an "nccl:..." annotation 2 us shorter, and those on group 0 an NCCL kernel of
// 25.250 us. Durations carry nanoseconds: the all-reduces' 36.526 + 34.057 + 12.345 + 31.289 +
// 10.001 = 124.218 us.
void TestKinetoComms::nanosecondFixture() {
  const TraceData t = importChromeTrace(kFixture);
  QCOMPARE(t.worldSize, 2);
  QCOMPARE(t.ranks(), std::vector<std::int32_t>{0});
  const CommVolume v = computeCommVolume(t);
  struct Row {
    std::string name;
    std::int64_t count, bytes, timeNs;
  };
  const std::vector<Row> expected{
      {"nccl:all_reduce", 5, 0, 124'218 - 5 * 2'000},
      {"nccl:broadcast", 2, 0, 59'283 + 41'997 - 2 * 2'000},
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 3, 0,
       3 * 25'250},
      {"ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 2, 0, 2 * 25'250},
      {"record_param_comms:allreduce", 5, 3 * 10'000, 124'218},
      {"record_param_comms:broadcast", 2, 2 * 4'000, 59'283 + 41'997},
      {"record_param_comms:wait", 3, 0, 3'279 + 2'002 + 1'001}};
  QCOMPARE(v.ops.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    QCOMPARE(v.ops[i].name, expected[i].name);
    QCOMPARE(v.ops[i].count, expected[i].count);
    QCOMPARE(v.ops[i].bytes, expected[i].bytes);
    QCOMPARE(v.ops[i].timeNs, expected[i].timeNs);
  }
  // Ring traffic goes to the next rank of group 0: 2 x 4000 + 3 x 10000.
  QCOMPARE(v.matrix.ranks, (std::vector<std::int32_t>{0, 1}));
  QCOMPARE(v.matrix.at(0, 1), std::int64_t{38'000});
  QCOMPARE(v.matrix.total(), std::int64_t{38'000});
  // Spans keep the nanoseconds and their process group; the first broadcast starts at
  // 1712000000000110.926 us.
  std::vector<std::int32_t> groups;
  std::int64_t firstBroadcast = -1;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::Span) continue;
    const std::string_view name(e.name);
    if (name == "record_param_comms:allreduce") groups.push_back(e.group);
    if (name == "record_param_comms:broadcast" && firstBroadcast < 0) {
      firstBroadcast = e.startNs;
      QCOMPARE(e.endNs - e.startNs, std::int64_t{59'283});
      QCOMPARE(e.step, 3);  // inside ProfilerStep#3
    }
  }
  QCOMPARE(groups, (std::vector<std::int32_t>{0, 0, 1, 0, 1}));
  QCOMPARE(firstBroadcast, std::int64_t{1'712'000'000'000'110'926});
}

void TestKinetoComms::realTraceWorldSizeOne() {
  if (!std::filesystem::exists(kKineto))
    QSKIP("../shared/traces/kineto is not beside the checkout");
  const TraceData t = importChromeTrace(kKineto + "ns-resolution-rank0.json.gz");
  const CommVolume v = computeCommVolume(t);
  std::map<std::string, std::int64_t> counts;
  for (const OpTotal& o : v.ops) {
    if (o.name.rfind("record_param_comms", 0) == 0) {
      counts[o.name] = o.count;
      QCOMPARE(o.bytes, std::int64_t{0});  // a group of one sends nothing
    }
  }
  const std::map<std::string, std::int64_t> expected{{"record_param_comms:allreduce", 25},
                                                     {"record_param_comms:broadcast", 10},
                                                     {"record_param_comms:wait", 10}};
  QCOMPARE(counts, expected);
  QCOMPARE(v.matrix.total(), std::int64_t{0});
}

QTEST_GUILESS_MAIN(TestKinetoComms)
#include "test_kineto_comms.moc"
