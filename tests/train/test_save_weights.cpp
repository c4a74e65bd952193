// save_weights under every layout writes the whole logical model: each tensor once, with its
// full shape, holding exactly the values the ranks hold after their steps (tensor-parallel
// parts assembled, pipeline stages collected at rank 0, the tied embedding once).
#include <QtTest>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "core/comm/launch.h"
#include "core/io/safetensors.h"
#include "dp_harness.h"

using namespace parascope;

class TestSaveWeights : public QObject {
  Q_OBJECT
 private slots:
  void cleanupTestCase() { std::filesystem::remove(dptest::textFixture()); }
  void wholeModelFromAnyLayout_data();
  void wholeModelFromAnyLayout();
};

void TestSaveWeights::wholeModelFromAnyLayout_data() {
  QTest::addColumn<QStringList>("overrides");
  QTest::newRow("one rank") << QStringList{};
  QTest::newRow("pp2") << QStringList{"pipeline_model_parallel_size=2"};
  QTest::newRow("pp4 dp2 zero1") << QStringList{"pipeline_model_parallel_size=4",
                                                "model.num_layers=4", "data_parallel_size=2",
                                                "zero_optimization.stage=1"};
  QTest::newRow("tp2 pp2 interleaved") << QStringList{"tensor_model_parallel_size=2",
                                                      "pipeline_model_parallel_size=2",
                                                      "pipeline_schedule=interleaved",
                                                      "virtual_pipeline_model_parallel_size=2",
                                                      "model.num_layers=4",
                                                      "gradient_accumulation_steps=4"};
}

void TestSaveWeights::wholeModelFromAnyLayout() {
  QFETCH(QStringList, overrides);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parascope-save-" + std::to_string(getpid()) + ".safetensors"))
                               .string();
  std::vector<std::string> o = {"save_weights=" + path};
  for (const QString& s : overrides) o.push_back(s.toStdString());
  const TrainConfig config = dptest::tinyConfig(o);

  // What every rank holds after two steps, logical values by name.
  std::mutex mutex;
  std::map<std::string, std::vector<float>> held;
  runInProcess(config.parallel.worldSize(), [&](Communicator& world) {
    const dptest::RunRecord r = dptest::train(config, 2, world);  // its session saves the weights
    std::lock_guard lock(mutex);
    for (const auto& [name, values] : r.parameters) held[name] = values;
  });

  const SafetensorsFile file = readSafetensors(path);
  std::filesystem::remove(path);
  QCOMPARE(file.tensors.size(), held.size());
  QCOMPARE(static_cast<int>(held.size()), 4 + 12 * config.model.gpt.numLayers);
  for (const auto& [name, values] : held) {
    const auto it = file.tensors.find(name);
    QVERIFY2(it != file.tensors.end(), name.c_str());
    QCOMPARE(it->second.numel(), static_cast<std::int64_t>(values.size()));
    const float* saved = it->second.data<float>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (saved[i] != values[i]) {
        QFAIL(qPrintable(QString("%1[%2]: saved %3, held %4")
                             .arg(name.c_str())
                             .arg(i)
                             .arg(saved[i])
                             .arg(values[i])));
      }
    }
  }
}

QTEST_GUILESS_MAIN(TestSaveWeights)
#include "test_save_weights.moc"
