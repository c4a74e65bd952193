// Datasets, safetensors files and configs: deterministic batches, and the exact messages for
// bad input (empty text, wrong IDX magic, truncated gzip, bad safetensors, bad config keys).
#include <QtTest>

#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "core/common/error.h"
#include "core/config/config.h"
#include "core/data/idx_dataset.h"
#include "core/data/text_dataset.h"
#include "core/io/safetensors.h"

using namespace parascope;
namespace fs = std::filesystem;

class TestData : public QObject {
  Q_OBJECT
 private slots:
  void init();
  void cleanup();
  void textBatchesAreDeterministicWindows();
  void textDirectorySkipsIndexFilesAndSplits();
  void textRejectsEmptyAndShortInput();
  void idxReadsAndRejectsBadFiles();
  void fashionMnistFromDebianPackage();
  void safetensorsRoundTripAndBadFiles();
  void configErrorsNameTheKey_data();
  void configErrorsNameTheKey();
  void configDerivesBatchSizesAndAppliesOverrides();

 private:
  fs::path dir_;
  void write(const fs::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  }
  void writeGz(const fs::path& p, const std::string& bytes) {
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  }
};

template <typename F>
QString userErrorOf(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return QString::fromUtf8(e.what());
  }
  return QStringLiteral("<no error>");
}

void TestData::init() {
  dir_ = fs::temp_directory_path() / ("parascope-test-data-" + std::to_string(::getpid()));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
}

void TestData::cleanup() {
  fs::remove_all(dir_);
}

void TestData::textBatchesAreDeterministicWindows() {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += static_cast<char>('a' + i % 26);
  write(dir_ / "t.txt", text);
  TextDataset d((dir_ / "t.txt").string(), 8, 0.0, 42);
  const Batch a = d.batch(Split::Train, 10, 4, defaultAllocator());
  const Batch b = d.batch(Split::Train, 12, 1, defaultAllocator());
  QCOMPARE(a.inputs.shape(), (Shape{4, 8}));
  // Sample 12 is the same whichever batch asks for it.
  QCOMPARE(std::memcmp(a.inputs.data<std::int32_t>() + 2 * 8, b.inputs.data<std::int32_t>(), 32),
           0);
  // Targets are the inputs shifted by one byte of the same window.
  for (int r = 0; r < 4; ++r) {
    for (int t = 0; t + 1 < 8; ++t) {
      QCOMPARE(a.targets.data<std::int32_t>()[r * 8 + t],
               a.inputs.data<std::int32_t>()[r * 8 + t + 1]);
    }
    const int first = a.inputs.data<std::int32_t>()[r * 8];
    QCOMPARE(a.targets.data<std::int32_t>()[r * 8], 'a' + (first - 'a' + 1) % 26);
  }
  QCOMPARE(d.targetsPerSample(), 8);
}

void TestData::textDirectorySkipsIndexFilesAndSplits() {
  fs::create_directories(dir_ / "sub");
  write(dir_ / "b", std::string(40000, 'b'));
  write(dir_ / "sub" / "a", std::string(20000, 'a'));
  write(dir_ / "b.dat", std::string(1000, '\xff'));  // fortune index: skipped
  fs::create_symlink(dir_ / "b", dir_ / "b.u8");     // links: skipped
  TextDataset d(dir_.string(), 16, 0.1, 1);
  QCOMPARE(d.files(), 2);
  QCOMPARE(d.bytes(Split::Train) + d.bytes(Split::Validation), std::int64_t{60000});
  QCOMPARE(d.maxByte(), int{'b'});
  // Validation takes every 10th 16 KiB block; 60000 bytes are fewer than 10 blocks, so it is the
  // last tenth of the text instead.
  QCOMPARE(d.bytes(Split::Validation), std::int64_t{6000});
}

void TestData::textRejectsEmptyAndShortInput() {
  write(dir_ / "empty.txt", "");
  QCOMPARE(userErrorOf([&] { TextDataset((dir_ / "empty.txt").string(), 8, 0.1, 1); }),
           QString("data.path: '%1' holds no text (0 bytes in 1 files); need at least 18 bytes")
               .arg(QString::fromStdString((dir_ / "empty.txt").string())));
  write(dir_ / "short.txt", "tiny");
  QVERIFY(userErrorOf([&] {
            TextDataset((dir_ / "short.txt").string(), 8, 0.0, 1);
          }).contains("too short for training (4 bytes)"));
  QVERIFY(userErrorOf([&] {
            TextDataset((dir_ / "missing").string(), 8, 0.1, 1);
          }).endsWith("does not exist"));
}

