// The GPU GEMM peak probe: bad arguments are refused with their reason before any device work
// (on any machine), and on a device each precision's figure is the definition's 2 n^3 / time.
#include <QtTest>

#include "core/common/error.h"
#include "core/cuda/device.h"
#include "core/cuda/gemm_peak.h"
#include "tests/gpu/require_device.h"

using namespace parascope;

class TestGemmPeak : public QObject {
  Q_OBJECT
 private slots:
  void refusesBadArguments();
  void precisionsHaveTheirNames();
  void ratesFollowTheirDefinition();
};

void TestGemmPeak::refusesBadArguments() {
  auto message = [](int device, int n, int reps) {
    try {
      cuda::measureGemm(device, cuda::GemmPrecision::F32, n, reps);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  QCOMPARE(message(0, 0, 5),
           std::string("GEMM peak: size and repetitions must be at least 1 (got size 0, 5 "
                       "repetitions)"));
  QCOMPARE(message(0, 64, 0),
           std::string("GEMM peak: size and repetitions must be at least 1 (got size 64, 0 "
                       "repetitions)"));
  const int count = cuda::deviceCount();
  QCOMPARE(message(count, 64, 1), "GEMM peak: CUDA device " + std::to_string(count) +
                                      " does not exist (" + std::to_string(count) + " visible)");
  QCOMPARE(message(-1, 64, 1),
           "GEMM peak: CUDA device -1 does not exist (" + std::to_string(count) + " visible)");
}

void TestGemmPeak::precisionsHaveTheirNames() {
  std::vector<std::string> names;
  for (cuda::GemmPrecision p : cuda::allPrecisions()) names.emplace_back(cuda::precisionName(p));
  QCOMPARE(names, (std::vector<std::string>{"fp32", "tf32", "bf16", "fp16"}));
}

void TestGemmPeak::ratesFollowTheirDefinition() {
  REQUIRE_DEVICE("the probe is built");
  for (cuda::GemmPrecision p : cuda::allPrecisions()) {
    const cuda::GemmRate r = cuda::measureGemm(0, p, 1024, 3);
    QCOMPARE(r.n, 1024);
    QCOMPARE(r.reps, 3);
    QVERIFY(r.secondsPerCall > 0);
    QCOMPARE(r.flopsPerSecond, 2.0 * 1024.0 * 1024.0 * 1024.0 / r.secondsPerCall);
    qInfo("%s: %.1f TFLOP/s at n = 1024", std::string(cuda::precisionName(p)).c_str(),
          r.flopsPerSecond / 1e12);
  }
}

QTEST_GUILESS_MAIN(TestGemmPeak)
#include "test_gemm_peak.moc"
