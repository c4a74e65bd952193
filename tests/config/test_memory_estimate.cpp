// The memory estimate's activations follow the pipeline schedule's own promised peak
// (ScheduleInfo::promisedPeak): GPipe holds every micro-batch, 1F1B and zero-bubble H1 the
// pipeline depth, interleaved 1F1B its warm-up forwards plus one, each a chunk (1/v of a stage).
#include <QtTest>

#include "core/config/config.h"
#include "core/config/memory_estimate.h"

using parascope::estimateMemory;
using parascope::parseTrainConfig;

namespace {

// The activations item of GPT-mini over p = 2 stages with m = 4 micro-batches.
double activations(const char* schedule, int chunks) {
  nlohmann::json doc = nlohmann::json::object();
  doc["pipeline_model_parallel_size"] = 2;
  doc["data_parallel_size"] = 1;
  doc["gradient_accumulation_steps"] = 4;
  doc["pipeline_schedule"] = schedule;
  doc["virtual_pipeline_model_parallel_size"] = chunks;
  for (const parascope::MemoryItem& item : estimateMemory(parseTrainConfig(doc), 0, 2).items) {
    if (item.name == "activations") return item.bytes;
  }
  return -1;
}

}  // namespace

class TestMemoryEstimate : public QObject {
  Q_OBJECT
 private slots:
  void activationsFollowTheSchedulesPeak_data();
  void activationsFollowTheSchedulesPeak();
};

void TestMemoryEstimate::activationsFollowTheSchedulesPeak_data() {
  QTest::addColumn<QString>("schedule");
  QTest::addColumn<int>("chunks");
  QTest::addColumn<double>("stagesHeld");  // whole stages' micro-batch activations, busiest rank
  QTest::newRow("gpipe") << "gpipe" << 1 << 4.0;
  QTest::newRow("1f1b") << "1f1b" << 1 << 2.0;
  QTest::newRow("zb-h1") << "zb-h1" << 1 << 2.0;
  // Rank 0 runs 2(p - 1) + (v - 1)p = 4 warm-up forwards and holds a fifth chunk: 5 / v.
  QTest::newRow("interleaved v2") << "interleaved" << 2 << 2.5;
}

void TestMemoryEstimate::activationsFollowTheSchedulesPeak() {
  QFETCH(QString, schedule);
  QFETCH(int, chunks);
  QFETCH(double, stagesHeld);
  // 1F1B on two stages and four micro-batches holds two: the unit the others are measured in.
  const double one = activations("1f1b", 1) / 2;
  QVERIFY(one > 0);
  QCOMPARE(activations(schedule.toUtf8().constData(), chunks), one * stagesHeld);
}

QTEST_MAIN(TestMemoryEstimate)
#include "test_memory_estimate.moc"
