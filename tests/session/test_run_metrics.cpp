// The run metrics' definitions on hand-made step reports, with values chosen so that every
// expected figure is exact: tokens/s, model FLOP/s, MFU against R ranks' peak, exposed
// communication (mean over rank reports), pipeline bubble, and "no value" where one is undefined
// (no peak known, no time, a model without FLOPs per token).
#include <QtTest>

#include <cmath>

#include "core/session/run_metrics.h"

using namespace parascope;

namespace {

StepReport stepOf(std::int64_t tokens, double seconds) {
  StepReport r;
  r.tokens = tokens;
  r.seconds = seconds;
  return r;
}

StepReport rankOf(double seconds, double exposed, double busy, double idle) {
  StepReport r;
  r.seconds = seconds;
  r.exposedCommSeconds = exposed;
  r.pipelineBusySeconds = busy;
  r.pipelineIdleSeconds = idle;
  return r;
}

}  // namespace

class TestRunMetrics : public QObject {
  Q_OBJECT
 private slots:
  void definitions();
  void undefinedHasNoValue();
  void metricsOfSteps();
};

// QCOMPARE on doubles is fuzzy: these must be exact.
#define EXACT(actual, expected) \
  QVERIFY2((actual) == (expected), qPrintable(QString::number(actual, 'g', 17)))

void TestRunMetrics::definitions() {
  EXACT(tokensPerSecond(1000, 0.5), 2000.0);
  EXACT(modelFlopsPerSecond(2000, 3e6), 6e9);
  // 2000 tokens/s x 3 MFLOP per token = 6 GFLOP/s against 4 ranks x 3 GFLOP/s.
  EXACT(modelFlopsUtilization(2000, 3e6, 3e9, 4), 0.5);
  EXACT(modelFlopsUtilization(2000, 3e6, 3e9, 1), 2.0);  // above 1: the peak is stale
  EXACT(exposedCommFraction(0.125, 0.5), 0.25);
  EXACT(exposedCommFraction(0, 0.5), 0.0);
  EXACT(bubbleFraction(0.75, 0.25), 0.25);
  EXACT(bubbleFraction(0, 0), 0.0);  // no pipeline: no bubble
}

void TestRunMetrics::undefinedHasNoValue() {
  QVERIFY(std::isnan(tokensPerSecond(1000, 0)));
  QVERIFY(std::isnan(modelFlopsUtilization(2000, 3e6, 0, 4)));  // no peak known yet
  QVERIFY(std::isnan(modelFlopsUtilization(2000, 0, 3e9, 4)));  // the MLP: no FLOPs per token
  QVERIFY(std::isnan(modelFlopsUtilization(2000, 3e6, 3e9, 0)));
  QVERIFY(std::isnan(modelFlopsUtilization(std::nan(""), 3e6, 3e9, 4)));
  QVERIFY(std::isnan(exposedCommFraction(0.1, 0)));
  const RunMetrics none;
  QCOMPARE(none.steps(), 0);
  QVERIFY(std::isnan(none.tokensPerSecond()));
  QVERIFY(std::isnan(none.mfu(3e6, 3e9, 4)));
  QVERIFY(std::isnan(none.exposedCommFraction()));
  EXACT(none.bubbleFraction(), 0.0);
}

// Two steps of two ranks: tokens/s is all tokens over all time (not a mean of the steps' rates),
// exposed communication the mean of the four rank reports' fractions, the bubble all idle time
// over all pipeline time.
void TestRunMetrics::metricsOfSteps() {
  RunMetrics m;
  m.addRankStep(rankOf(0.5, 0.125, 0.375, 0.125));  // 0.25 exposed
  m.addRankStep(rankOf(0.5, 0.25, 0.25, 0.25));     // 0.5
  m.addStep(stepOf(1000, 0.5));                     // 2000 tokens/s alone
  m.addRankStep(rankOf(1.5, 0.375, 1.25, 0.25));    // 0.25
  m.addRankStep(rankOf(1.5, 0.75, 1.125, 0.375));   // 0.5
  m.addRankStep(rankOf(0, 0.75, 0, 0));             // no time: no fraction, not a zero
  m.addStep(stepOf(1000, 1.5));                     // 666.67 tokens/s alone
  QCOMPARE(m.steps(), 2);
  EXACT(m.tokensPerSecond(), 1000.0);
  EXACT(m.exposedCommFraction(), 0.375);
  EXACT(m.bubbleFraction(), 1.0 / 4);  // idle 1.0 of busy + idle 4.0
  EXACT(m.mfu(3e6, 3e9, 2), 0.5);
  EXACT(m.mfu(3e6, 3e9, 2), modelFlopsUtilization(m.tokensPerSecond(), 3e6, 3e9, 2));
}

QTEST_GUILESS_MAIN(TestRunMetrics)
#include "test_run_metrics.moc"
