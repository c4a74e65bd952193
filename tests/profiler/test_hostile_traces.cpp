// Hostile traces against analyze's arithmetic and memory (issue 16, items 5 and 8): timestamps
// near the int64 range, byte counts near INT64_MAX, 20k distinct peers, an out-of-range rank,
// a gzip bomb. Run under UBSan, any signed overflow fails the suite.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/resource.h>
#include <zlib.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include "core/common/error.h"
#include "profiler/analysis/breakdown.h"
#include "profiler/analysis/bubbles.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"
#include "profiler/io/trace_file.h"
#include "tests/input_probes.h"
#include "trace_builder.h"

using namespace parascope;
using parascope::test::userErrorOf;
using namespace parascope::profiler;
using namespace parascope::profiler::testing;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Peak resident memory while `f` runs beyond what was resident before it, in KiB: the kernel's
// high-water mark is reset first (clear_refs), so an earlier peak of the suite cannot hide it.
std::int64_t statusKiB(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field)));
  }
  return -1;
}

template <class F>
std::int64_t peakGrowthKiB(F&& f) {
  std::ofstream("/proc/self/clear_refs") << "5";
  const std::int64_t before = statusKiB("VmRSS:");
  f();
  return statusKiB("VmHWM:") - before;
}

std::string gzip(const std::string& text) {
  uLongf size = compressBound(text.size()) + 64;
  std::string out(size, '\0');
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  out.shrink_to_fit();
  deflateEnd(&z);
  return out;
}

}  // namespace

class TestHostileTraces : public QObject {
  Q_OBJECT
 private slots:
  void extremeTimestampsSaturate();
  void extremeByteCountsSaturate();
  void manyPeersCostTheirEventsOnly();
  void ranksBeyondInt32AreRefused();
  void gzipBombsAreRefusedBeforeInflating();
  void streamedImportsHoldTheirWindowNotTheText();
  void longNamesAreClippedAtImport();
  void perRankOutputIsBounded();
  void aFailedPerRankExportLeavesNoPartialSet();
};

// Probe 8: breakdown.cpp's window of a step spanning -9e18 .. 9e18 ns.
void TestHostileTraces::extremeTimestampsSaturate() {
  TraceData t;
  add(t, {.rank = 0,
          .category = Category::Compute,
          .start = -9'000'000'000'000'000'000,
          .end = 9'000'000'000'000'000'000,
          .step = 0});
  add(t, {.rank = 0,
          .category = Category::Communication,
          .start = -9'000'000'000'000'000'000,
          .end = 9'000'000'000'000'000'000,
          .step = 0});
  const auto b = computeBreakdown(t);
  QCOMPARE(b.size(), std::size_t{1});
  QCOMPARE(b[0].windowNs(), kMax);
  QCOMPARE(b[0].computeNs, kMax);
  QVERIFY(b[0].idleNs >= 0);
  computeBubbles(t);
  computeStragglers(t);
}

// Probe 8: comm_volume.cpp's totals of byte counts near INT64_MAX.
void TestHostileTraces::extremeByteCountsSaturate() {
  TraceData t;
  for (int i = 0; i < 3; ++i) {
    Event& e = add(t, {.rank = 0, .category = Category::Communication, .start = 0, .end = 10});
    e.peer = 1;
    e.bytes = kMax - 5;
  }
  const CommVolume v = computeCommVolume(t);
  QCOMPARE(v.matrix.at(0, 1), kMax);
  QCOMPARE(v.matrix.total(), kMax);
  QCOMPARE(v.ops.front().bytes, kMax);
}

// Probe 5: 20k distinct peers used to make a dense 20k x 20k matrix (3.2 GB).
void TestHostileTraces::manyPeersCostTheirEventsOnly() {
  TraceData t;
  for (int p = 1; p <= 20000; ++p) {
    Event& e = add(t, {.rank = 0, .category = Category::Communication, .start = p, .end = p + 1});
    e.peer = p;
    e.bytes = 8;
  }
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  const CommVolume v = computeCommVolume(t);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  QCOMPARE(v.matrix.ranks.size(), std::size_t{20001});
  QCOMPARE(v.matrix.cells.size(), std::size_t{20000});
  QCOMPARE(v.matrix.total(), std::int64_t{160000});
  QVERIFY2(after.ru_maxrss - before.ru_maxrss < 100 * 1024,
           qPrintable(QString::number(after.ru_maxrss - before.ru_maxrss) + " KiB"));
}

// Probe 8: distributedInfo.rank 99999999999 silently became 1215752191.
void TestHostileTraces::ranksBeyondInt32AreRefused() {
  const std::string text = R"({"distributedInfo": {"rank": 99999999999}, "traceEvents": []})";
  QVERIFY2(userErrorOf([&] { importChromeTraceFromMemory(text, "t.json"); })
               .contains("distributedInfo.rank = 99999999999 is out of range; allowed "
                         "0..2147483647"),
           qPrintable(userErrorOf([&] { importChromeTraceFromMemory(text, "t.json"); })));
}