void TestData::idxReadsAndRejectsBadFiles() {
  std::string labels = std::string("\x00\x00\x08\x01", 4) + std::string("\x00\x00\x00\x03", 4) +
                       std::string("\x01\x02\x00", 3);
  writeGz(dir_ / "labels.gz", labels);
  const IdxArray a = readIdx((dir_ / "labels.gz").string(), 1);
  QCOMPARE(a.dims, (std::vector<std::uint32_t>{3}));
  QCOMPARE(a.data, (std::vector<std::uint8_t>{1, 2, 0}));

  writeGz(dir_ / "magic.gz", std::string("\x00\x00\x08\x03", 4) + labels.substr(4));
  QVERIFY(userErrorOf([&] {
            readIdx((dir_ / "magic.gz").string(), 1);
          }).contains("wrong IDX magic number 0x00000803; expected 0x00000801"));

  writeGz(dir_ / "short.gz", labels.substr(0, 9));
  QVERIFY(userErrorOf([&] {
            readIdx((dir_ / "short.gz").string(), 1);
          }).contains("truncated: the file ends inside the data"));

  // A gzip stream cut in the middle: zlib reports the unexpected end of the compressed data.
  std::string big(4000, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7919 % 251);
  writeGz(dir_ / "full.gz", std::string("\x00\x00\x08\x01\x00\x00\x0f\xa0", 8) + big);
  std::ifstream in(dir_ / "full.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write(dir_ / "cut.gz", gz.substr(0, gz.size() / 2));
  const QString cut = userErrorOf([&] { readIdx((dir_ / "cut.gz").string(), 1); });
  QVERIFY2(cut.contains("truncated") && cut.contains("cut.gz"), qPrintable(cut));

  QVERIFY(
      userErrorOf([&] { readIdx((dir_ / "nope.gz").string(), 1); }).contains("IDX file not found"));
}

void TestData::fashionMnistFromDebianPackage() {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir)) QSKIP("dataset-fashion-mnist is not installed");
  IdxDataset d(dir, 3);
  QCOMPARE(d.samples(Split::Train), std::int64_t{60000});
  QCOMPARE(d.samples(Split::Validation), std::int64_t{10000});
  QCOMPARE(d.features(), 784);
  QCOMPARE(d.classes(), 10);
  // One epoch visits every training image exactly once.
  std::vector<int> seen(10, 0);
  const Batch b = d.batch(Split::Train, 0, 60000, defaultAllocator());
  for (int i = 0; i < 60000; ++i)
    ++seen[static_cast<std::size_t>(b.targets.data<std::int32_t>()[i])];
  for (int c : seen) QCOMPARE(c, 6000);  // Fashion-MNIST is balanced
}

void TestData::safetensorsRoundTripAndBadFiles() {
  Tensor a = Tensor::empty({2, 3}, DType::F32, MemoryCategory::Workspace);
  for (int i = 0; i < 6; ++i) a.data<float>()[i] = static_cast<float>(i) * 0.5f;
  Tensor b = Tensor::empty({4}, DType::BF16, MemoryCategory::Workspace);
  for (int i = 0; i < 4; ++i) b.data<std::uint16_t>()[i] = floatToBf16(static_cast<float>(i));
  const std::string path = (dir_ / "w.safetensors").string();
  writeSafetensors(path, {{"a", a}, {"b", b}}, {{"k", "v"}});
  QVERIFY(!fs::exists(path + ".partial"));
  const SafetensorsFile f = readSafetensors(path);
  QCOMPARE(f.metadata.at("k"), std::string("v"));
  QCOMPARE(f.tensors.at("a").shape(), (Shape{2, 3}));
  QCOMPARE(f.tensors.at("a").data<float>()[5], 2.5f);
  QCOMPARE(f.tensors.at("b").dtype(), DType::BF16);
  QCOMPARE(bf16ToFloat(f.tensors.at("b").data<std::uint16_t>()[3]), 3.0f);

  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write(dir_ / "cut.safetensors", bytes.substr(0, bytes.size() - 4));
  QVERIFY(userErrorOf([&] {
            readSafetensors((dir_ / "cut.safetensors").string());
          }).contains("tensor 'b' data_offsets [24, 32) do not match"));
  write(dir_ / "tiny.safetensors", "abc");
  QVERIFY(userErrorOf([&] {
            readSafetensors((dir_ / "tiny.safetensors").string());
          }).contains("not a safetensors file"));
  write(dir_ / "huge.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10));
  QVERIFY(userErrorOf([&] {
            readSafetensors((dir_ / "huge.safetensors").string());
          }).contains("header length"));
  std::string badJson = std::string("\x04\x00\x00\x00\x00\x00\x00\x00", 8) + "{oops";
  write(dir_ / "json.safetensors", badJson);
  QVERIFY(userErrorOf([&] {
            readSafetensors((dir_ / "json.safetensors").string());
          }).contains("header is not a JSON object"));
}

void TestData::configErrorsNameTheKey_data() {
  QTest::addColumn<QString>("json");
  QTest::addColumn<QString>("message");
  QTest::newRow("unknown key") << R"({"model": {"hiden_size": 3}})"
                               << "config: unknown key 'model.hiden_size'; allowed here: "
                                  "context_length, ffn_hidden_size, gated_linear_unit, "
                                  "hidden_size, mlp_ratio, num_attention_heads, num_layers, "
                                  "num_query_groups, type, vocab_size";
  QTest::newRow("wrong type") << R"({"train_iters": "ten"})"
                              << "config: train_iters must be an integer in 1..1073741824, got "
                                 "a string (\"ten\")";
  QTest::newRow("out of range") << R"({"model": {"num_layers": 0}})"
                                << "config: model.num_layers = 0 is out of range; allowed 1..1024";
  QTest::newRow("bad choice")
      << R"({"model": {"type": "rnn"}})"
      << "config: model.type = \"rnn\" is not supported; allowed: gpt, mlp, word2vec";
  QTest::newRow("heads") << R"({"model": {"hidden_size": 100, "num_attention_heads": 3}})"
                         << "config: model.hidden_size (100) must be divisible by "
                            "model.num_attention_heads (3)";
  QTest::newRow("batch") << R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4,
                                "gradient_accumulation_steps": 2})"
                         << "config: train_batch_size (10), train_micro_batch_size_per_gpu (4) "
                            "and gradient_accumulation_steps (2) with data-parallel size 1 are "
                            "inconsistent: train_batch_size must equal micro-batch x "
                            "accumulation steps x data-parallel size";
  QTest::newRow("betas") << R"({"optimizer": {"params": {"betas": [0.9]}}})"
                         << "config: optimizer.params.betas must be an array of 2 numbers in "
                            "[0.0, 0.999999], got [0.9]";
  QTest::newRow("pairing") << R"({"model": {"type": "mlp"}})"
                           << "config: model.type \"mlp\" needs data.type \"idx\"";
  QTest::newRow("not an object") << R"({"data": 3})"
                                 << "config: data must be an object, got an integer (3)";
}

