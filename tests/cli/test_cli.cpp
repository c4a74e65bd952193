// parascope-cli as a user runs it: exit codes (0 ok, 2 for usage and config errors), one-line
// error messages, JSON lines, and `grad` reproducing PyTorch's gradients through files.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "core/io/safetensors.h"
#include "tests/cli_run.h"

#if PARASCOPE_HAVE_CUDA
#include "core/cuda/device.h"
#endif

using namespace parascope;
namespace fs = std::filesystem;

class TestCli : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void cleanupTestCase();
  void configErrorsExitTwoWithOneLine_data();
  void configErrorsExitTwoWithOneLine();
  void trainPrintsJsonLines();
  void word2vecPrintsJsonLines();
  void word2vecRefusalsExitTwo();
  void planRanksWhatSimulatePredicts();
  void simulatePutsZeroOffloadInHostMemory();
  void autoParallelRunsThePlansChoice();
  void gradReproducesPyTorch();
  void gradRejectsWrongTokenFile();
  void gpuRunWithoutADeviceMakesNoFiles();
  void gradOnTheGpuMatchesTheReference();

 private:
  using Result = parascope::test::CliResult;
  static Result run(const QStringList& args) {
    return parascope::test::runCli(args, 300000, PARASCOPE_SOURCE_DIR);
  }
  QString path(const char* name) { return QString::fromStdString((dir_ / name).string()); }
  fs::path dir_;
};

void TestCli::initTestCase() {
  dir_ = fs::temp_directory_path() / ("parascope-test-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir_);
  std::ofstream(dir_ / "bad-key.json") << R"({"modle": {}})";
  std::ofstream(dir_ / "bad-json.json") << "{\"train_iters\": }";
  std::ofstream(dir_ / "empty.txt") << "";
  // A CPU node of 4 cores and 8 GiB, every rate in round figures.
  std::ofstream(dir_ / "node.json") << R"({"name": "four cores",
    "device": {"kind": "cpu", "cores": 4, "memory_GiB": 8,
      "matmul": {
        "fp32": {"peak_TFLOPs": 0.05, "backward_peak_TFLOPs": 0.05,
                 "half_efficiency_dimension": 32, "cast_ns_per_element": 0},
        "bf16": {"peak_TFLOPs": 0.03, "backward_peak_TFLOPs": 0.03,
                 "half_efficiency_dimension": 32, "cast_ns_per_element": 1},
        "fp16": {"peak_TFLOPs": 0.03, "backward_peak_TFLOPs": 0.03,
                 "half_efficiency_dimension": 32, "cast_ns_per_element": 1}},
      "elementwise_bandwidth_GBps": 8, "optimizer_bandwidth_GBps": 6,
      "instruction_overhead_us": 20},
    "devices_per_node": 4,
    "links": {
      "in_process": {"ring": {"latency_us": 2, "bandwidth_GBps": 6},
                     "tree": {"latency_us": 2, "bandwidth_GBps": 6}},
      "node": {"ring": {"latency_us": 5, "bandwidth_GBps": 5},
               "tree": {"latency_us": 5, "bandwidth_GBps": 5}},
      "network": {"ring": {"latency_us": 20, "bandwidth_GBps": 10},
                  "tree": {"latency_us": 20, "bandwidth_GBps": 10}}},
    "step_overhead_us": 3000})";
}

void TestCli::cleanupTestCase() {
  fs::remove_all(dir_);
}

