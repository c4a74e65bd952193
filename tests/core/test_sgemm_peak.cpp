// The sgemm peak probe and its per-machine cache: samples made 30x slow by other work (a fake
// clock says so) do not lower the peak, which is the fast sample's rate exactly; the probe stops
// once its budget has passed; the cache round-trips, keeps the maximum, and ignores a corrupt
// file or another machine's, which the next store replaces atomically. Every test runs under a
// temporary XDG_CACHE_HOME, never the user's cache.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/kernels/fma_peak.h"
#include "core/kernels/sgemm_peak.h"

using namespace parascope::kernels;
namespace fs = std::filesystem;

namespace {

// Dyadic durations: every time the fake clock returns, and every difference of two, is exact.
constexpr double kFast = 1.0 / 512;  // seconds of one fast sample
constexpr double kSlow = 30 * kFast;
constexpr double kGap = 1.0 / 1024;  // between one sample's end and the next one's start

// A clock read as the probe reads it: once at the start, then before and after each sample.
// Sample i takes durations[i % size] seconds.
struct FakeClock {
  QList<double> durations;
  double now = 0;
  int reads = 0;
  int samples = 0;
  double lastDuration = 0;

  double operator()() {
    const int read = reads++;
    if (read == 0) return now;
    if (read % 2 == 1) return now += kGap;  // a sample starts
    lastDuration = durations[samples++ % durations.size()];
    return now += lastDuration;
  }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void writeFile(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A valid entry of the cache format for `cache`'s machine, with one key changed.
QByteArray entryWith(const SgemmPeakCache& cache, const char* key, const nlohmann::json& value) {
  nlohmann::json j = {{"format", "parascope-sgemm-peak"},
                      {"version", 2},
                      {"cpu", cache.cpu},
                      {"sgemm_kernels", cache.kernels},
                      {"sgemm_build", cache.build},
                      {"sgemm_size", kSgemmPeakSize},
                      {"flops_per_second", 1e11}};
  j[key] = value;
  return QByteArray::fromStdString(j.dump());
}

}  // namespace

class TestSgemmPeak : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void init();
  void keepsTheFastSample_data();
  void keepsTheFastSample();
  void measuresThisMachine();
  void cachePathFollowsXdg();
  void cacheRoundTripsAndKeepsTheMaximum();
  void ignoresAndReplacesAForeignOrCorruptFile_data();
  void ignoresAndReplacesAForeignOrCorruptFile();
  void unwritableCacheIsNotFatal();
  void sgemmPeakMeasuresOnlyWithoutACache();
  void fmaPeakTimesTheWidestUnitsThisCpuHas();

