// The memory estimate against the allocator: model state (parameters, gradients, optimizer
// state) and communication buffers per rank equal the peaks of real trainers on in-process ranks
// for ZeRO 0-3, fp32 / bf16 / fp16 and data, tensor and pipeline degrees of 1 and 2, however
// soon the ranks' asynchronous collectives finish. Activations equal the peaks of every rank for
// tensor degrees 1, 2 and 4 with and without sequence parallelism, the four schedules, recompute,
// mixed precision and ZeRO, on ranks whose sends are found complete at their next send (the
// estimate's case); the classifier too, where its data is installed.
#include <QtTest>

#include <array>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

#include "core/comm/launch.h"
#include "core/comm/threads/thread_backend.h"
#include "core/comm/threads/thread_world.h"
#include "core/config/config.h"
#include "core/kernels/attention.h"
#include "core/plan/memory_estimate.h"
#include "core/tensor/allocator.h"
#include "core/train/trainer.h"
#include "tests/train/dp_harness.h"

using namespace parascope;

namespace {

// A send from a private copy of its data, found complete at the executor's second look at it,
// the sender's next send, whether the receiver has taken it or not: the estimate's convention
// without the receiver's timing (waiting for the receiver there could deadlock a schedule).
class NextSendRequest final : public CommRequest {
 public:
  explicit NextSendRequest(std::shared_ptr<CommRequest> inner) : inner_(std::move(inner)) {
    record = inner_->record;
  }
  bool test() override { return std::exchange(tested_, true); }
  void wait() override {
    inner_->wait();
    record = inner_->record;
  }

 private:
  std::shared_ptr<CommRequest> inner_;
  bool tested_ = false;
};

// How in-process ranks find their non-blocking operations finished.
enum class Completion {
  Threads,   // the threads backend's own: as soon as they are
  NextSend,  // sends at the sender's next send (NextSendRequest), the rest as Threads
};

class WrappedBackend final : public CommBackend {
 public:
  WrappedBackend(std::shared_ptr<CommBackend> inner, Completion completion)
      : CommBackend(inner->name(), inner->options()),
        inner_(std::move(inner)),
        completion_(completion) {}
  // The receivers take every copy within their step, unless the world failed.
  ~WrappedBackend() override {
    for (Copy& c : copies_) {
      try {
        c.send->wait();
      } catch (const CommError&) {
        return;  // the world failed: no receiver takes the rest either
      }
    }
  }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string_view kind() const override { return inner_->kind(); }
  std::shared_ptr<CommRequest> start(const CommArgs& args, bool blocking) override {
    if (completion_ == Completion::NextSend && args.op == CommOp::Send && !blocking)
      return sendCopy(args);
    return inner_->start(args, blocking);
  }
  std::shared_ptr<CommBackend> split(int color, int key) override {
    return std::make_shared<WrappedBackend>(inner_->split(color, key), completion_);
  }

 private:
  struct Copy {
    std::vector<std::byte> data;
    std::shared_ptr<CommRequest> send;
  };
  // The copy lives until the receiver has taken it (a vector keeps its buffer when it moves).
  std::shared_ptr<CommRequest> sendCopy(CommArgs args) {
    std::erase_if(copies_, [](Copy& c) { return c.send->test(); });
    const auto* data = static_cast<const std::byte*>(args.send);
    Copy& c = copies_.emplace_back();
    c.data.assign(data, data + args.count * dtypeSize(args.dtype));
    args.send = c.data.data();
    c.send = inner_->start(args, false);
    return std::make_shared<NextSendRequest>(c.send);
  }