void TestCli::configErrorsExitTwoWithOneLine_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QString>("message");
  QTest::newRow("missing file") << QStringList{"train", "--config", path("nope.json")}
                                << "error: " + path("nope.json") + ": cannot open config file\n";
  QTest::newRow("unknown key")
      << QStringList{"train", "--config", path("bad-key.json")}
      << "error: config: unknown key 'modle'; allowed here: aio, backend, "
         "bf16, communication_data_type, context_parallel_size, data, data_parallel_size, "
         "device, eval_interval, eval_iters, fp16, gradient_accumulation_steps, "
         "gradient_clipping, init_weights, log_interval, memory_limit_bytes, model, optimizer, "
         "parallel, "
         "pipeline_model_parallel_layout, pipeline_model_parallel_size, "
         "pipeline_schedule, recompute_granularity, save_weights, "
         "scheduler, seed, sequence_parallel, tensor_model_parallel_size, "
         "train_batch_size, train_iters, train_micro_batch_size_per_gpu, "
         "virtual_pipeline_model_parallel_size, zero_optimization\n";
  QTest::newRow("malformed") << QStringList{"train", "--config", path("bad-json.json")}
                             << "error: " + path("bad-json.json") +
                                    ": malformed JSON at line 1, column 17: syntax error while "
                                    "parsing value - unexpected '}'; expected '[', '{', or a "
                                    "literal\n";
  QTest::newRow("override") << QStringList{"train", "model.num_layers=-1"}
                            << "error: config: model.num_layers = -1 is out of range; allowed "
                               "1..1024\n";
  QTest::newRow("empty data") << QStringList{"train", "data.path=" + path("empty.txt")}
                              << "error: data.path: '" + path("empty.txt") +
                                     "' holds no text (0 bytes in 1 files); need at least 258 "
                                     "bytes\n";
  // What a GPU does not train yet, all of it in one line, on any machine. A build without CUDA
  // refuses the device for that.
#if PARASCOPE_HAVE_CUDA
  const QString strategy =
      "error: config: device \"cuda\" runs the GPT with any parallel strategy, ZeRO and "
      "precision, but not yet: communication_data_type \"bf16\"\n";
  const QString wideHeads =
      "error: config: device \"cuda\" runs the GPT with any parallel strategy, ZeRO and "
      "precision, but not yet: attention heads of 136 (model.hidden_size / "
      "model.num_attention_heads; at most 128)\n";
#else
  const QString strategy =
      "error: config: device \"cuda\" needs a build with CUDA (this one was "
      "built without the CUDA toolkit); valid here: \"cpu\"\n";
  const QString wideHeads = strategy;
#endif
  QTest::newRow("gpu strategy") << QStringList{"train", "device=cuda",
                                               "communication_data_type=bf16"}
                                << strategy;
  QTest::newRow("gpu wide heads") << QStringList{"train", "device=cuda", "model.hidden_size=544",
                                                 "model.num_attention_heads=4"}
                                  << wideHeads;
  QTest::newRow("largest batch on the cpu")
      << QStringList{"bench", "step", "--largest-batch"}
      << "error: bench step --largest-batch: for --device cuda (a GPU's memory); valid here: "
         "leave it out\n";
  QTest::newRow("device") << QStringList{"train", "device=gpu"}
                          << "error: config: device = \"gpu\" is not supported; allowed: cpu, "
                             "cuda\n";
}

void TestCli::configErrorsExitTwoWithOneLine() {
  QFETCH(QStringList, args);
  QFETCH(QString, message);
  const Result r = run(args);
  QCOMPARE(r.code, 2);
  QCOMPARE(r.err, message);
  QCOMPARE(run({"frobnicate"}).code, 2);
}

// A GPU run where no device is visible (or the build has no CUDA) is refused in one line, with
// the runtime's reason, before its checkpoint directory is made.
void TestCli::gpuRunWithoutADeviceMakesNoFiles() {
#if PARASCOPE_HAVE_CUDA
  if (cuda::deviceCount() > 0) QSKIP("a CUDA device is visible: test_gpu_gpt runs on it");
#endif
  const Result r = run({"train", "device=cuda", "--save", path("gpu-checkpoints")});
  QCOMPARE(r.code, 2);
#if PARASCOPE_HAVE_CUDA
  QVERIFY2(r.err.startsWith("error: config: device \"cuda\": no CUDA device is visible (") &&
               r.err.count('\n') == 1,
           qPrintable(r.err));
#else
  QVERIFY2(r.err.contains("needs a build with CUDA"), qPrintable(r.err));
#endif
  QVERIFY(!fs::exists(dir_ / "gpu-checkpoints"));
}