 private:
  QTemporaryDir cacheHome_;
  std::string path_;
};

void TestSgemmPeak::initTestCase() {
  QVERIFY(cacheHome_.isValid());
  qputenv("XDG_CACHE_HOME", cacheHome_.path().toUtf8());
  path_ = cacheHome_.path().toStdString() + "/parascope/sgemm_peak.json";
}

void TestSgemmPeak::init() {
  fs::remove_all(cacheHome_.path().toStdString() + "/parascope");
}

void TestSgemmPeak::keepsTheFastSample_data() {
  QTest::addColumn<QList<double>>("durations");
  QTest::newRow("slow first sample") << QList<double>{kSlow, kFast, kFast, kFast};
  QTest::newRow("one fast sample in three") << QList<double>{kSlow, kSlow, kFast};
  QTest::newRow("fast, then only slow")
      << QList<double>{kFast, kSlow, kSlow, kSlow, kSlow, kSlow, kSlow, kSlow, kSlow, kSlow};
}

void TestSgemmPeak::keepsTheFastSample() {
  QFETCH(QList<double>, durations);
  FakeClock clock{durations};
  const double peak = measureSgemmPeak(std::ref(clock));
  QCOMPARE(peak, kSgemmPeakFlops / kFast);
  QVERIFY(peak == kSgemmPeakFlops / kFast);  // QCOMPARE on doubles is fuzzy
  // Sampling stopped with the first sample that ended past the budget.
  QVERIFY2(clock.now >= kSgemmPeakBudgetSeconds, qPrintable(QString::number(clock.now)));
  QVERIFY(clock.now - clock.lastDuration - kGap < kSgemmPeakBudgetSeconds);
  QCOMPARE(clock.reads, 1 + 2 * clock.samples);
  // The same on OpenBLAS, whichever library the products use (bench step's PyTorch peak).
  FakeClock openblas{durations};
  QVERIFY(measureSgemmPeak(SgemmLibrary::OpenBlas, std::ref(openblas)) == peak);
  QCOMPARE(openblas.samples, clock.samples);
}

void TestSgemmPeak::measuresThisMachine() {
  const double start = steadySeconds();
  const double peak = measureSgemmPeak();
  const double seconds = steadySeconds() - start;
  // Any x86-64 core does well over 1 GFLOP/s in sgemm; the time is about the budget.
  QVERIFY2(std::isfinite(peak) && peak > 1e9, qPrintable(QString::number(peak)));
  QVERIFY2(seconds < 4 * kSgemmPeakBudgetSeconds, qPrintable(QString::number(seconds)));
}

void TestSgemmPeak::cachePathFollowsXdg() {
  QCOMPARE(QString::fromStdString(sgemmPeakCachePath()), QString::fromStdString(path_));
  const QByteArray home = qgetenv("HOME");
  qputenv("HOME", "/home/someone");
  qputenv("XDG_CACHE_HOME", "relative/dir");  // not absolute: ignored, as the spec says
  QCOMPARE(QString::fromStdString(sgemmPeakCachePath()),
           QStringLiteral("/home/someone/.cache/parascope/sgemm_peak.json"));
  qunsetenv("XDG_CACHE_HOME");
  qunsetenv("HOME");
  QCOMPARE(QString::fromStdString(sgemmPeakCachePath()), QString());
  QVERIFY(!SgemmPeakCache::thisMachine().read().has_value());
  QCOMPARE(SgemmPeakCache::thisMachine().raise(2e10), 2e10);  // nothing written, nowhere
  qputenv("HOME", home);
  qputenv("XDG_CACHE_HOME", cacheHome_.path().toUtf8());
  QCOMPARE(QString::fromStdString(sgemmPeakCachePath()), QString::fromStdString(path_));
  QVERIFY(!fs::exists(path_));
}

void TestSgemmPeak::cacheRoundTripsAndKeepsTheMaximum() {
  const SgemmPeakCache cache = SgemmPeakCache::thisMachine();
  QCOMPARE(QString::fromStdString(cache.path), QString::fromStdString(path_));
  QVERIFY(!cache.cpu.empty() && !cache.kernels.empty() && !cache.build.empty());
  QVERIFY(!cache.read().has_value());
  const double peak = 1.0 / 3 * 3e11;  // not a round number: the file must keep every bit
  QVERIFY(cache.raise(peak) == peak);
  QVERIFY(cache.read() == peak);
  const nlohmann::json file = nlohmann::json::parse(readFile(path_));
  QCOMPARE(file["format"].get<std::string>(), std::string("parascope-sgemm-peak"));
  QCOMPARE(file["cpu"].get<std::string>(), cache.cpu);
  QCOMPARE(file["sgemm_kernels"].get<std::string>(), cache.kernels);
  QCOMPARE(file["sgemm_build"].get<std::string>(), cache.build);
  QCOMPARE(file["sgemm_size"].get<int>(), kSgemmPeakSize);
  // A lower measurement leaves the peak; a higher one raises it.
  QVERIFY(cache.raise(peak / 2) == peak);
  QVERIFY(cache.read() == peak);
  QVERIFY(cache.raise(2 * peak) == 2 * peak);
  QVERIFY(cache.read() == 2 * peak);
  QVERIFY(cache.raise(std::nan("")) == 2 * peak);
  // Only the cache itself is left: temporaries were renamed.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(path_).parent_path())) {
    QCOMPARE(QString::fromStdString(entry.path().string()), QString::fromStdString(path_));
    ++files;
  }
  QCOMPARE(files, 1);
}