  std::shared_ptr<CommBackend> inner_;
  Completion completion_;
  std::vector<Copy> copies_;
};

// runInProcess over wrapped communicators: a rank that throws fails the world, so its peers stop
// waiting, and the first failure is rethrown.
void runWrapped(int size, Completion completion, const std::function<void(Communicator&)>& fn) {
  auto world = std::make_shared<ThreadWorld>(size, CommOptions{});
  std::vector<Communicator> comms;
  for (auto& backend : makeThreadBackends(world))
    comms.emplace_back(std::make_shared<WrappedBackend>(std::move(backend), completion));
  std::mutex mutex;
  std::exception_ptr first;
  auto body = [&](int r) {
    try {
      fn(comms[static_cast<std::size_t>(r)]);
    } catch (const std::exception& e) {
      {
        const std::lock_guard lock(mutex);
        if (!first) first = std::current_exception();
      }
      world->fail(r, e.what());
    }
    comms[static_cast<std::size_t>(r)] = Communicator();
    world->depart(r);
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < size; ++r) threads.emplace_back(body, r);
  body(0);
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

using Peaks = std::array<std::int64_t, kMemoryCategoryCount>;

// Every rank's allocator peaks over its trainer's construction and three steps, or over the
// steps alone.
std::vector<Peaks> measure(const TrainConfig& config, Completion completion,
                           bool stepsOnly = false) {
  const int n = config.parallel.worldSize();
  std::vector<Peaks> peaks(static_cast<std::size_t>(n));
  auto rank = [&](Communicator& world) {
    Allocator allocator;
    {
      Trainer trainer(config, allocator, world);
      if (stepsOnly) allocator.resetPeaks();
      for (int step = 0; step < 3; ++step) trainer.step();
    }
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
      peaks[static_cast<std::size_t>(world.rank())][c] =
          allocator.peakBytes(static_cast<MemoryCategory>(c));
  };
  if (completion == Completion::Threads) {
    runInProcess(n, rank);
  } else {
    runWrapped(n, completion, rank);
  }
  return peaks;
}

constexpr std::array<MemoryCategory, 5> kExact = {
    MemoryCategory::Parameter, MemoryCategory::Gradient, MemoryCategory::OptimizerState,
    MemoryCategory::CommBuffer, MemoryCategory::Workspace};

std::vector<std::string> split(const QString& overrides) {
  std::vector<std::string> out;
  for (const QString& o : overrides.split(' ', Qt::SkipEmptyParts)) out.push_back(o.toStdString());
  return out;
}

// The small GPT (width 32, 2 layers, context 16) in micro-batches of 2, its gradients in buckets
// that close at 2000 elements (7 on one rank: three per block, and the embeddings').
TrainConfig small(const std::vector<std::string>& overrides) {
  std::vector<std::string> all = {"train_micro_batch_size_per_gpu=2",
                                  "zero_optimization.reduce_bucket_size=2000"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return dptest::tinyConfig(all);
}

}  // namespace

class TestMemoryEstimate : public QObject {
  Q_OBJECT
 private slots:
  void activationsAreTheAllocatorsPeak_data();
  void activationsAreTheAllocatorsPeak();
  void classifierActivationsAreTheAllocatorsPeak();
  void attentionScratchIsTheCpusAlone();
  void largestMicroBatchIsTheLastThatFits();
  void modelStateIsTheAllocatorsPeak_data();
  void modelStateIsTheAllocatorsPeak();
  void stepPeaksLeaveConstructionOut_data();
  void stepPeaksLeaveConstructionOut();
  void modelStateRepeatsEachCycle_data();
  void modelStateRepeatsEachCycle();
  void zeroSavesMemoryAtItsPeak();
};

void TestMemoryEstimate::activationsAreTheAllocatorsPeak_data() {
  QTest::addColumn<QString>("overrides");
  QTest::newRow("one rank") << "";
  QTest::newRow("t2") << "tensor_model_parallel_size=2";
  QTest::newRow("t2 sequence parallel") << "tensor_model_parallel_size=2 sequence_parallel=true";
  const QString four = "model.num_attention_heads=4 tensor_model_parallel_size=4";
  QTest::newRow("t4") << four;
  QTest::newRow("t4 sequence parallel") << four + " sequence_parallel=true";
  QTest::newRow("selective") << "recompute_granularity=selective";
  QTest::newRow("full fp16") << "recompute_granularity=full fp16.enabled=true";
  // Mixed precision keeps each layer's state in 16 bits between its passes: narrowed after the
  // forward, widened before the backward, tensor by tensor.
  QTest::newRow("selective bf16") << "recompute_granularity=selective bf16.enabled=true";
  QTest::newRow("t2 sequence parallel fp16")
      << "tensor_model_parallel_size=2 sequence_parallel=true fp16.enabled=true";
  // A vocabulary large enough that the head's state sets the peak: its probabilities in 16 bits,
  // its f32 logits and their gradient four of its 32 rows at a time, split over the tensor group,
  // gathered again under sequence parallelism, kept for zero-bubble's weight half.
  const QString large = " bf16.enabled=true model.vocab_size=8192";
  QTest::newRow("bf16 vocabulary 8192") << large;
  QTest::newRow("p2 gpipe bf16 vocabulary 8192")
      << "pipeline_model_parallel_size=2 pipeline_schedule=gpipe" + large;
  QTest::newRow("t2 bf16 vocabulary 8192") << "tensor_model_parallel_size=2" + large;
  QTest::newRow("t2 sequence parallel fp16 vocabulary 8192")
      << "tensor_model_parallel_size=2 sequence_parallel=true fp16.enabled=true "
         "model.vocab_size=8192";
  QTest::newRow("p2 zb-h1 bf16 vocabulary 8192")
      << "pipeline_model_parallel_size=2 pipeline_schedule=zb-h1" + large;
  QTest::newRow("full bf16 vocabulary 8192") << "recompute_granularity=full" + large;
  QTest::newRow("f32 vocabulary 8192") << "model.vocab_size=8192";
  QTest::newRow("t2 sequence parallel vocabulary 8192")
      << "tensor_model_parallel_size=2 sequence_parallel=true model.vocab_size=8192";
  QTest::newRow("d2 bf16 zero3")
      << "data_parallel_size=2 bf16.enabled=true zero_optimization.stage=3";
  // 10 and 12 micro-batches: more than the four cycles the estimate replays.
  QTest::newRow("p2 gpipe m10")
      << "pipeline_model_parallel_size=2 pipeline_schedule=gpipe train_batch_size=20";
  QTest::newRow("p2 1f1b m12 t2 sequence parallel selective")
      << "pipeline_model_parallel_size=2 train_batch_size=24 tensor_model_parallel_size=2 "
         "sequence_parallel=true recompute_granularity=selective";
  const QString interleaved =
      "model.num_layers=4 pipeline_model_parallel_size=2 pipeline_schedule=interleaved "
      "virtual_pipeline_model_parallel_size=2";
  QTest::newRow("p2 interleaved bf16") << interleaved + " bf16.enabled=true";
  QTest::newRow("p2 interleaved t2 full")
      << interleaved + " tensor_model_parallel_size=2 recompute_granularity=full";
  const QString zb = "pipeline_model_parallel_size=2 pipeline_schedule=zb-h1";
  QTest::newRow("p2 zb-h1 t2 sequence parallel")
      << zb + " tensor_model_parallel_size=2 sequence_parallel=true";
  QTest::newRow("p2 zb-h1 full") << zb + " recompute_granularity=full";
  QTest::newRow("p2 zb-h1 bf16") << zb + " bf16.enabled=true";
  QTest::newRow("p4 1f1b d2 zero2")
      << "model.num_layers=4 pipeline_model_parallel_size=4 data_parallel_size=2 "
         "zero_optimization.stage=2";
}

void TestMemoryEstimate::activationsAreTheAllocatorsPeak() {
  QFETCH(QString, overrides);
  const TrainConfig config = small(split(overrides));
  const std::vector<MemoryEstimate> estimates = estimateRankMemory(config, 0, 1);
  const std::vector<Peaks> peaks = measure(config, Completion::NextSend);
  const auto activation = static_cast<std::size_t>(MemoryCategory::Activation);
  const int perPipelineRank = config.parallel.tensor * config.parallel.data;
  for (std::size_t r = 0; r < peaks.size(); ++r) {
    const double estimate =
        estimates[r / static_cast<std::size_t>(perPipelineRank)].items[activation].bytes;
    const auto measured = static_cast<double>(peaks[r][activation]);
    QVERIFY2(measured == estimate, qPrintable(QString("rank %1: activations %2, estimate %3")
                                                  .arg(r)
                                                  .arg(measured, 0, 'f', 0)
                                                  .arg(estimate, 0, 'f', 0)));
  }
}

// The classifier's layers keep their pre-activations; its first layer's input gradient (batch x
// 784) is an activation too. Full recompute and zero-bubble's halves on one rank.
void TestMemoryEstimate::classifierActivationsAreTheAllocatorsPeak() {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist"))
    QSKIP("the dataset-fashion-mnist package is not installed");
  const auto activation = static_cast<std::size_t>(MemoryCategory::Activation);
  for (const char* schedule : {"1f1b", "zb-h1"}) {
    for (const char* recompute : {"none", "full"}) {
      const TrainConfig config =
          parseTrainConfig({{"model", {{"type", "mlp"}, {"hidden_sizes", {64, 32}}}},
                            {"data", {{"type", "idx"}}},
                            {"train_batch_size", 16},
                            {"train_micro_batch_size_per_gpu", 8},
                            {"pipeline_schedule", schedule},
                            {"recompute_granularity", recompute}});
      const double estimate = estimateMemory(config, 0, 1).items[activation].bytes;
      QCOMPARE(static_cast<double>(measure(config, Completion::Threads)[0][activation]), estimate);
    }
  }
}

// On a GPU attention's backward keeps every head's T x T scratch at once (the CPU one head's at
// a time): the estimate's activation peak, in the block's input half, grows by the other heads'.
// With the memory of exactly 37 sequences per micro-batch the largest that fits is 37 (and 38 does
// not); with one byte less than one sequence needs, none.
void TestMemoryEstimate::largestMicroBatchIsTheLastThatFits() {
  TrainConfig c = parseTrainConfig({{"model", {{"type", "gpt"}}},
                                    {"data_parallel_size", 2},
                                    {"gradient_accumulation_steps", 3}});
  const auto total = [&](int microBatch) {
    TrainConfig at = c;
    at.microBatch = microBatch;
    at.globalBatch = microBatch * 3 * 2;
    return estimateMemory(at, 0, 2).totalBytes();
  };
  QVERIFY(total(38) > total(37));
  QCOMPARE(largestMicroBatch(c, 0, 2, total(37)), 37);
  QCOMPARE(largestMicroBatch(c, 0, 2, total(38) - 1), 37);
  QCOMPARE(largestMicroBatch(c, 0, 2, total(1) - 1), 0);
  QCOMPARE(largestMicroBatch(c, 0, 2, total(64), 40), 40);  // the limit
}

// The activation peak is in a block's backward, where the CPU's attention holds one row block's
// scores and their gradients against every key (2 x 32 x T floats), a head's K and V transposed
// (2 x hs x T) and its K, Q and dOut rows (3 x T x hs), and a GPU's fused kernels hold nothing.
void TestMemoryEstimate::attentionScratchIsTheCpusAlone() {
  const auto activation = static_cast<std::size_t>(MemoryCategory::Activation);
  nlohmann::json doc = {{"model", {{"type", "gpt"}, {"num_attention_heads", 8}}}};
  const double cpu = estimateMemory(parseTrainConfig(doc), 0, 1).items[activation].bytes;
  doc["device"] = "cuda";
  const double gpu = estimateMemory(parseTrainConfig(doc), 0, 1).items[activation].bytes;
  const double T = 128, hs = 256 / 8;  // both whole vectors already: no padding
  QCOMPARE(cpu - gpu, (2 * kernels::kAttentionRowBlock * T + 2 * hs * T + 3 * T * hs) * 4);
}

void TestMemoryEstimate::modelStateIsTheAllocatorsPeak_data() {
  QTest::addColumn<QString>("overrides");
  // Worlds of 4 and 8: (data, tensor, pipeline).
  const std::array<std::array<int, 3>, 4> degrees = {{{2, 2, 1}, {2, 1, 2}, {1, 2, 2}, {2, 2, 2}}};
  for (const auto& [d, t, p] : degrees) {
    for (const char* precision : {"fp32", "bf16", "fp16"}) {
      for (int stage = 0; stage <= 3; ++stage) {
        QString o = QString(
                        "data_parallel_size=%1 tensor_model_parallel_size=%2 "
                        "pipeline_model_parallel_size=%3 zero_optimization.stage=%4")
                        .arg(d)
                        .arg(t)
                        .arg(p)
                        .arg(stage);
        if (QString(precision) != "fp32") o += QString(" %1.enabled=true").arg(precision);
        QTest::addRow("d%d t%d p%d %s zero%d", d, t, p, precision, stage) << o;
      }
    }
  }
  // Schedules, chunks, recompute, gradients in 16 bits, no overlap, sequence parallelism; the
  // pipelines over 6 layers, so that a rank's gathers and buckets come and go.
  const char* zero =
      "model.num_layers=6 data_parallel_size=2 pipeline_model_parallel_size=2 "
      "zero_optimization.stage=";
  for (int stage : {2, 3}) {
    const QString z = zero + QString::number(stage);
    QTest::addRow("gpipe zero%d", stage) << z + " pipeline_schedule=gpipe";
    QTest::addRow("zb-h1 bf16 zero%d", stage) << z + " pipeline_schedule=zb-h1 bf16.enabled=true";
    QTest::addRow("interleaved v2 zero%d", stage)
        << z + " pipeline_schedule=interleaved virtual_pipeline_model_parallel_size=2 "
               "pipeline_model_parallel_layout=[2,2,2,2]";
    QTest::addRow("full recompute zero%d", stage)
        << z + " recompute_granularity=full fp16.enabled=true";
    QTest::addRow("bf16 communication zero%d", stage) << z + " communication_data_type=bf16";
    QTest::addRow("no overlap zero%d", stage)
        << "data_parallel_size=4 zero_optimization.overlap_comm=false "
           "zero_optimization.stage=" +
               QString::number(stage);
  }
  QTest::newRow("sequence parallel zero3")
      << "data_parallel_size=2 tensor_model_parallel_size=2 sequence_parallel=true "
         "zero_optimization.stage=3";
  // 8 micro-batches a step, more than the estimate replays.
  QTest::newRow("8 micro-batches zero3") << "data_parallel_size=4 train_batch_size=64 "
                                            "zero_optimization.stage=3";
  // Gradients staged in fp16 for their reduce-scatter; a data degree of 4.
  QTest::newRow("d2 p2 bf16 zero2 fp16 communication")
      << "data_parallel_size=2 pipeline_model_parallel_size=2 bf16.enabled=true "
         "zero_optimization.stage=2 communication_data_type=fp16";
  QTest::newRow("d4 zero2") << "data_parallel_size=4 zero_optimization.stage=2";
  QTest::newRow("d2 t2 fp16 zero3")
      << "data_parallel_size=2 tensor_model_parallel_size=2 fp16.enabled=true "
         "zero_optimization.stage=3";
  // ZeRO-3's bounds: no prefetch; nothing gathered beyond the running layer; and the default
  // bucket, which would hold the whole model but for the cut at every layer.
  const char* six = "model.num_layers=6 data_parallel_size=2 zero_optimization.stage=3 ";
  QTest::newRow("zero3 no prefetch")
      << QString(six) + "zero_optimization.stage3_prefetch_bucket_size=0";
  QTest::newRow("zero3 one live layer")
      << QString(six) + "zero_optimization.stage3_max_live_parameters=1";
  QTest::newRow("p2 zero3 one live layer")
      << QString(six) +
             "pipeline_model_parallel_size=2 zero_optimization.stage3_max_live_parameters=1";
  QTest::newRow("zero3 default bucket")
      << QString(six) + "zero_optimization.reduce_bucket_size=6553600";
  QTest::newRow("zero2 default bucket")
      << "model.num_layers=6 data_parallel_size=2 zero_optimization.stage=2 "
         "zero_optimization.reduce_bucket_size=6553600";
}

// Every rank's peaks against its pipeline rank's estimate; estimateMemory is the busiest's.
void TestMemoryEstimate::modelStateIsTheAllocatorsPeak() {
  QFETCH(QString, overrides);
  const TrainConfig config = small(split(overrides));
  const std::vector<MemoryEstimate> estimates = estimateRankMemory(config, 0, 1);
  QCOMPARE(static_cast<int>(estimates.size()), config.parallel.pipeline);
  const std::vector<Peaks> peaks = measure(config, Completion::Threads);
  const int perPipelineRank = config.parallel.tensor * config.parallel.data;
  for (std::size_t r = 0; r < peaks.size(); ++r) {
    const MemoryEstimate& e = estimates[r / static_cast<std::size_t>(perPipelineRank)];
    QString all = QString("rank %1:").arg(r);
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
      all += QString(" %1 %2/%3")
                 .arg(QString::fromStdString(e.items[c].name))
                 .arg(peaks[r][c])
                 .arg(e.items[c].bytes, 0, 'f', 0);
    if (r == 0) qInfo("%s", qPrintable(all));
    for (MemoryCategory c : kExact) {
      const double estimate = e.items[static_cast<std::size_t>(c)].bytes;
      const auto measured = static_cast<double>(peaks[r][static_cast<std::size_t>(c)]);
      QVERIFY2(measured == estimate, qPrintable(all));
    }
  }
  double busiest = 0;
  for (const MemoryEstimate& e : estimates) busiest = std::max(busiest, e.perRankBytes());
  QCOMPARE(estimateMemory(config, 0, 1).perRankBytes(), busiest);
}

void TestMemoryEstimate::stepPeaksLeaveConstructionOut_data() {
  QTest::addColumn<QString>("overrides");
  // Whether the construction's copy of the largest parameter (f32 under ZeRO-3) is the
  // workspace's peak: not beside bf16's f32 working copies of a whole layer.
  QTest::addColumn<bool>("constructionPeaks");
  QTest::newRow("d2 p2 zero3") << "data_parallel_size=2 pipeline_model_parallel_size=2 "
                                  "zero_optimization.stage=3"
                               << true;
  QTest::newRow("d4 zero3") << "data_parallel_size=4 zero_optimization.stage=3" << true;
  QTest::newRow("d2 t2 bf16 zero3") << "data_parallel_size=2 tensor_model_parallel_size=2 "
                                       "bf16.enabled=true zero_optimization.stage=3"
                                    << false;
  QTest::newRow("d4 zero1") << "data_parallel_size=4 zero_optimization.stage=1" << false;
}

// What a session switched live to a strategy reaches from its next step on: the steps' peaks
// without the trainer's construction (ZeRO-3 copies each parameter once as it shards it), the
// Memory view's prediction beside a switched run's peaks.
void TestMemoryEstimate::stepPeaksLeaveConstructionOut() {
  QFETCH(QString, overrides);
  QFETCH(bool, constructionPeaks);
  const TrainConfig config = small(split(overrides));
  const std::vector<MemoryEstimate> estimates = estimateRankMemory(config, 0, 1);
  const std::vector<Peaks> peaks = measure(config, Completion::Threads, true);
  const int perPipelineRank = config.parallel.tensor * config.parallel.data;
  bool smaller = false;
  for (std::size_t r = 0; r < peaks.size(); ++r) {
    const MemoryEstimate& e = estimates[r / static_cast<std::size_t>(perPipelineRank)];
    for (MemoryCategory c : kExact) {
      const MemoryItem& item = e.items[static_cast<std::size_t>(c)];
      const auto measured = static_cast<double>(peaks[r][static_cast<std::size_t>(c)]);
      QVERIFY2(measured == item.stepBytes, qPrintable(QString("rank %1 %2: %3, estimate %4")
                                                          .arg(r)
                                                          .arg(QString::fromStdString(item.name))
                                                          .arg(measured, 0, 'f', 0)
                                                          .arg(item.stepBytes, 0, 'f', 0)));
      QVERIFY(item.stepBytes <= item.bytes);
      smaller = smaller || item.stepBytes < item.bytes;
    }
  }
  QCOMPARE(smaller, constructionPeaks);
}

void TestMemoryEstimate::modelStateRepeatsEachCycle_data() {
  QTest::addColumn<QString>("overrides");
  QTest::addColumn<int>("cycle");  // p v micro-batches
  const char* base = "model.num_layers=6 data_parallel_size=2 ";
  for (int stage : {2, 3}) {
    const QString z = base + QString("zero_optimization.stage=%1 ").arg(stage);
    const QString p = z + "pipeline_model_parallel_size=2 ";
    QTest::addRow("1f1b zero%d", stage) << p + "pipeline_schedule=1f1b" << 2;
    QTest::addRow("gpipe zero%d", stage) << p + "pipeline_schedule=gpipe" << 2;
    QTest::addRow("zb-h1 bf16 zero%d", stage)
        << p + "pipeline_schedule=zb-h1 bf16.enabled=true" << 2;
    QTest::addRow("full recompute zero%d", stage) << p + "recompute_granularity=full" << 2;
    QTest::addRow("interleaved zero%d", stage)
        << p + "pipeline_schedule=interleaved virtual_pipeline_model_parallel_size=2 "
               "pipeline_model_parallel_layout=[2,2,2,2]"
        << 4;
    QTest::addRow("no pipeline zero%d", stage) << z << 1;
  }
}

// A step of more than four cycles of micro-batches is replayed with three and the remainder:
// every category is that of four cycles (every rank's program has shown every pattern of
// instructions by then), but GPipe's activations, which grow by one micro-batch's forward state
// per micro-batch, and the workspace, which holds each of the step's batches to its end.
void TestMemoryEstimate::modelStateRepeatsEachCycle() {
  QFETCH(QString, overrides);
  QFETCH(int, cycle);
  auto config = [&](int microBatches) {
    std::vector<std::string> o = split(overrides);
    o.push_back("train_batch_size=" + std::to_string(2 * 2 * microBatches));
    return small(o);
  };
  auto estimate = [&](int microBatches) { return estimateRankMemory(config(microBatches), 0, 1); };
  const auto workspace = static_cast<std::size_t>(MemoryCategory::Workspace);
  const TrainConfig one = config(4 * cycle);
  const double batchBytes = one.model.kind->batchBytes(one);
  QVERIFY(batchBytes > 0);
  const bool gpipe = overrides.contains("gpipe");
  const auto activation = static_cast<std::size_t>(MemoryCategory::Activation);
  const std::vector<MemoryEstimate> four = estimate(4 * cycle);
  // GPipe runs any number of micro-batches: one fewer than four cycles is replayed whole too.
  const std::vector<MemoryEstimate> fewer = gpipe ? estimate(4 * cycle - 1) : four;
  // More by a whole number of cycles, or by two micro-batches (a multiple of p, as interleaved
  // 1F1B needs).
  for (int microBatches : {5 * cycle, 6 * cycle + 2, 1000 * cycle + 2}) {
    const std::vector<MemoryEstimate> more = estimate(microBatches);
    for (std::size_t q = 0; q < four.size(); ++q) {
      for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
        if ((c == activation && gpipe) || c == workspace) continue;
        QCOMPARE(more[q].items[c].bytes, four[q].items[c].bytes);
      }
      // One more batch each micro-batch, over what four cycles hold; ZeRO-3's first gathers'
      // copies (its initialisation) may still be the larger.
      QVERIFY(more[q].items[workspace].bytes >= four[q].items[workspace].bytes);
      QVERIFY(more[q].items[workspace].bytes <=
              four[q].items[workspace].bytes + (microBatches - 4 * cycle) * batchBytes);
      if (!gpipe) continue;
      const double perMicroBatch =
          four[q].items[activation].bytes - fewer[q].items[activation].bytes;
      QCOMPARE(more[q].items[activation].bytes,
               four[q].items[activation].bytes + (microBatches - 4 * cycle) * perMicroBatch);
    }
  }
  // Where the batches are the most of it, exactly one batch more per micro-batch.
  const std::vector<MemoryEstimate> thousand = estimate(1000 * cycle + 2);
  const std::vector<MemoryEstimate> twoThousand = estimate(2000 * cycle + 2);
  for (std::size_t q = 0; q < thousand.size(); ++q) {
    QCOMPARE(twoThousand[q].items[workspace].bytes,
             thousand[q].items[workspace].bytes + 1000 * cycle * batchBytes);
  }
}

QTEST_MAIN(TestMemoryEstimate)
// The shipped config at D4 (a 3.3M-parameter GPT, the default bucket larger than the model):
// each ZeRO stage holds less at its peak than the one before, because gradients are reduced and
// parameters gathered one layer at a time, not as the one bucket that would hold them all. With
// the prefetch bound at 0 only the running layer is gathered, less again.
void TestMemoryEstimate::zeroSavesMemoryAtItsPeak() {
  nlohmann::json doc =
      readJsonFile(std::string(PARASCOPE_SOURCE_DIR) + "/resources/configs/default.json");
  applyOverride(doc, "data_parallel_size=4");
  auto estimate = [&doc](const std::vector<std::string>& overrides) {
    nlohmann::json d = doc;
    for (const std::string& o : overrides) applyOverride(d, o);
    return estimateMemory(parseTrainConfig(d), 0, 4);
  };
  auto at = [](const MemoryEstimate& m, MemoryCategory c) {
    return m.items[static_cast<std::size_t>(c)];
  };
  auto modelState = [&at](const MemoryEstimate& m) {
    return at(m, MemoryCategory::Parameter).bytes + at(m, MemoryCategory::Gradient).bytes +
           at(m, MemoryCategory::OptimizerState).bytes;
  };
  std::vector<MemoryEstimate> stages;
  for (int z = 0; z <= 3; ++z)
    stages.push_back(estimate({"zero_optimization.stage=" + std::to_string(z)}));
  for (std::size_t z = 1; z < stages.size(); ++z) {
    QVERIFY2(modelState(stages[z]) < modelState(stages[z - 1]),
             qPrintable(QString("ZeRO-%1 %2 bytes, ZeRO-%3 %4")
                            .arg(z)
                            .arg(modelState(stages[z]))
                            .arg(z - 1)
                            .arg(modelState(stages[z - 1]))));
    QVERIFY(stages[z].perRankBytes() < stages[z - 1].perRankBytes());
  }
  // A block of width 256 holds 12 C^2 + 13 C parameters, the embeddings 256 + 128 rows of C
  // (no padding: every bucket is a multiple of 4).
  const double C = 256, block = 4 * (12 * C * C + 13 * C), embeddings = 4 * (256 + 128) * C;
  const MemoryItem grads2 = at(stages[2], MemoryCategory::Gradient);
  const MemoryItem params3 = at(stages[3], MemoryCategory::Parameter);
  QCOMPARE(grads2.residentBytes, at(stages[1], MemoryCategory::Gradient).bytes / 4);
  // Full-size buckets: the running layer's and one still reducing, and the embeddings' from the
  // head's backward (it writes the tied wte's gradient) to the end.
  QCOMPARE(grads2.bytes - grads2.residentBytes, 2 * block + embeddings);
  // Gathered: the running layer's and the next one's.
  QCOMPARE(params3.residentBytes, at(stages[1], MemoryCategory::Parameter).bytes / 4);
  QCOMPARE(params3.bytes - params3.residentBytes, 2 * block);
  const MemoryItem alone =
      at(estimate({"zero_optimization.stage=3", "zero_optimization.stage3_prefetch_bucket_size=0"}),
         MemoryCategory::Parameter);
  QCOMPARE(alone.residentBytes, params3.residentBytes);
  QCOMPARE(alone.bytes - alone.residentBytes, block);
}

#include "test_memory_estimate.moc"