// Probe 5: a gzip bomb took 8.4 GB before it was refused.
void TestHostileTraces::gzipBombsAreRefusedBeforeInflating() {
  const std::string bomb = gzip(std::string(64 << 20, ' '));  // 64 MiB of spaces, ~64 KiB
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  QCOMPARE(userErrorOf([&] { gunzipBounded(bomb, 1 << 20, "bomb.json.gz"); }),
           QString("bomb.json.gz: states an inflated size of 67108864 bytes, more than the "
                   "import limit of 1048576"));
  // A trailer that lies (claims 1 KiB) is caught as soon as the output passes it; it may also be
  // a valid gzip of 4 GiB + 1 KiB (the trailer is the size modulo 4 GiB): not called corrupt
  // outright.
  std::string liar = bomb;
  liar[liar.size() - 4] = 0;
  liar[liar.size() - 3] = 4;
  liar[liar.size() - 2] = 0;
  liar[liar.size() - 1] = 0;
  QCOMPARE(userErrorOf([&] { gunzipBounded(liar, 1 << 20, "liar.json.gz"); }),
           QString("liar.json.gz: inflates past the 1024 bytes its gzip trailer states (the size "
                   "modulo 4 GiB): corrupt, or more than the import limit of 1048576 bytes"));
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  QVERIFY2(after.ru_maxrss - before.ru_maxrss < 16 * 1024,
           qPrintable(QString::number(after.ru_maxrss - before.ru_maxrss) + " KiB"));
  QCOMPARE(gunzipBounded(gzip("{}"), 1 << 20, "ok.json.gz"), std::string("{}"));
}

// 1 MB of gzip inflating to 1 GiB of '[' took 5.2 GB to import, the text and the parser's index
// of all of it. The import streams now: what it holds is its window and its events. The second
// '[' is refused where it stands; a nesting too deep, and an event too long, as soon as they
// pass their bound.
void TestHostileTraces::streamedImportsHoldTheirWindowNotTheText() {
  const std::string brackets = gzip(std::string(std::size_t{64} << 20, '['));
  QString message;
  const std::int64_t bracketsKiB = peakGrowthKiB(
      [&] { message = userErrorOf([&] { importChromeTraceFromMemory(brackets, "b"); }); });
  QCOMPARE(message,
           QString("b: each trace event must be a JSON object at line 1, column 2 (byte 1)"));
  QVERIFY2(bracketsKiB < 16 * 1024, qPrintable(QString::number(bracketsKiB) + " KiB"));

  std::string nested = R"({"traceEvents":[{"ph":"X","ts":1},)";
  for (int i = 0; i < 2000; ++i) nested += R"({"a":)";
  const std::string deep = gzip(nested);
  QCOMPARE(userErrorOf([&] { importChromeTraceFromMemory(deep, "d"); }),
           QString("d: nested more than 1000 levels deep at line 1, column 5030 (byte 5029)"));

  const std::string huge = gzip(R"({"traceEvents":[{"ph":"X","ts":1},)"
                                "\n"
                                R"( {"name":")" +
                                std::string(kMaxEventBytes, 'x') + R"("}]})");
  QCOMPARE(userErrorOf([&] { importChromeTraceFromMemory(huge, "h"); }),
           QString("h: an event of more than 67108864 bytes, the import limit for one event at "
                   "line 2, column 2 (byte 36)"));

  // A real trace of 64 MiB of JSON (4096 events of 16 KiB of args each, which are counted, not
  // kept), inflated as it is read: the import holds a few windows, not the text.
  std::string text = R"({"parascopeVersion":1,"traceEvents":[)";
  const std::string args =
      std::string(",\"args\":{\"pad\":\"") + std::string(16 << 10, 'p') + "\"}}";
  for (int i = 0; i < 4096; ++i) {
    text += (i ? ",\n" : "") + std::string(R"({"ph":"X","name":"step","pid":0,"tid":0,"ts":)") +
            std::to_string(i) + R"(,"dur":1)" + args;
  }
  text += "]}";
  const std::string packed = gzip(text);
  text.clear();
  text.shrink_to_fit();
  ImportOptions o;
  o.windowBytes = 1 << 20;
  TraceData t;
  const std::int64_t traceKiB =
      peakGrowthKiB([&] { t = importChromeTraceFromMemory(packed, "p", o); });
  QCOMPARE(t.events.size(), std::size_t{4096});
  QCOMPARE(t.events[4095].startNs, std::int64_t{4'095'000});
  QCOMPARE(std::string(t.argsOf(t.events[0])), std::string(R"j("(args left out, over 4 KiB)":1)j"));
  qInfo("64 MiB of JSON imported holding %lld KiB at its peak", static_cast<long long>(traceKiB));
  QVERIFY2(traceKiB < 32 * 1024, qPrintable(QString::number(traceKiB) + " KiB"));

  // What is judged before an import: the window and the events at the density of typical traces.
  QCOMPARE(userErrorOf([&] {
             checkImportMemory("big.json.gz", std::size_t{16} << 30, 4.0 * (1 << 30), 4 << 20);
           }),
           QString("big.json.gz: importing its 17179869184 bytes of JSON needs about 11.0 GiB of "
                   "memory (11.0 GiB for its events, 28.0 MiB for the text parsed at a time), "
                   "more than the 4.0 GiB available"));
  checkImportMemory("fits.json", std::size_t{1} << 30, 1.0 * (1 << 30), 4 << 20);
}