void TestSgemmPeak::ignoresAndReplacesAForeignOrCorruptFile_data() {
  const SgemmPeakCache cache = SgemmPeakCache::thisMachine();
  QTest::addColumn<QByteArray>("text");
  QTest::newRow("empty") << QByteArray();
  QTest::newRow("truncated") << entryWith(cache, "cpu", cache.cpu).left(40);
  QTest::newRow("binary") << QByteArray::fromHex("7f454c460000ff");
  QTest::newRow("not an object") << QByteArray("[1e11]");
  QTest::newRow("peak is a string") << entryWith(cache, "flops_per_second", "fast");
  QTest::newRow("peak is negative") << entryWith(cache, "flops_per_second", -1e11);
  QTest::newRow("cpu is a number") << entryWith(cache, "cpu", 7);
  QTest::newRow("another CPU") << entryWith(cache, "cpu", "Another CPU @ 1.00GHz");
  QTest::newRow("other kernels") << entryWith(cache, "sgemm_kernels", "OpenBLAS Prescott");
  QTest::newRow("another library build") << entryWith(cache, "sgemm_build", "OpenBLAS 0.0.1");
  QTest::newRow("another probe size") << entryWith(cache, "sgemm_size", 64);
  QTest::newRow("another version") << entryWith(cache, "version", 1);
  QTest::newRow("another format") << entryWith(cache, "format", "something-else");
  QTest::newRow("larger than a cache can be") << QByteArray(1 << 20, ' ') + "{}";
}

void TestSgemmPeak::ignoresAndReplacesAForeignOrCorruptFile() {
  QFETCH(QByteArray, text);
  writeFile(path_, text.toStdString());
  const SgemmPeakCache cache = SgemmPeakCache::thisMachine();
  QVERIFY(!cache.read().has_value());
  QVERIFY(cache.raise(5e10) == 5e10);  // not the other file's 1e11
  QVERIFY(cache.read() == 5e10);
  QCOMPARE(nlohmann::json::parse(readFile(path_))["cpu"].get<std::string>(), cache.cpu);
}

void TestSgemmPeak::unwritableCacheIsNotFatal() {
  fs::create_directories(path_);  // a directory where the file should be
  const SgemmPeakCache cache = SgemmPeakCache::thisMachine();
  QVERIFY(!cache.read().has_value());
  QVERIFY(cache.raise(5e10) == 5e10);
  QVERIFY(fs::is_directory(path_));
  QVERIFY(!cache.read().has_value());
}

void TestSgemmPeak::sgemmPeakMeasuresOnlyWithoutACache() {
  const SgemmPeakCache cache = SgemmPeakCache::thisMachine();
  QVERIFY(cache.raise(1e15) == 1e15);  // no sgemm reaches it: a measurement would show
  QVERIFY(sgemmPeak() == 1e15);
  fs::remove(path_);
  const double measured = sgemmPeak();
  QVERIFY(measured > 1e9 && measured < 1e15);
  QVERIFY(cache.read() == measured);
}

QTEST_GUILESS_MAIN(TestSgemmPeak)
// The FMA probe picks the widest instructions the CPU reports (asked here of the compiler's own
// CPU check) and keeps its fastest sample, in FLOPs of 2 per lane and multiply-add.
void TestSgemmPeak::fmaPeakTimesTheWidestUnitsThisCpuHas() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const std::string isa = avx512 ? "avx512f" : avx2 ? "avx2+fma" : "sse2";
  const int lanes = avx512 ? 16 : avx2 ? 8 : 4;
  FakeClock clock{{kSlow, kFast, kSlow}};
  const FmaPeak peak = measureFmaPeak(std::ref(clock));
  QCOMPARE(peak.isa, isa);
  QCOMPARE(peak.lanes, lanes);
  const double flops = 2.0 * lanes * kFmaPeakChains * static_cast<double>(kFmaPeakIterations);
  QVERIFY(peak.flopsPerSecond == flops / kFast);
  QVERIFY(clock.now >= kFmaPeakBudgetSeconds);
  QCOMPARE(clock.reads, 1 + 2 * clock.samples);
}

#include "test_sgemm_peak.moc"
