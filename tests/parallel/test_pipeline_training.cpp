// Pipeline training over in-process ranks: the same losses, gradients and parameters as one rank
// for pipeline sizes 1, 2, 4 with data parallel 1 and 2, every schedule and recompute mode, ZeRO
// 1, 2 and 3 (fp32, rtol 1e-5 / atol 4e-5); the instruction spans the executor records; busy/idle
// consistency; forward-only evaluation equal to one rank's; bad pipeline configs refused naming
// keys.
#include <QtTest>

#include <filesystem>
#include <mutex>
#include <set>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/trace/trace.h"
#include "pipeline_harness.h"

using namespace parascope;
using pptest::tinyConfig;

class TestPipelineTraining : public QObject {
  Q_OBJECT
 private slots:
  void cleanupTestCase();
  void matchesOneRank_data();
  void matchesOneRank();
  void evaluationMatchesOneRank();
  void tagsEveryInstruction();
  void refusesBadConfigs_data();
  void refusesBadConfigs();
};

namespace {

constexpr int kSteps = 3;

std::vector<std::string> toStrings(const QStringList& list) {
  std::vector<std::string> out;
  for (const QString& s : list) out.push_back(s.toStdString());
  return out;
}

// One record per rank of an in-process world.
std::vector<pptest::RunRecord> trainRanks(const TrainConfig& c, int steps) {
  std::vector<pptest::RunRecord> records(static_cast<std::size_t>(c.parallel.worldSize()));
  runInProcess(c.parallel.worldSize(), [&](Communicator& world) {
    Allocator allocator;
    records[static_cast<std::size_t>(world.rank())] = pptest::train(c, steps, world, &allocator);
  });
  return records;
}

// The single-rank run (no pipeline) of the tiny GPT with `layers` blocks and the
// `model.` keys among `overrides`.
const pptest::RunRecord& reference(int layers, const std::vector<std::string>& overrides = {}) {
  std::vector<std::string> model = {"model.num_layers=" + std::to_string(layers)};
  for (const std::string& o : overrides)
    if (o.rfind("model.", 0) == 0) model.push_back(o);
  std::string key;
  for (const std::string& m : model) key += m + " ";
  static std::map<std::string, pptest::RunRecord> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, pptest::train(tinyConfig(model), kSteps)).first;
  return it->second;
}

class Collector final : public trace::Recorder {
 public:
  void record(const trace::Event& e) noexcept override {
    const std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(e);
  }
  std::vector<trace::Event> events() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  std::vector<trace::Event> events_;
};