void TestCli::trainPrintsJsonLines() {
  const Result r =
      run({"train", "--json", "model.num_layers=1", "model.hidden_size=32",
           "model.context_length=16", "train_iters=3", "eval_interval=2", "eval_iters=1"});
  QCOMPARE(r.code, 0);
  const QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
  QCOMPARE(lines.size(), 1 + 3 + 2);  // start, 3 steps, evals at steps 2 and 3
  std::vector<nlohmann::json> events;
  for (const QString& l : lines) events.push_back(nlohmann::json::parse(l.toStdString()));
  QCOMPARE(events[0]["event"], "start");
  QCOMPARE(events[1]["event"], "step");
  // Step 1's loss is the initial model's: its logits are dot products of 32 features with
  // N(0, 0.02^2) embeddings (standard deviation about 0.1), so the loss lies within a few
  // hundredths of ln 256, the loss of uniform predictions over the 256 byte values.
  const double loss = events[1]["loss_nats"].get<double>();
  QVERIFY2(std::fabs(loss - std::log(256.0)) < 0.05, qPrintable(QString::number(loss)));
  QVERIFY(events[1].contains("targets_per_s"));
  QCOMPARE(events[3]["event"], "eval");
  QCOMPARE(events[3]["step"], 2);
}

// plan --json: a line per candidate, best first, its strategy under config keys and its
// figures in named units, then the search's counts; each candidate's step is what simulate
// predicts for its strategy given as settings.
// Every line one JSON object with the fields' units in their names; the run's loss falls.
void TestCli::word2vecPrintsJsonLines() {
  const Result r = run({"train", "--json", "--config", "resources/configs/word2vec.json",
                        "train_iters=30", "model.max_vocab_size=2000", "model.embedding_dim=16",
                        "parameter_server.sparse_table.rows=18384", "parameter_server.mode=async",
                        "parameter_server.server_num=2"});
  QCOMPARE(r.code, 0);
  std::map<std::string, std::vector<nlohmann::json>> events;
  for (const QString& l : r.out.split('\n', Qt::SkipEmptyParts)) {
    const nlohmann::json j = nlohmann::json::parse(l.toStdString());
    events[j["event"].get<std::string>()].push_back(j);
  }
  QCOMPARE(events["start"].size(), std::size_t{1});
  QCOMPARE(events["start"][0]["mode"], "async");
  QCOMPARE(events["step"].size(), std::size_t{30});
  QVERIFY(events["step"].back()["loss_nats"] < events["step"].front()["loss_nats"]);
  QVERIFY(events["step"].front().contains("words_per_s"));
  QCOMPARE(events["eval"].size(), std::size_t{1});
  QVERIFY(events["eval"][0].contains("validation_loss_nats"));
  QCOMPARE(events["server"].size(), std::size_t{2});
  QCOMPARE(events["worker"].size(), std::size_t{2});
  QVERIFY(events["worker"][0].contains("staleness_mean_pushes"));
  QVERIFY(events["server"][0]["rows_held"].get<std::int64_t>() > 0);
  QVERIFY(!events["neighbours"].empty());
  QCOMPARE(events["finished"].size(), std::size_t{1});
  QCOMPARE(events["finished"][0]["words"], 30 * 256 * 2);
}