// A trace declaring more ranks than any run has wrote one file per rank, 45,633 of them in
// 120 s for 100k ranks; refused now before any file is written.
void TestHostileTraces::perRankOutputIsBounded() {
  QTemporaryDir dir;
  TraceData t;
  for (int r = 0; r <= static_cast<int>(kMaxPerRankFiles); ++r) {
    add(t, {.rank = r, .start = 0, .end = 1});
  }
  const std::string pattern = dir.filePath("run.json").toStdString();
  QCOMPARE(userErrorOf([&] { exportChromeTracePerRank(t, pattern); }),
           QString("per-rank output: the trace has 4097 ranks, more files than the 4096 one "
                   "command writes; write it as one file (without --per-rank)"));
  QCOMPARE(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).size(), 0);
}

// A write that fails part-way (here rank 2's file over a file-size limit, as a full disk fails)
// removes the files of ranks 0 and 1 it had written: no partial set.
void TestHostileTraces::aFailedPerRankExportLeavesNoPartialSet() {
  QTemporaryDir dir;
  TraceData t;
  add(t, {.rank = 0, .start = 0, .end = 1});
  add(t, {.rank = 1, .start = 0, .end = 1});
  for (int i = 0; i < 20000; ++i) add(t, {.rank = 2, .start = i, .end = i + 1});
  const std::string pattern = dir.filePath("run.json").toStdString();
  signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 64 << 10;
  setrlimit(RLIMIT_FSIZE, &small);
  QString failure = "(no error)";
  try {
    exportChromeTracePerRank(t, pattern);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, SIG_DFL);
  QVERIFY2(failure.contains("run.rank2.json': write failed: File too large"), qPrintable(failure));
  QCOMPARE(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries), QStringList());
}

QTEST_GUILESS_MAIN(TestHostileTraces)
#include "test_hostile_traces.moc"

// Long names are clipped once, at import, to kMaxNameBytes at a UTF-8 character boundary, with a
// marker of the size they had: ten 30 MB span names took the workbench 104 s to first draw.
void TestHostileTraces::longNamesAreClippedAtImport() {
  QCOMPARE(kMaxNameBytes, std::size_t{1024});
  const std::string big(3'000'000, 'x');
  // "é" is two bytes: the 1024th byte is the first half of one, so the cut falls before it.
  const std::string accents =
      std::string(1023, 'a') + std::string(100, 'b').replace(0, 2, "\xc3\xa9");
  const std::string exact(1024, 'y');
  const std::string json = R"({"traceEvents":[)"
                           R"({"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":")" +
                           big +
                           R"("}},)"
                           R"({"ph":"X","name":")" +
                           big +
                           R"(","pid":0,"tid":1,"ts":1,"dur":1},)"
                           R"({"ph":"X","name":")" +
                           accents +
                           R"(","pid":0,"tid":1,"ts":3,"dur":1},)"
                           R"({"ph":"X","name":")" +
                           exact +
                           R"(","pid":0,"tid":1,"ts":5,"dur":1},)"
                           R"({"ph":"C","name":")" +
                           big + R"(","pid":0,"tid":1,"ts":7,"args":{"v":-5}}]})";
  const TraceData t = importChromeTraceFromMemory(json, "long names");
  QCOMPARE(t.events.size(), std::size_t{4});
  const std::string clipped = std::string(1024, 'x') + "... [clipped from 3000000 bytes]";
  QCOMPARE(std::string(t.events[0].name), clipped);
  QCOMPARE(std::string(t.events[1].name), std::string(1023, 'a') + "... [clipped from 1123 bytes]");
  QCOMPARE(std::string(t.events[2].name), exact);  // at the bound: as it was
  QCOMPARE(std::string(t.events[3].name), clipped);
  QCOMPARE(t.events[3].bytes, std::int64_t{-5});
  QCOMPARE(t.laneName(t.events[0].rank, t.events[0].lane), clipped);
  QCOMPARE(clipName(exact), exact);
}