std::string userErrorOf(const std::vector<std::string>& overrides, int world = 0) {
  try {
    tinyConfig(overrides, world);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

void TestPipelineTraining::cleanupTestCase() {
  pptest::removeFixtures();
}

void TestPipelineTraining::matchesOneRank_data() {
  QTest::addColumn<int>("layers");
  QTest::addColumn<QStringList>("overrides");
  // Every schedule at every (t, p, dp) with world <= 8, 4 micro-batches per step; with t > 1
  // sequence parallelism off and on (4 heads so that t = 4 splits them).
  const char* schedules[] = {"gpipe", "1f1b", "interleaved", "zb-h1"};
  auto scheduled = [](int p, const char* s, int* layers) {
    const bool interleaved = std::string(s) == "interleaved";
    // p * v = 8 virtual stages need 8 layers: the 6-block model, one layer per stage.
    *layers = interleaved && p == 4 ? 6 : 4;
    QStringList o = {QString("pipeline_model_parallel_size=%1").arg(p),
                     "gradient_accumulation_steps=4", QString("pipeline_schedule=") + s,
                     QString("model.num_layers=%1").arg(*layers)};
    if (interleaved) o << "virtual_pipeline_model_parallel_size=2";
    if (interleaved && p == 4) o << "pipeline_model_parallel_layout=E|t|t|t|t|t|t|L";
    return o;
  };
  for (int t : {1, 2, 4}) {
    for (int p : {1, 2, 4}) {
      for (int dp : {1, 2}) {
        if (t * p * dp > 8 || (t > 1 && p == 1)) continue;  // t x 1: test_tensor_parallel
        for (const char* s : schedules) {
          for (bool sp : {false, true}) {
            if (sp && t == 1) continue;
            int layers = 4;
            QStringList o = scheduled(p, s, &layers);
            o << QString("data_parallel_size=%1").arg(dp);
            if (t > 1)
              o << QString("tensor_model_parallel_size=%1").arg(t) << "model.num_attention_heads=4";
            if (sp) o << "sequence_parallel=true";
            if (t == 1)
              QTest::addRow("p%d dp%d %s", p, dp, s) << layers << o;
            else
              QTest::addRow("t%d p%d dp%d %s%s", t, p, dp, s, sp ? " sp" : "") << layers << o;
          }
        }
      }
    }
  }
  // Each recompute mode with every schedule (p = 2, and t = 2 with sequence parallelism), and
  // on one rank and four stages.
  for (const char* r : {"selective", "full"}) {
    for (const char* s : schedules) {
      int layers = 4;
      QStringList o = scheduled(2, s, &layers);
      o << QString("recompute_granularity=") + r;
      QTest::addRow("p2 %s recompute %s", s, r) << layers << o;
      o << "tensor_model_parallel_size=2"
        << "sequence_parallel=true";
      QTest::addRow("t2 p2 %s sp recompute %s", s, r) << layers << o;
    }
    QTest::addRow("p1 recompute %s", r) << 4 << QStringList{QString("recompute_granularity=") + r};
    QTest::addRow("p4 dp2 zb-h1 recompute %s", r)
        << 4
        << QStringList{"pipeline_model_parallel_size=4", "data_parallel_size=2",
                       "pipeline_schedule=zb-h1", "gradient_accumulation_steps=2",
                       QString("recompute_granularity=") + r};
  }
  // ZeRO-2 and 3 with every schedule over two data-parallel ranks. With the default bucket size
  // each stage's flat space is one bucket, so the tied embedding's shards cover different parts
  // of it on the first and the last stage; small buckets split the stages into several.
  for (int zero : {2, 3}) {
    for (const char* s : schedules) {
      int layers = 4;
      QStringList o = scheduled(2, s, &layers);
      o << "data_parallel_size=2" << QString("zero_optimization.stage=%1").arg(zero);
      QTest::addRow("p2 dp2 %s zero%d", s, zero) << layers << o;
    }
    QTest::addRow("p2 dp2 1f1b zero%d buckets 3000", zero)
        << 4
        << QStringList{"pipeline_model_parallel_size=2", "data_parallel_size=2",
                       "gradient_accumulation_steps=4",
                       "zero_optimization.stage=" + QString::number(zero),
                       "zero_optimization.reduce_bucket_size=3000"};
    QTest::addRow("p2 dp2 zb-h1 zero%d recompute full", zero)
        << 4 << QStringList{"pipeline_model_parallel_size=2",
                            "data_parallel_size=2",
                            "pipeline_schedule=zb-h1",
                            "gradient_accumulation_steps=4",
                            "recompute_granularity=full",
                            "zero_optimization.stage=" + QString::number(zero)};
    QTest::addRow("t2 p2 dp2 1f1b sp zero%d", zero)
        << 4
        << QStringList{"pipeline_model_parallel_size=2",
                       "data_parallel_size=2",
                       "tensor_model_parallel_size=2",
                       "model.num_attention_heads=4",
                       "sequence_parallel=true",
                       "gradient_accumulation_steps=4",
                       "zero_optimization.stage=" + QString::number(zero)};
    QTest::addRow("p4 dp2 interleaved zero%d", zero)
        << 6
        << QStringList{"pipeline_model_parallel_size=4",
                       "data_parallel_size=2",
                       "pipeline_schedule=interleaved",
                       "virtual_pipeline_model_parallel_size=2",
                       "pipeline_model_parallel_layout=E|t|t|t|t|t|t|L",
                       "gradient_accumulation_steps=4",
                       "model.num_layers=6",
                       "zero_optimization.stage=" + QString::number(zero)};
  }
  // Uneven stages, ZeRO-1 and a list layout.
  QTest::addRow("p2 dp2 1f1b zero1 layout [1,5]")
      << 4
      << QStringList{"pipeline_model_parallel_size=2",
                     "data_parallel_size=2",
                     "gradient_accumulation_steps=2",
                     "zero_optimization.stage=1",
                     "zero_optimization.reduce_bucket_size=3000",
                     "pipeline_model_parallel_layout=[1,5]"};
}

// Each step's loss and the reduced gradients of every parameter a rank holds, then their final
// values, match one rank's at rtol 1e-5 / atol 4e-5. Why that holds on any CPU: stages,
// schedules and recompute run the same fp32 kernels on the same rows (recompute repeats them
// exactly); micro-batches, data-parallel ranks and the tied embedding's two halves only reorder
// additions, whatever GEMM kernels run; AdamW cannot amplify that (dp_harness.h).
void TestPipelineTraining::matchesOneRank() {
  QFETCH(int, layers);
  QFETCH(QStringList, overrides);
  const pptest::RunRecord& want = reference(layers, toStrings(overrides));
  const TrainConfig c = tinyConfig(toStrings(overrides));
  QVERIFY(c.pipeline.enabled);
  const std::vector<pptest::RunRecord> got = trainRanks(c, kSteps);
  std::set<std::string> held;
  for (std::size_t r = 0; r < got.size(); ++r) {
    const std::string diff = pptest::compare(want, got[r]);
    QVERIFY2(diff.empty(), ("rank " + std::to_string(r) + ": " + diff).c_str());
    for (const auto& [name, values] : got[r].parameters) held.insert(name);
  }
  QCOMPARE(held.size(), want.parameters.size());  // every parameter lives on some rank
}

void TestPipelineTraining::evaluationMatchesOneRank() {
  // Micro-batches of 4, evaluated after the first step.
  const EvalReport one =
      dptest::evaluateAfterOneStep(tinyConfig({"gradient_accumulation_steps=4", "eval_interval=1"}))
          .at(0);
  const TrainConfig c =
      tinyConfig({"pipeline_model_parallel_size=2", "data_parallel_size=2",
                  "pipeline_schedule=interleaved", "gradient_accumulation_steps=2",
                  "virtual_pipeline_model_parallel_size=2", "eval_interval=1"});
  for (const EvalReport& r : dptest::evaluateAfterOneStep(c)) {
    QCOMPARE(r.targets, one.targets);
    QVERIFY(std::fabs(r.loss - one.loss) <= 1e-5 * one.loss);
    QCOMPARE(r.accuracy, one.accuracy);
  }
}

// Every instruction of every rank's program is one span named after its op, tagged with its
// stage, micro-batch and program index; busy and idle time add up to the pipeline part of the
// step, which ends when the last pipeline rank finished computing.
void TestPipelineTraining::tagsEveryInstruction() {
  const TrainConfig c = tinyConfig({"pipeline_model_parallel_size=2", "pipeline_schedule=zb-h1",
                                    "gradient_accumulation_steps=4"});
  Collector collector;
  trace::setRecorder(&collector);
  std::vector<Program> programs(2);
  std::vector<StepReport> reports(2);
  runInProcess(2, [&](Communicator& world) {
    reports[static_cast<std::size_t>(world.rank())] = pptest::train(c, 1, world).reports.at(0);
  });
  trace::setRecorder(nullptr);
  const PipelineShape shape{2, 4, 1};
  programs = buildSchedule(findSchedule("zb-h1"), shape);
  for (int r = 0; r < 2; ++r) {
    std::vector<trace::Event> spans;
    for (const trace::Event& e : collector.events()) {
      if (e.rank != r || e.category != trace::Category::Instruction) continue;
      spans.push_back(e);
    }
    const Program& program = programs[static_cast<std::size_t>(r)];
    QCOMPARE(spans.size(), program.size());
    std::sort(spans.begin(), spans.end(), [](const trace::Event& a, const trace::Event& b) {
      return a.instruction < b.instruction;
    });
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const Instruction& in = program[i];
      QCOMPARE(spans[i].instruction, static_cast<std::int32_t>(i));
      QCOMPARE(std::string(spans[i].name), std::string(opName(in.op)));
      QCOMPARE(spans[i].stage, static_cast<std::int32_t>(in.stage));
      QCOMPARE(spans[i].microBatch, in.microBatch);
      QCOMPARE(spans[i].step, 1);  // steps count from 1, as the reports
    }
    const StepReport& rep = reports[static_cast<std::size_t>(r)];
    QVERIFY(rep.pipelineBusySeconds > 0);
    QVERIFY(rep.pipelineIdleSeconds >= -1e-6);
    QVERIFY(rep.pipelineBusySeconds + rep.pipelineIdleSeconds <= rep.seconds);
  }
}

void TestPipelineTraining::refusesBadConfigs_data() {
  QTest::addColumn<QStringList>("overrides");
  QTest::addColumn<QString>("message");
  QTest::newRow("layers not divisible")
      << QStringList{"pipeline_model_parallel_size=3", "model.num_layers=4"}
      << "config: model.num_layers (4) is not divisible by pipeline_model_parallel_size (3) x "
         "virtual_pipeline_model_parallel_size (1) = 3 virtual stages; valid: num_layers a "
         "multiple of 3, or pipeline_model_parallel_layout, e.g. \"Ett|t|tL\" or [3, 1, 2]";
  QTest::newRow("layout spelling")
      << QStringList{"pipeline_model_parallel_size=2", "pipeline_model_parallel_layout=Ett|ttt|L"}
      << "config: pipeline_model_parallel_layout \"Ett|ttt|L\" spells \"EtttttL\" but the model "
         "is \"EttttL\" (E embedding, 4 x t, L head); e.g. \"Ett|ttL\" or [3, 3]";
  QTest::newRow("layout stages")
      << QStringList{"pipeline_model_parallel_size=2", "pipeline_model_parallel_layout=Et*4L"}
      << "config: pipeline_model_parallel_layout gives 1 stages with 6 layers; need "
         "pipeline_model_parallel_size (2) x virtual_pipeline_model_parallel_size (1) = 2 "
         "virtual stages covering all 6 model layers, e.g. \"Ett|ttL\" or [3, 3]";
  QTest::newRow("layout on one rank")
      << QStringList{"pipeline_model_parallel_layout=EttttLt"}
      << "config: pipeline_model_parallel_layout \"EttttLt\" spells \"EttttLt\" but the model is "
         "\"EttttL\" (E embedding, 4 x t, L head); e.g. \"EttttL\" or [6]";
  QTest::newRow("layout letter")
      << QStringList{"pipeline_model_parallel_size=2", "pipeline_model_parallel_layout=Ett|tmL"}
      << "config: pipeline_model_parallel_layout \"Ett|tmL\": unexpected 'm'; allowed: E "
         "(embedding), t (transformer block), L (head), '|' between stages, '*N' after a letter "
         "to repeat it";
  QTest::newRow("empty stage")
      << QStringList{"pipeline_model_parallel_size=2", "pipeline_model_parallel_layout=[6,0]"}
      << "config: pipeline_model_parallel_layout must be an array of at most 4096 integers in "
         "1..1048576, got [6,0]";
  QTest::newRow("interleaved micro-batches")
      << QStringList{"pipeline_model_parallel_size=2", "pipeline_schedule=interleaved",
                     "virtual_pipeline_model_parallel_size=2", "gradient_accumulation_steps=3",
                     "train_batch_size=12"}
      << "config: pipeline_schedule \"interleaved\" with pipeline_model_parallel_size 2, "
         "gradient_accumulation_steps 3 (micro-batches per step) and "
         "virtual_pipeline_model_parallel_size 2: schedule interleaved needs micro-batches m to "
         "be a multiple of pipeline stages p, got m=3 and p=2";
  QTest::newRow("chunks need interleaved")
      << QStringList{"pipeline_model_parallel_size=2", "virtual_pipeline_model_parallel_size=2"}
      << "config: pipeline_schedule \"1f1b\" with pipeline_model_parallel_size 2, "
         "gradient_accumulation_steps 1 (micro-batches per step) and "
         "virtual_pipeline_model_parallel_size 2: schedule 1f1b places one model chunk per "
         "rank, got v=2; virtual chunks need 'interleaved'";
  QTest::newRow("schedule name") << QStringList{"pipeline_schedule=zb-v"}
                                 << "config: pipeline_schedule = \"zb-v\" is not supported; "
                                    "allowed: gpipe, 1f1b, interleaved, "
                                    "zb-h1";
  QTest::newRow("recompute name") << QStringList{"recompute_granularity=partial"}
                                  << "config: recompute_granularity = \"partial\" is not "
                                     "supported; allowed: none, selective, full";
  QTest::newRow("mlp")
      << QStringList{"pipeline_model_parallel_size=2", R"(model={"type": "mlp"})",
                     R"(data={"type": "idx"})"}
      << "config: pipeline_model_parallel_size (2) > 1 needs model.type \"gpt\"; valid for "
         "\"mlp\": 1";
  QTest::newRow("sequence parallel without tensor parallel")
      << QStringList{"pipeline_model_parallel_size=2", "sequence_parallel=true"}
      << "config: sequence_parallel = true needs tensor_model_parallel_size > 1 (it shards the "
         "tensor-parallel group's layernorm and residual regions); valid: false, or a tensor size "
         "of 2 or more";
}

void TestPipelineTraining::refusesBadConfigs() {
  QFETCH(QStringList, overrides);
  QFETCH(QString, message);
  QCOMPARE(QString::fromStdString(userErrorOf(toStrings(overrides))), message);
}

QTEST_GUILESS_MAIN(TestPipelineTraining)
#include "test_pipeline_training.moc"
