// Real PyTorch profiler traces import and analyse: Kineto traces from real jobs (optional,
// ../shared/traces/kineto beside the checkout) and the committed torch 1.13 fixtures made by
// make_torch_traces.py. Expected breakdowns come from an independent Python reference (the
// same definitions over the raw JSON with exact decimal arithmetic), run once when the files
// were added.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

#include "profiler/analysis/breakdown.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"

using namespace parascope::profiler;
namespace lane = parascope::trace::lane;

namespace {

const std::string kFixtures = std::string(PARASCOPE_SOURCE_DIR) + "/tests/profiler/fixtures/";
const std::string kKineto = std::string(PARASCOPE_SOURCE_DIR) + "/../shared/traces/kineto/";

struct Expected {
  std::int32_t step;
  std::int64_t window, compute, comm, exposed, other, idle;
};

void checkBreakdown(const TraceData& t, const std::vector<Expected>& expected, bool gpu) {
  const auto rows = computeBreakdown(t);
  QCOMPARE(rows.size(), expected.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const StepBreakdown& r = rows[i];
    const Expected& x = expected[i];
    QCOMPARE(r.step, x.step);
    QCOMPARE(r.gpu, gpu);
    QCOMPARE(r.windowNs(), x.window);
    QCOMPARE(r.computeNs, x.compute);
    QCOMPARE(r.communicationNs, x.comm);
    QCOMPARE(r.exposedCommunicationNs, x.exposed);
    QCOMPARE(r.otherNs, x.other);
    QCOMPARE(r.idleNs, x.idle);
  }
}

std::size_t count(const TraceData& t, Category c, bool gpu) {
  return static_cast<std::size_t>(
      std::count_if(t.events.begin(), t.events.end(),
                    [&](const Event& e) { return e.category == c && lane::isGpu(e.lane) == gpu; }));
}

}  // namespace

class TestTorchTraces : public QObject {
  Q_OBJECT
 private slots:
  void kinetoGpuRanks();
  void kinetoCpuOnlyRank();
  void torchCpuModel();
  void torchGlooTwoRanks();
};

void TestTorchTraces::kinetoGpuRanks() {
  if (!std::filesystem::exists(kKineto)) QSKIP("no Kineto traces at ../shared/traces/kineto");
  const TraceData r0 = importChromeTrace(kKineto + "sampled-rank0.json.gz");
  QCOMPARE(r0.worldSize, 128);
  QCOMPARE(r0.ranks(), std::vector<std::int32_t>{0});
  QCOMPARE(count(r0, Category::Communication, true), std::size_t{10});  // NCCL kernels
  QCOMPARE(count(r0, Category::Compute, true), std::size_t{1144});      // other kernels
  QCOMPARE(count(r0, Category::Memcpy, true), std::size_t{40});
  QCOMPARE(count(r0, Category::Memset, true), std::size_t{10});
  QCOMPARE(count(r0, Category::Step, false), std::size_t{2});
  // Launches link to their kernels: every cudaLaunchKernel is a flow source.
  const auto sources = std::count_if(r0.events.begin(), r0.events.end(), [](const Event& e) {
    return e.flags & parascope::trace::flag::kFlowSource;
  });
  QVERIFY(sources > 1000);
  checkBreakdown(r0,
                 {{551, 607312000, 106252000, 195327000, 172259000, 169000, 328632000},
                  {552, 622928000, 104068000, 200872000, 164724000, 184000, 353952000}},
                 true);
  const TraceData r1 = importChromeTrace(kKineto + "sampled-rank1.json.gz");
  QCOMPARE(r1.ranks(), std::vector<std::int32_t>{1});
  checkBreakdown(r1,
                 {{551, 607904000, 135548000, 168027000, 134336000, 2119000, 335901000},
                  {552, 630639000, 136425000, 211026000, 169187000, 2435000, 322592000}},
                 true);
  // Converted to ours and back, the analyses give the same answer.
  QTemporaryDir dir;
  const std::string ours = dir.filePath("kineto-r0.json").toStdString();
  exportChromeTrace(r0, ours);
  checkBreakdown(importChromeTrace(ours),
                 {{551, 607312000, 106252000, 195327000, 172259000, 169000, 328632000},
                  {552, 622928000, 104068000, 200872000, 164724000, 184000, 353952000}},
                 true);
}