void TestCli::word2vecRefusalsExitTwo() {
  const QString config = PARASCOPE_SOURCE_DIR "/resources/configs/word2vec.json";
  const parascope::test::CliResult bad =
      parascope::test::runCli({"train", "--config", config, "parameter_server.k_steps=3"}, 60000);
  QCOMPARE(bad.code, 2);
  QVERIFY2(bad.err.contains("parameter_server.k_steps applies to mode \"geo\" only"),
           qPrintable(bad.err));
  QVERIFY(bad.out.isEmpty());
  const parascope::test::CliResult flag = parascope::test::runCli(
      {"train", "--config", config, "--switch", "5:parameter_server.server_num=2"}, 60000);
  QCOMPARE(flag.code, 2);
  QVERIFY2(flag.err.contains("--switch: not for a parameter-server run"), qPrintable(flag.err));
  const parascope::test::CliResult gpt = parascope::test::runCli(
      {"train", "--config", PARASCOPE_SOURCE_DIR "/resources/configs/default.json",
       "parameter_server.mode=sync"},
      60000);
  QCOMPARE(gpt.code, 2);
  // Every key of the engine's that the document holds, in one line.
  QVERIFY2(gpt.err.contains("config: gradient_clipping, optimizer and scheduler do not apply with "
                            "parameter_server: the servers update each table by its own rule "
                            "(parameter_server.sparse_table and dense_table: optimizer, "
                            "learning_rate); nor do eval_interval and gradient_accumulation_steps"),
           qPrintable(gpt.err));
}

void TestCli::planRanksWhatSimulatePredicts() {
  const Result r = run({"plan", "--json", "--system", "a100-80gb", "--gpus", "8", "--top", "3"});
  QCOMPARE(r.code, 0);
  const QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
  QCOMPARE(lines.size(), 3 + 1);
  std::vector<nlohmann::json> events;
  for (const QString& l : lines) events.push_back(nlohmann::json::parse(l.toStdString()));
  const nlohmann::json& search = events.back();
  QCOMPARE(search["event"], "search");
  QCOMPARE(search["gpus"], 8);
  QCOMPARE(search["global_batch"], 8);  // the default config's micro-batch 8, one step, one rank
  QCOMPARE(search["candidates"].get<long>(),
           search["invalid"].get<long>() + search["out_of_memory"].get<long>() +
               search["simulated"].get<long>() + search["bounded"].get<long>());
  double previous = 0;
  for (int i = 0; i < 3; ++i) {
    const nlohmann::json& c = events[static_cast<std::size_t>(i)];
    QCOMPARE(c["event"], "candidate");
    QCOMPARE(c["rank"], i + 1);
    QVERIFY(c["step_time_s"].get<double>() >= previous);
    previous = c["step_time_s"].get<double>();
    for (const char* key : {"tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
                            "mfu", "bubble_fraction"})
      QVERIFY2(c[key].is_number(), key);
    const nlohmann::json& memory = c["memory_bytes_per_gpu"];
    double sum = 0;
    for (const char* key : {"parameters", "gradients", "optimizer_state", "activations",
                            "communication_buffers", "workspace"})
      sum += memory[key].get<double>();
    QCOMPARE(memory["total"].get<double>(), sum);
    QStringList args = {"simulate", "--json", "--system", "a100-80gb"};
    for (const auto& [key, value] : c["strategy"].items())
      args << QString::fromStdString(key + "=" +
                                     (value.is_string() ? value.get<std::string>() : value.dump()));
    const Result simulated = run(args);
    QCOMPARE(simulated.code, 0);
    const nlohmann::json prediction =
        nlohmann::json::parse(simulated.out.split('\n').front().toStdString());
    QCOMPARE(prediction["step_s"].get<double>(), c["step_time_s"].get<double>());
  }
}