void TestData::configErrorsNameTheKey() {
  QFETCH(QString, json);
  QFETCH(QString, message);
  const auto j = nlohmann::json::parse(json.toStdString());
  QCOMPARE(userErrorOf([&] { parseTrainConfig(j); }), message);
}

void TestData::configDerivesBatchSizesAndAppliesOverrides() {
  auto parse = [](const char* text) { return parseTrainConfig(nlohmann::json::parse(text)); };
  const TrainConfig a = parse(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8})");
  QCOMPARE(a.gradientAccumulation, 4);
  const TrainConfig b = parse(R"({"train_batch_size": 32, "gradient_accumulation_steps": 2})");
  QCOMPARE(b.microBatch, 16);
  const TrainConfig c =
      parse(R"({"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 5})");
  QCOMPARE(c.globalBatch, 15);
  QVERIFY(userErrorOf([&] {
            parse(R"({"train_batch_size": 10, "gradient_accumulation_steps": 3})");
          }).contains("inconsistent"));

  nlohmann::json doc = nlohmann::json::object();
  applyOverride(doc, "model.num_layers=2");
  applyOverride(doc, "data.path=/tmp/some text");
  applyOverride(doc, "optimizer.params.betas=[0.8,0.9]");
  const TrainConfig o = parseTrainConfig(doc);
  QCOMPARE(o.model.gpt.numLayers, 2);
  QCOMPARE(o.data.path, std::string("/tmp/some text"));
  QCOMPARE(o.adamw.beta1, 0.8f);
  QVERIFY(userErrorOf([&] { applyOverride(doc, "novalue"); }).contains("key.path=value"));

  write(dir_ / "bad.json", "{\n  \"train_iters\": 3,\n}");
  QCOMPARE(userErrorOf([&] { readJsonFile((dir_ / "bad.json").string()); }),
           QString::fromStdString((dir_ / "bad.json").string()) +
               ": malformed JSON at line 3, column 1: syntax error while parsing object key - "
               "unexpected "
               "'}'; expected string literal");
  QVERIFY(userErrorOf([&] {
            readJsonFile((dir_ / "none.json").string());
          }).endsWith("cannot open config file"));

  // The lr schedule: linear warm-up then cosine to the floor.
  TrainConfig s = parse(R"({"train_iters": 110, "optimizer": {"params": {"lr": 1.0}},
      "scheduler": {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 10, "cos_min_ratio": 0.1}}})");
  QCOMPARE(learningRate(s, 0), 0.1);
  QCOMPARE(learningRate(s, 9), 1.0);
  QCOMPARE(learningRate(s, 10), 1.0);
  QVERIFY(std::fabs(learningRate(s, 60) - 0.55) < 1e-12);
  QVERIFY(std::fabs(learningRate(s, 110) - 0.1) < 1e-12);
}

QTEST_GUILESS_MAIN(TestData)
#include "test_data.moc"
