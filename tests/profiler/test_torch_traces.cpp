// PyTorch profiler traces import and analyse: the committed Kineto fixtures
// (tests/fixtures/kineto, written by tests/tools/make_kineto_fixtures.py, expected values
// worked out by hand from its tables), Kineto traces from real jobs (optional,
// ../shared/traces/kineto beside the checkout) and the committed torch 1.13 fixtures made by
// make_torch_traces.py. Expected breakdowns of the real traces come from an independent Python
// reference (the same definitions over the raw JSON with exact decimal arithmetic), run once
// when the files were added.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <set>

#include "profiler/analysis/breakdown.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"

using namespace parascope::profiler;
namespace lane = parascope::trace::lane;

namespace {

const std::string kFixtures = std::string(PARASCOPE_SOURCE_DIR) + "/tests/profiler/fixtures/";
const std::string kKinetoFixtures = std::string(PARASCOPE_SOURCE_DIR) + "/tests/fixtures/kineto/";
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

std::size_t flowSources(const TraceData& t) {
  return static_cast<std::size_t>(
      std::count_if(t.events.begin(), t.events.end(),
                    [](const Event& e) { return e.flags & parascope::trace::flag::kFlowSource; }));
}

// GPU spans whose correlation id is a flow source's: the ops linked to their launches.
std::size_t launchedGpuOps(const TraceData& t) {
  std::set<std::uint64_t> sources;
  for (const Event& e : t.events) {
    if (e.flags & parascope::trace::flag::kFlowSource) sources.insert(e.correlation);
  }
  return static_cast<std::size_t>(std::count_if(
      t.events.begin(), t.events.end(),
      [&](const Event& e) { return lane::isGpu(e.lane) && sources.count(e.correlation) > 0; }));
}

// The first event of that name, or a default Event (step -1, time 0) where there is none.
Event firstNamed(const TraceData& t, std::string_view name) {
  auto it = std::find_if(t.events.begin(), t.events.end(),
                         [&](const Event& e) { return std::string_view(e.name) == name; });
  return it == t.events.end() ? Event{} : *it;
}

}  // namespace

class TestTorchTraces : public QObject {
  Q_OBJECT
 private slots:
  void kinetoGpuRanks();
  void kinetoCpuOnlyRank();
  void realKinetoGpuRanks();
  void realKinetoCpuOnlyRank();
  void torchCpuModel();
  void torchGlooTwoRanks();
};