// ZeRO-Offload from a GPU: simulate moves the optimizer state (bf16: 12 bytes an element of the
// shard) off the device into host memory, with the host's copies of the shard's values and
// gradients (2 + 2 bytes), in --json and in words.
void TestCli::simulatePutsZeroOffloadInHostMemory() {
  auto predict = [&](QStringList extra) {
    // A named system: this machine's would be calibrated first, and its memory is not the point.
    const Result r = run(QStringList{"simulate", "--json", "--system", "a100-80gb", "device=cuda",
                                     "bf16.enabled=true", "zero_optimization.stage=1"} +
                         extra);
    if (r.code != 0) throw std::runtime_error(r.err.toStdString());
    return nlohmann::json::parse(r.out.split('\n').front().toStdString());
  };
  const nlohmann::json onDevice = predict({});
  const nlohmann::json offloaded = predict({"zero_optimization.offload_optimizer.device=cpu"});
  const double state = onDevice["memory_per_rank_bytes"]["optimizer state"].get<double>();
  QVERIFY(state > 0);
  QCOMPARE(onDevice["host_memory_per_rank_bytes"].get<double>(), 0.0);
  QCOMPARE(offloaded["memory_per_rank_bytes"]["optimizer state"].get<double>(), 0.0);
  QCOMPARE(offloaded["host_memory_per_rank_bytes"].get<double>(), state / 12 * 16);
  const Result words =
      run({"simulate", "--system", "a100-80gb", "device=cuda", "bf16.enabled=true",
           "zero_optimization.stage=1", "zero_optimization.offload_optimizer.device=cpu"});
  QCOMPARE(words.code, 0);
  QVERIFY2(words.out.contains("host memory per rank (offload_optimizer cpu): "),
           qPrintable(words.out));
}

// parallel.auto: train prints the plan's choice for the world, then runs exactly that strategy,
// keeping the keys the config sets; a config still asking for it elsewhere is refused.
void TestCli::autoParallelRunsThePlansChoice() {
  const Result r = run({"train", "--json", "--system", path("node.json"), "parallel.auto=true",
                        "parallel.world_size=4", "recompute_granularity=selective", "train_iters=1",
                        "eval_interval=0"});
  QCOMPARE(r.code, 0);
  const QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
  QVERIFY(lines.size() >= 2);
  const nlohmann::json choice = nlohmann::json::parse(lines[0].toStdString());
  const nlohmann::json start = nlohmann::json::parse(lines[1].toStdString());
  QCOMPARE(choice["event"], "auto_parallel");
  QCOMPARE(choice["world_size"], 4);
  QCOMPARE(choice["system"], "four cores");
  QVERIFY(choice["predicted_step_s"].get<double>() > 0);
  QVERIFY(choice.contains("runner_up"));
  QCOMPARE(start["event"], "start");
  for (const auto& [key, value] : choice["strategy"].items()) QCOMPARE(start[key], value);
  QCOMPARE(start["recompute_granularity"], "selective");  // given, so kept
  QCOMPARE(start["train_batch_size"], 8);                 // the config's global batch
  const long ranks = start["data_parallel_size"].get<long>() *
                     start["tensor_model_parallel_size"].get<long>() *
                     start["pipeline_model_parallel_size"].get<long>();
  QCOMPARE(ranks, 4L);
  const Result refused = run({"simulate", "--system", path("node.json"), "parallel.auto=true"});
  QCOMPARE(refused.code, 2);
  QVERIFY(
      refused.err.startsWith("error: config: parallel.auto = true is resolved by "
                             "`parascope-cli train` before the run"));
  // Without --system too: the config is refused before this machine is calibrated.
  const Result first = run({"simulate", "parallel.auto=true"});
  QCOMPARE(first.code, 2);
  QCOMPARE(first.err, refused.err);
  const Result world = run(
      {"train", "--system", path("node.json"), "parallel.auto=true", "parallel.world_size=300"});
  QCOMPARE(world.code, 2);
  QCOMPARE(world.err, QString("error: config: parallel.world_size = 300 is out of range; valid: "
                              "1..256 (in-process ranks)\n"));
}