void TestTorchTraces::kinetoCpuOnlyRank() {
  if (!std::filesystem::exists(kKineto)) QSKIP("no Kineto traces at ../shared/traces/kineto");
  const TraceData t = importChromeTrace(kKineto + "cpu-only-rank34.json.gz");
  QCOMPARE(t.worldSize, 300);
  QCOMPARE(t.ranks(), std::vector<std::int32_t>{34});
  QCOMPARE(t.rankNames.at(34), std::string("pyper:trainer:8:2"));
  checkBreakdown(t, {{551, 210109162, 0, 178777427, 178777427, 0, 31331735}}, false);
  const CommVolume v = computeCommVolume(t);
  QCOMPARE(v.ops.size(), std::size_t{1});
  QCOMPARE(v.ops[0].name, std::string("gloo:all_reduce"));
  QCOMPARE(v.ops[0].count, std::int64_t{10});
}

void TestTorchTraces::torchCpuModel() {
  const TraceData t = importChromeTrace(kFixtures + "torch_cpu_mlp.json.gz");
  QCOMPARE(t.events.size(), std::size_t{290});
  QCOMPARE(count(t, Category::Step, false), std::size_t{2});
  QVERIFY(count(t, Category::Optimizer, false) >= 2);
  checkBreakdown(t, {{0, 750000, 493000, 0, 0, 0, 257000}, {1, 342000, 188000, 0, 0, 0, 154000}},
                 false);
  // Every op inside a step window is tagged with that step.
  for (const Event& e : t.events) {
    if (std::string_view(e.name) == "aten::addmm") QVERIFY(e.step == 0 || e.step == 1);
  }
}

void TestTorchTraces::torchGlooTwoRanks() {
  TraceData t;
  for (int rank = 0; rank < 2; ++rank) {
    ImportOptions o;
    o.defaultRank = rank;  // torch 1.13 traces do not record their rank
    t.merge(
        importChromeTrace(kFixtures + "torch_gloo_rank" + std::to_string(rank) + ".json.gz", o));
  }
  t.sortByTime();
  QCOMPARE(t.ranks(), (std::vector<std::int32_t>{0, 1}));
  const auto rows = computeBreakdown(t);
  QCOMPARE(rows.size(), std::size_t{4});
  const Expected expected[] = {{0, 2073000, 459000, 1137000, 1137000, 0, 477000},
                               {1, 3659000, 325000, 2707000, 2707000, 0, 627000},
                               {0, 2069000, 404000, 1252000, 1252000, 0, 413000},
                               {1, 3672000, 288000, 2774000, 2774000, 0, 610000}};
  for (std::size_t i = 0; i < 4; ++i) {
    QCOMPARE(rows[i].rank, static_cast<std::int32_t>(i / 2));
    QCOMPARE(rows[i].step, expected[i].step);
    QCOMPARE(rows[i].computeNs, expected[i].compute);
    QCOMPARE(rows[i].communicationNs, expected[i].comm);
    QCOMPARE(rows[i].idleNs, expected[i].idle);
  }
  // Four parameter tensors all-reduced in each of two steps, on both ranks.
  const CommVolume v = computeCommVolume(t);
  QCOMPARE(v.ops.size(), std::size_t{2});
  QCOMPARE(v.ops[0].name, std::string("c10d::allreduce_"));
  QCOMPARE(v.ops[0].count, std::int64_t{16});
  QCOMPARE(v.ops[1].name, std::string("gloo:all_reduce"));
  QCOMPARE(v.ops[1].count, std::int64_t{16});
  // The collectives match across the two ranks (2 ops x 8 calls each).
  const auto s = computeStragglers(t);
  QCOMPARE(s.size(), std::size_t{2});
  QCOMPARE(s[0].collectives + s[1].collectives, std::int64_t{32});
}

QTEST_GUILESS_MAIN(TestTorchTraces)
#include "test_torch_traces.moc"