// Two ranks of an 8-rank NCCL job (gpu-rank0/1.json.gz). Times below are microseconds after the
// script's base. Rank 0, stream 7: a kernel at [50, 90) before any step, copy [110, 130), kernels
// [130, 330) [330, 450), memset [460, 470), kernel [750, 800), copy [800, 820), kernel
// [950, 1050) across the step boundary, kernel [1100, 1400), memset [1500, 1510), kernel
// [1800, 1900), copy [1950, 2050) past the last step; stream 20 (NCCL): [400, 700),
// [1300, 1500), [1600, 1700). Steps 10 = [100, 1000), 11 = [1000, 2000).
//   step 10: compute [130, 450) + [750, 800) + [950, 1000) = 320 + 50 + 50 = 420;
//            communication 300, of it under compute [400, 450) = 50, exposed 250;
//            other: copies [110, 130) and [800, 820) = 40 (the memset lies inside the
//            all-reduce); busy 570 + 50 + 50 + 40 = 710 of 900, idle 190.
//   step 11: compute 50 + 300 + 100 = 450; communication 200 + 100 = 300, exposed
//            [1400, 1500) + [1600, 1700) = 200; other: memset 10 + copy [1950, 2000) 50 = 60;
//            busy 50 + 400 + 100 + 100 + 60 = 710 of 1000, idle 290.
// Rank 1 is shifted by 5 us, has no kernel before the first step, an all-reduce of 400 us
// ([405, 805)) and the kernel before the second one 350 us long ([1105, 1455)):
//   step 10: compute 420; communication 400, under compute [405, 455) + [755, 805) = 100,
//            exposed 300; other 40; busy [135, 805) 670 + 50 + 40 = 760 of 900, idle 140.
//   step 11: compute 50 + 350 + 100 = 500; communication 300, exposed [1455, 1505) 50 + 100 =
//            150; other 60; idle 290 as on rank 0.
void TestTorchTraces::kinetoGpuRanks() {
  const std::vector<Expected> rank0{{10, 900'000, 420'000, 300'000, 250'000, 40'000, 190'000},
                                    {11, 1'000'000, 450'000, 300'000, 200'000, 60'000, 290'000}};
  const TraceData r0 = importChromeTrace(kKinetoFixtures + "gpu-rank0.json.gz");
  QCOMPARE(r0.worldSize, 8);
  QCOMPARE(r0.ranks(), std::vector<std::int32_t>{0});
  QCOMPARE(r0.rankNames.at(0), std::string("trainer:0"));
  QCOMPARE(count(r0, Category::Communication, true), std::size_t{3});  // NCCL kernels
  QCOMPARE(count(r0, Category::Compute, true), std::size_t{7});        // other kernels
  QCOMPARE(count(r0, Category::Memcpy, true), std::size_t{3});
  QCOMPARE(count(r0, Category::Memset, true), std::size_t{2});
  QCOMPARE(count(r0, Category::Step, false), std::size_t{2});
  QCOMPARE(count(r0, Category::Communication, false), std::size_t{3});  // "nccl:..." annotations
  QCOMPARE(count(r0, Category::Sync, false), std::size_t{1});           // cudaStreamSynchronize
  // 15 launches (cudaLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync) and cudaEventRecord are
  // flow sources; the synchronisation is not. Each of the 15 GPU ops links to its launch.
  QCOMPARE(flowSources(r0), std::size_t{16});
  QCOMPARE(launchedGpuOps(r0), std::size_t{15});
  // Whole microseconds to ns; host ops inside a step window carry its step, the rest none.
  QCOMPARE(firstNamed(r0, "ProfilerStep#10").startNs, std::int64_t{1'700'000'000'000'100'000});
  QCOMPARE(firstNamed(r0, "aten::fill_").endNs, std::int64_t{1'700'000'000'000'037'000});
  QCOMPARE(firstNamed(r0, "aten::fill_").step, -1);                // [28, 37)
  QCOMPARE(firstNamed(r0, "nccl:all_reduce").step, 10);            // [378, 390)
  QCOMPARE(firstNamed(r0, "Optimizer.step#AdamW.step").step, 11);  // [1770, 1800)
  QCOMPARE(static_cast<int>(firstNamed(r0, "Optimizer.step#AdamW.step").category),
           static_cast<int>(Category::Optimizer));
  checkBreakdown(r0, rank0, true);

  const TraceData r1 = importChromeTrace(kKinetoFixtures + "gpu-rank1.json.gz");
  QCOMPARE(r1.ranks(), std::vector<std::int32_t>{1});
  QCOMPARE(count(r1, Category::Compute, true), std::size_t{6});
  QCOMPARE(flowSources(r1), std::size_t{15});
  QCOMPARE(launchedGpuOps(r1), std::size_t{14});
  checkBreakdown(r1,
                 {{10, 900'000, 420'000, 400'000, 300'000, 40'000, 140'000},
                  {11, 1'000'000, 500'000, 300'000, 150'000, 60'000, 290'000}},
                 true);
  // Converted to ours and back, the analyses give the same answer.
  QTemporaryDir dir;
  const std::string ours = dir.filePath("kineto-r0.json").toStdString();
  exportChromeTrace(r0, ours);
  checkBreakdown(importChromeTrace(ours), rank0, true);
}

// A CPU-only rank of a 6-rank gloo job (cpu-only-rank3.json), times in us after the base with
// Kineto's three decimals. Step 7 = [100.250, 1100.750): 1000.5 us. All-reduces on two
// threads: [150.125, 450.625) and [400.500, 600.500) (together 450.375), [700, 900) (200) and
// [1050.250, 1200.250) (50.5 inside the step): communication 700.875. Compute: aten::empty
// [95, 105) clipped to 4.75, aten::add [460, 480) 20 (under an all-reduce), aten::mul 10,
// Optimizer.step 40: 74.75; exposed communication 700.875 - 20 = 680.875. Other: the data
// loader [110, 140) 30. Idle 1000.5 - (700.875 + 74.75 - 20 + 30) = 214.875.
void TestTorchTraces::kinetoCpuOnlyRank() {
  const TraceData t = importChromeTrace(kKinetoFixtures + "cpu-only-rank3.json");
  QCOMPARE(t.worldSize, 6);
  QCOMPARE(t.ranks(), std::vector<std::int32_t>{3});
  QCOMPARE(t.rankNames.at(3), std::string("trainer:3"));
  // Host threads become lanes in order of first appearance, named by thread_name.
  QCOMPARE(t.laneName(3, lane::kFirstThread), std::string("thread 901 (python3)"));
  QCOMPARE(t.laneName(3, lane::kFirstThread + 2), std::string("thread 900 (python3)"));
  QCOMPARE(count(t, Category::Step, false), std::size_t{1});
  QCOMPARE(firstNamed(t, "gloo:all_reduce").startNs, std::int64_t{1'300'000'000'000'150'125});
  checkBreakdown(t, {{7, 1'000'500, 74'750, 700'875, 680'875, 30'000, 214'875}}, false);
  const CommVolume v = computeCommVolume(t);
  QCOMPARE(v.ops.size(), std::size_t{1});
  QCOMPARE(v.ops[0].name, std::string("gloo:all_reduce"));
  QCOMPARE(v.ops[0].count, std::int64_t{4});
  QCOMPARE(v.ops[0].bytes, std::int64_t{0});  // gloo says no sizes
  QCOMPARE(v.ops[0].timeNs, std::int64_t{300'500 + 200'000 + 200'000 + 150'000});
  QCOMPARE(v.matrix.total(), std::int64_t{0});
}

void TestTorchTraces::realKinetoGpuRanks() {
  if (!std::filesystem::exists(kKineto)) QSKIP("no Kineto traces at ../shared/traces/kineto");
  const TraceData r0 = importChromeTrace(kKineto + "sampled-rank0.json.gz");
  QCOMPARE(r0.worldSize, 128);
  QCOMPARE(r0.ranks(), std::vector<std::int32_t>{0});
  QCOMPARE(count(r0, Category::Communication, true), std::size_t{10});  // NCCL kernels
  QCOMPARE(count(r0, Category::Compute, true), std::size_t{1144});      // other kernels
  QCOMPARE(count(r0, Category::Memcpy, true), std::size_t{40});
  QCOMPARE(count(r0, Category::Memset, true), std::size_t{10});
  QCOMPARE(count(r0, Category::Step, false), std::size_t{2});
  // Launches link to their GPU work: 1154 cudaLaunchKernel, 40 cudaMemcpyAsync and 10
  // cudaMemsetAsync, each with a correlation id, are flow sources.
  QCOMPARE(flowSources(r0), std::size_t{1154 + 40 + 10});
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

void TestTorchTraces::realKinetoCpuOnlyRank() {
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
  // Optimizer.zero_grad#SGD.zero_grad and Optimizer.step#SGD.step in each of the two steps.
  QCOMPARE(count(t, Category::Optimizer, false), std::size_t{4});
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