void TestCli::gradReproducesPyTorch() {
  const SafetensorsFile ref =
      readSafetensors(PARASCOPE_SOURCE_DIR "/tests/fixtures/gpt_reference.safetensors");
  std::vector<std::pair<std::string, Tensor>> weights;
  for (const auto& [name, t] : ref.tensors) {
    if (name.rfind("weight/", 0) == 0) weights.emplace_back(name.substr(7), t);
  }
  writeSafetensors((dir_ / "w.safetensors").string(), weights);
  const Tensor& tokens = ref.tensors.at("tokens");
  std::ofstream(dir_ / "tokens.bin", std::ios::binary)
      .write(static_cast<const char*>(tokens.raw()), static_cast<std::streamsize>(tokens.nbytes()));
  auto cfg = nlohmann::json::parse(ref.metadata.at("config"));
  cfg["type"] = "gpt";
  std::ofstream(dir_ / "gpt.json")
      << nlohmann::json{{"model", cfg}, {"train_micro_batch_size_per_gpu", 4}}.dump();
  const Result r = run({"grad", "--config", path("gpt.json"), "--weights", path("w.safetensors"),
                        "--tokens", path("tokens.bin"), "--out", path("g.safetensors")});
  QCOMPARE(r.code, 0);
  const SafetensorsFile g = readSafetensors((dir_ / "g.safetensors").string());
  QCOMPARE(g.tensors.size(), weights.size() + 1);
  const float loss = *g.tensors.at("loss").data<float>();
  QVERIFY(std::fabs(loss - *ref.tensors.at("loss").data<float>()) < 1e-5f);
  QCOMPARE(g.tensors.at("loss").shape(), Shape{});
  for (const auto& [name, w] : weights) {
    const Tensor& got = g.tensors.at(name);
    const Tensor& want = ref.tensors.at("grad/" + name);
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      const float a = got.data<float>()[i], b = want.data<float>()[i];
      QVERIFY2(std::fabs(a - b) <= 1e-6f + 1e-5f * std::fabs(b), name.c_str());
    }
  }
}

void TestCli::gradRejectsWrongTokenFile() {
  std::ofstream(dir_ / "short.bin", std::ios::binary) << "abcd";
  const Result r = run({"grad", "--config", path("gpt.json"), "--weights", path("w.safetensors"),
                        "--tokens", path("short.bin"), "--out", path("x.safetensors")});
  QCOMPARE(r.code, 2);
  QCOMPARE(r.err, "error: " + path("short.bin") +
                      ": 4 bytes, expected 272 = 4 (train_micro_batch_size_per_gpu) x 17 "
                      "(context_length + 1) int32 token ids\n");
  QVERIFY(!fs::exists(dir_ / "x.safetensors"));
}

// The same gradients on the GPU (after gradReproducesPyTorch wrote the weights and tokens): each
// within 1e-4 of its tensor's largest reference gradient, the loss within 1e-5, since the GPU's
// sums run in other orders. Without a device, or a build without CUDA, refused in one line
// before any file is written.
void TestCli::gradOnTheGpuMatchesTheReference() {
  const QStringList args = {"grad",
                            "--config",
                            path("gpt.json"),
                            "--weights",
                            path("w.safetensors"),
                            "--tokens",
                            path("tokens.bin"),
                            "--out",
                            path("gpu.safetensors"),
                            "--device",
                            "cuda"};
  const Result r = run(args);
#if !PARASCOPE_HAVE_CUDA
  QCOMPARE(r.code, 2);
  QVERIFY2(r.err.contains("needs a build with CUDA"), qPrintable(r.err));
#else
  if (r.code != 0) {
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.startsWith("error: grad --device cuda: no CUDA device is visible ("),
             qPrintable(r.err));
    QVERIFY(!fs::exists(dir_ / "gpu.safetensors"));
    QSKIP("no CUDA device: the refusal is checked, the GPU's gradients are not");
  }
  const SafetensorsFile ref =
      readSafetensors(PARASCOPE_SOURCE_DIR "/tests/fixtures/gpt_reference.safetensors");
  const SafetensorsFile g = readSafetensors((dir_ / "gpu.safetensors").string());
  const float loss = *g.tensors.at("loss").data<float>();
  QVERIFY(std::fabs(loss - *ref.tensors.at("loss").data<float>()) < 1e-5f);
  for (const auto& [name, got] : g.tensors) {
    if (name == "loss") continue;
    const Tensor& want = ref.tensors.at("grad/" + name);
    float largest = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i)
      largest = std::max(largest, std::fabs(want.data<float>()[i]));
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      QVERIFY2(std::fabs(got.data<float>()[i] - want.data<float>()[i]) <= 1e-4f * largest,
               name.c_str());
    }
  }
#endif
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
