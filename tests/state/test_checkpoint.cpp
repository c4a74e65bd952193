// Checkpoint format: save under one slicing and read back bit-exact under another (f32, and
// bf16 / fp16 rounded as kernels::narrow rounds), `latest` and keep-K pruning, replacing a step,
// and every damaged checkpoint refused at open (or at verifyChecksums) with its exact message.
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include <zlib.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "checkpoint_fixture.h"
#include "core/common/error.h"
#include "core/io/safetensors.h"
#include "core/kernels/precision.h"

using namespace parascope;
using namespace parascope::test;
namespace fs = std::filesystem;

namespace {

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

nlohmann::json readManifest(const fs::path& dir) {
  return nlohmann::json::parse(readText(dir / "manifest.json"));
}

std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// Every element of every (tensor, field) as `step` saved it, read in runs of `chunk`.
void checkContents(const CheckpointReader& reader, const std::vector<LogicalTensor>& tensors,
                   int step, std::int64_t chunk) {
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const std::int64_t n = elementCount(tensors[t]);
    for (int f = 0; f < kStateFieldCount; ++f) {
      const auto field = static_cast<StateField>(f);
      for (std::int64_t begin = 0; begin < n; begin += chunk) {
        const std::int64_t count = std::min(chunk, n - begin);
        std::vector<float> got(static_cast<std::size_t>(count), -1.0f);
        reader.read({tensors[t].name, field, begin, count, got.data(), DType::F32});
        for (std::int64_t i = 0; i < count; ++i) {
          const float want = stateValue(step, t, field, begin + i);
          if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want)) {
            QFAIL(qPrintable(QString("%1 %2 element %3: %4, expected %5")
                                 .arg(tensors[t].name.c_str(), stateFieldName(field))
                                 .arg(begin + i)
                                 .arg(got[i])
                                 .arg(want)));
          }
        }
      }
    }
  }
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  std::vector<LogicalTensor> tensors_ = fakeTensors(24);
  std::string good_;  // a good checkpoint directory, copied before each damage

  // A copy of the good checkpoint, damaged by `damage`.
  fs::path damagedCopy(const char* name, const std::function<void(const fs::path&)>& damage) {
    const fs::path dir = fs::path(tmp_.path().toStdString()) / "damaged" / name;
    fs::create_directories(dir.parent_path());
    fs::copy(good_, dir, fs::copy_options::recursive);
    damage(dir);
    return dir;
  }
  // Edits manifest.json and, unless `stamp` is false, gives it the checksum of its new contents
  // (zlib's CRC-32 of the compact document without the checksum), so that the damage reaches the
  // checks behind the manifest's own.
  void editManifest(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit,
                    bool stamp = true) {
    nlohmann::json m = readManifest(dir);
    edit(m);
    if (stamp && m.contains("manifest_crc32")) {
      m.erase("manifest_crc32");
      const std::string text = m.dump();
      m["manifest_crc32"] =
          crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size()));
    }
    writeText(dir / "manifest.json", m.dump(1));
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    good_ = saveFakeCheckpoint(tmp_.filePath("good").toStdString(), 7, tensors_, 3, 0);
  }

  void roundTripUnderAnotherSlicing() {
    const CheckpointReader reader(tmp_.filePath("good").toStdString());  // through `latest`
    QCOMPARE(reader.directory(), good_);
    const CheckpointManifest& m = reader.manifest();
    QCOMPARE(m.formatVersion, 2);
    QCOMPARE(m.files.size(), std::size_t{3});
    QCOMPARE(m.files[1].name, std::string("rank-00001.safetensors"));
    QCOMPARE(m.slices.size(), std::size_t{4 * 3 * 3 * 2});
    QCOMPARE(m.config["seed"].get<int>(), 1234);
    QCOMPARE(countersToJson(m.counters), countersToJson(fakeCounters(7)));
    QCOMPARE(m.tensors.size(), tensors_.size());
    for (std::size_t t = 0; t < tensors_.size(); ++t) {
      QCOMPARE(m.tensors[t].name, tensors_[t].name);
      QCOMPARE(m.tensors[t].shape, tensors_[t].shape);
    }
    checkCheckpointTensors(m, tensors_, reader.directory());
    reader.verifyChecksums();
    checkContents(reader, tensors_, 7, 1 << 20);  // whole tensors
    checkContents(reader, tensors_, 7, 37);       // runs crossing the writers' slices
    checkContents(reader, tensors_, 7, 1);
  }

  void shardsAreSafetensors() {
    // Each shard is a plain safetensors file: its tensors are the slices, by name.
    const SafetensorsFile f = readSafetensors(good_ + "/rank-00002.safetensors");
    QCOMPARE(f.metadata.at("format"), std::string("parascope-checkpoint"));
    QCOMPARE(f.metadata.at("rank"), std::string("2"));
    const CheckpointManifest m = CheckpointReader(good_).manifest();
    for (const CheckpointSlice& s : m.slices) {
      if (s.file != "rank-00002.safetensors") continue;
      const std::string name =
          s.tensor + "/" + stateFieldName(s.field) + "/" + std::to_string(s.begin);
      QCOMPARE(f.tensors.at(name).numel(), s.count);
      std::size_t t = 0;
      while (tensors_[t].name != s.tensor) ++t;
      QCOMPARE(f.tensors.at(name).data<float>()[0], stateValue(7, t, s.field, s.begin));
    }
  }

  void readsRoundedTo16Bits_data() {
    QTest::addColumn<int>("dtype");
    QTest::newRow("bf16") << static_cast<int>(DType::BF16);
    QTest::newRow("fp16") << static_cast<int>(DType::F16);
  }
  void readsRoundedTo16Bits() {
    QFETCH(int, dtype);
    const auto type = static_cast<DType>(dtype);
    const CheckpointReader reader(good_);
    for (std::size_t t = 0; t < tensors_.size(); ++t) {
      const std::int64_t n = elementCount(tensors_[t]);
      const std::int64_t begin = n / 5, count = n - n / 5 - 3;
      std::vector<std::uint16_t> got(static_cast<std::size_t>(count));
      reader.read({tensors_[t].name, StateField::ExpAvg, begin, count, got.data(), type});
      std::vector<float> exact(static_cast<std::size_t>(count));
      for (std::int64_t i = 0; i < count; ++i) {
        exact[i] = stateValue(7, t, StateField::ExpAvg, begin + i);
      }
      std::vector<std::uint16_t> want(static_cast<std::size_t>(count));
      kernels::narrow(exact.data(), want.data(), count, type);
      QCOMPARE(got, want);
    }
  }

  void readErrors() {
    const CheckpointReader reader(good_);
    float x[4];
    QCOMPARE(messageOf([&] {
               reader.read({"lm_head.weight", StateField::Param, 0, 4, x});
             }),
             good_ + ": no tensor 'lm_head.weight' in this checkpoint");
    QCOMPARE(messageOf([&] {
               reader.read({"h.0.ln_1.bias", StateField::ExpAvgSq, 22, 4, x});
             }),
             good_ + ": tensor 'h.0.ln_1.bias' (exp_avg_sq) has 24 elements; cannot read [22, 26)");
  }

  void anotherModelsShapes() {
    const CheckpointManifest m = CheckpointReader(good_).manifest();
    std::vector<LogicalTensor> other = fakeTensors(24);
    other[2].shape = {64, 24};
    QCOMPARE(messageOf([&] { checkCheckpointTensors(m, other, "ckpt"); }),
             std::string("ckpt: tensor 'wte.weight' is [50, 24] in the checkpoint but [64, 24] in "
                         "this model (a checkpoint of another model?)"));
    other = fakeTensors(24);
    other.push_back({"ln_f.weight", {24}});
    QCOMPARE(messageOf([&] { checkCheckpointTensors(m, other, "ckpt"); }),
             std::string("ckpt: the model's tensor 'ln_f.weight' [24] is not in the checkpoint"));
    other = fakeTensors(24);
    other.pop_back();
    QCOMPARE(messageOf([&] { checkCheckpointTensors(m, other, "ckpt"); }),
             std::string("ckpt: the checkpoint's tensor 'h.0.mlp.c_fc.weight' is not in this "
                         "model (a checkpoint of another model?)"));
  }

  void keepAndLatest() {
    const std::string dir = tmp_.filePath("keep").toStdString();
    const auto small = fakeTensors(4);
    for (int step = 1; step <= 5; ++step) saveFakeCheckpoint(dir, step, small, 2, 2);
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    QCOMPARE(names, (std::vector<std::string>{"latest", "step-00000004", "step-00000005"}));
    QCOMPARE(readText(fs::path(dir) / "latest"), std::string("step-00000005\n"));
    QCOMPARE(CheckpointReader(dir).manifest().counters.step, 5);

    // The same step again (a resumed run): replaced whole, with another number of ranks.
    saveFakeCheckpoint(dir, 5, small, 4, 2);
    const CheckpointReader again(dir);
    QCOMPARE(again.manifest().files.size(), std::size_t{4});
    checkContents(again, small, 5, 3);
    QVERIFY(!fs::exists(stagingDirectory(dir, 5)));

    // keep 0 keeps everything.
    const std::string all = tmp_.filePath("keep-all").toStdString();
    for (int step = 1; step <= 3; ++step) saveFakeCheckpoint(all, step, small, 1, 0);
    QVERIFY(fs::exists(fs::path(all) / "step-00000001"));
    QVERIFY(fs::exists(fs::path(all) / "step-00000003"));
  }

  void leftoversOfAKilledSaveAreIgnoredAndCleared() {
    const std::string dir = tmp_.filePath("leftovers").toStdString();
    const auto small = fakeTensors(4);
    saveFakeCheckpoint(dir, 0, small, 2, 0);
    saveFakeCheckpoint(dir, 1, small, 2, 2);
    // A save of step 2 killed after its shards, and a removal of step 0 killed after the
    // manifest went.
    prepareCheckpoint(dir, 2);
    writeShard(stagingDirectory(dir, 2), 0, makeFakeRanks(small, 2, 1).slices[0]);
    fs::remove(fs::path(dir) / "step-00000000" / "manifest.json");
    QCOMPARE(CheckpointReader(dir).manifest().counters.step, 1);
    saveFakeCheckpoint(dir, 3, small, 2, 2);
    QVERIFY(!fs::exists(stagingDirectory(dir, 2)));
    QVERIFY(!fs::exists(fs::path(dir) / "step-00000000"));
    QVERIFY(fs::exists(fs::path(dir) / "step-00000001"));
  }

  // Only what a save made is replaced or removed: entries of the user's with checkpoint-like
  // names, and the user's files inside a checkpoint, stay as they are.
  void onlyItsOwnEntriesAreReplacedOrRemoved() {
    const fs::path dir = tmp_.filePath("own").toStdString();
    const auto small = fakeTensors(4);
    fs::create_directories(dir / "step-00000001");  // the user's, no manifest
    writeText(dir / "step-00000001" / "notes", "mine");
    fs::create_directories(dir / "step-00000000");  // empty: nothing to lose, removed
    fs::create_directories(dir / ".staging-step-00000006");
    writeText(dir / ".staging-step-00000006" / "notes", "mine");
    fs::create_directories(dir / ".staging-step-00000007");  // a save killed before its mark
    fs::create_directories(dir / ".staging-mine");
    writeText(dir / ".staging-mine" / "notes", "mine");
    writeText(dir / "step-00000004", "a file of the user's");
    for (int step = 2; step <= 3; ++step) saveFakeCheckpoint(dir.string(), step, small, 1, 1);
    QCOMPARE(readText(dir / "step-00000001" / "notes"), std::string("mine"));
    QVERIFY(!fs::exists(dir / "step-00000000"));
    QCOMPARE(readText(dir / ".staging-mine" / "notes"), std::string("mine"));
    QVERIFY(!fs::exists(dir / "step-00000002"));  // a save's own, pruned by keep 1
    QCOMPARE(messageOf([&] { saveFakeCheckpoint(dir.string(), 4, small, 1, 1); }),
             "checkpoint directory '" + dir.string() +
                 "': 'step-00000004' is there and is not a checkpoint ParaScope saved; move it "
                 "away or save elsewhere");
    QCOMPARE(readText(dir / "step-00000004"), std::string("a file of the user's"));
    // The user's staging-named directory blocks step 6's save instead of being removed.
    QVERIFY(messageOf([&] {
              saveFakeCheckpoint(dir.string(), 6, small, 1, 1);
            }).ends_with("(not a staging directory ParaScope made; move it away)"));
    QCOMPARE(readText(dir / ".staging-step-00000006" / "notes"), std::string("mine"));
    QVERIFY(!fs::exists(dir / ".staging-step-00000007"));
    // A file the user put into a checkpoint outlives its pruning; the rest of it goes.
    writeText(dir / "step-00000003" / "notes.txt", "keep me");
    saveFakeCheckpoint(dir.string(), 5, small, 1, 1);
    QCOMPARE(readText(dir / "step-00000003" / "notes.txt"), std::string("keep me"));
    QVERIFY(!fs::exists(dir / "step-00000003" / "manifest.json"));
    QVERIFY(!fs::exists(dir / "step-00000003" / "rank-00000.safetensors"));
    QCOMPARE(CheckpointReader(dir.string()).manifest().counters.step, 5);
  }

  // No link in a checkpoint directory is followed, writing, pruning or reading.
  void linksAreNeverFollowed() {
    const fs::path root = tmp_.filePath("links").toStdString();
    const fs::path dir = root / "ck", victim = root / "victim";
    const auto small = fakeTensors(4);
    fs::create_directories(dir);
    writeText(victim, "precious");
    fs::create_symlink(victim, dir / "latest.tmp");
    saveFakeCheckpoint(dir.string(), 1, small, 1, 1);
    QCOMPARE(readText(victim), std::string("precious"));
    QVERIFY(fs::is_regular_file(fs::symlink_status(dir / "latest")));

    // A linked step directory: a prune never goes through it.
    saveFakeCheckpoint((root / "elsewhere").string(), 0, small, 1, 0);
    fs::create_directory_symlink(root / "elsewhere" / "step-00000000", dir / "step-00000000");
    saveFakeCheckpoint(dir.string(), 2, small, 1, 1);
    QVERIFY(fs::exists(root / "elsewhere" / "step-00000000" / "manifest.json"));
    QVERIFY(fs::is_symlink(dir / "step-00000000"));

    // `latest` itself a link: the save is refused before it writes anything.
    fs::create_directories(root / "ck2");
    fs::create_symlink(victim, root / "ck2" / "latest");
    QCOMPARE(messageOf([&] { saveFakeCheckpoint((root / "ck2").string(), 1, small, 1, 1); }),
             "checkpoint pointer '" + (root / "ck2" / "latest").string() +
                 "': is a symbolic link; name the file it points to");
    QCOMPARE(readText(victim), std::string("precious"));
    QVERIFY(!fs::exists(root / "ck2" / ".staging-step-00000001"));

    // Reading: a linked shard, manifest or step directory is refused.
    const std::string shard = (dir / "step-00000002" / "rank-00000.safetensors").string();
    fs::rename(shard, root / "shard");
    fs::create_symlink(root / "shard", shard);
    QCOMPARE(messageOf([&] { CheckpointReader r(dir.string()); }),
             shard + ": is a symbolic link, which a checkpoint never holds");
    writeText(dir / "latest", "step-00000000\n");
    QCOMPARE(messageOf([&] { CheckpointReader r(dir.string()); }),
             (dir / "latest").string() +
                 ": points to 'step-00000000', which is a symbolic link, which a checkpoint "
                 "never holds");
    const fs::path manifest = root / "elsewhere" / "step-00000000" / "manifest.json";
    fs::create_directories(root / "linked-manifest");
    fs::create_symlink(manifest, root / "linked-manifest" / "manifest.json");
    QCOMPARE(messageOf([&] { CheckpointReader r((root / "linked-manifest").string()); }),
             (root / "linked-manifest" / "manifest.json").string() +
                 ": is a symbolic link, which a checkpoint never holds");
  }

  // One saver per directory: a second is refused, naming the first; the lock goes with it.
  void aDirectoryIsSavedIntoByOneRunAtATime() {
    const std::string dir = tmp_.filePath("locked/deeper").toStdString();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    {
      const CheckpointLock first(dir);
      QCOMPARE(messageOf([&] { const CheckpointLock second(dir); }),
               "checkpoint directory '" + dir + "': another run is saving into it (process " +
                   std::to_string(::getpid()) + " on " + host +
                   "); wait for it to end or save elsewhere");
    }
    QCOMPARE(messageOf([&] { const CheckpointLock again(dir); }), std::string("(no error)"));
    const std::string file = tmp_.filePath("a-file-too").toStdString();
    writeText(file, "x");
    QCOMPARE(messageOf([&] { const CheckpointLock under(file + "/ckpt"); }),
             "checkpoint directory '" + file +
                 "/ckpt': cannot be created or written (Not a directory); name a writable "
                 "directory");
  }

  // From step 100,000,000 the names take a ninth digit; they are read, resumed and pruned alike.
  void stepsPastEightDigits() {
    QCOMPARE(stepDirectoryName(100'000'000), std::string("step-100000000"));
    QCOMPARE(parseStepDirectoryName("step-100000000"), 100'000'000);
    QCOMPARE(parseStepDirectoryName("step-00000042"), 42);
    QCOMPARE(parseStepDirectoryName("step-000000042"), -1);  // not step 42's name
    QCOMPARE(parseStepDirectoryName("step-0000042"), -1);
    QCOMPARE(parseStepDirectoryName("step-9999999999"), -1);
    QCOMPARE(parseStepDirectoryName("step-0000004x"), -1);
    const std::string dir = tmp_.filePath("big-steps").toStdString();
    const auto small = fakeTensors(4);
    for (int step : {99'999'999, 100'000'000, 100'000'001}) {
      saveFakeCheckpoint(dir, step, small, 1, 2);
    }
    QCOMPARE(CheckpointReader(dir).manifest().counters.step, 100'000'001);
    QVERIFY(!fs::exists(fs::path(dir) / "step-99999999"));
    QVERIFY(fs::exists(fs::path(dir) / "step-100000000"));
  }

  void unwritableDirectory() {
    const std::string file = tmp_.filePath("a-file").toStdString();
    writeText(file, "x");
    QCOMPARE(messageOf([&] { prepareCheckpoint(file + "/ckpt", 1); }),
             "checkpoint directory '" + file +
                 "/ckpt': cannot be created or written (Not a directory); name a writable "
                 "directory");
  }

  // A load checks what it reads: a stored slice's CRC-32 covers all of it, so a read of one
  // element finds a flipped bit anywhere in the slice once the load's reads are done (format 2),
  // and a format 1 checkpoint has its whole file checked before the first read from it.
  void readsAreChecked() {
    const nlohmann::json good = readManifest(good_);
    const nlohmann::json& s0 = good["slices"][0];
    const std::int64_t k = s0["count"].get<std::int64_t>();
    const std::int64_t at = s0["offset"].get<std::int64_t>();
    const auto flip = [](const fs::path& file, std::int64_t byte) {
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(byte);
      const char c = static_cast<char>(f.get() ^ 0x10);
      f.seekp(byte);
      f.put(c);
    };
    // Parts read in any order and by several readers join to the slice's CRC: no false alarm.
    {
      const CheckpointReader reader(good_);
      std::vector<float> x(static_cast<std::size_t>(k));
      for (const auto& [begin, count] : {std::pair{k / 2, k - k / 2}, std::pair{k / 3, k / 2},
                                         std::pair{k / 2, k - k / 2}, std::pair{0 * k, k / 3}}) {
        reader.read({"h.0.attn.c_attn.weight", StateField::Param, begin, count, x.data()});
      }
      reader.finishChecks();  // [0, k/3) + [k/3, k/3 + k/2) + the rest read beside
      for (const std::int64_t begin : {std::int64_t{0}, k / 3}) {
        reader.read({"h.0.attn.c_attn.weight", StateField::Param, begin, k / 3, x.data()});
      }
      reader.read(
          {"h.0.attn.c_attn.weight", StateField::Param, 2 * (k / 3), k - 2 * (k / 3), x.data()});
      reader.finishChecks();  // three parts that join exactly
    }
    fs::path d = damagedCopy("flipped-bit", [&](const fs::path& p) {
      flip(p / "rank-00000.safetensors", at + 4 * k - 1);  // the slice's last byte
    });
    const std::string data = readText(d / "rank-00000.safetensors");
    char message[128];
    std::snprintf(
        message, sizeof message,
        ": CRC32 %08lx, manifest.json says %08x (corrupted file; nothing was loaded)",
        crc32(0, reinterpret_cast<const Bytef*>(data.data() + at), static_cast<uInt>(4 * k)),
        s0["crc32"].get<unsigned>());
    const std::string expected = (d / "rank-00000.safetensors").string() +
                                 ": tensor 'h.0.attn.c_attn.weight' (param, elements [0, " +
                                 std::to_string(k) + "))" + message;
    const CheckpointReader reader(d.string());
    float x = 0;
    std::uint16_t half = 0;
    reader.read({"h.0.attn.c_attn.weight", StateField::Param, 0, 1, &x});
    QCOMPARE(messageOf([&] { reader.finishChecks(); }), expected);
    // Each load is checked afresh; narrowed reads are checked the same.
    reader.read({"h.0.attn.c_attn.weight", StateField::Param, 1, 1, &half, DType::BF16});
    QCOMPARE(messageOf([&] { reader.finishChecks(); }), expected);
    // Unchecked reads see the damage: the check is what stands between it and the weights.
    const CheckpointReader unchecked(d.string(), /*verifyOnRead=*/false);
    unchecked.read({"h.0.attn.c_attn.weight", StateField::Param, k - 1, 1, &x});
    unchecked.finishChecks();
    QVERIFY(std::bit_cast<std::uint32_t>(x) !=
            std::bit_cast<std::uint32_t>(stateValue(7, 0, StateField::Param, k - 1)));

    // Format 1: no slice checksums, no manifest checksum; the file's CRC is checked at first read.
    d = damagedCopy("format-1", [&](const fs::path& p) {
      editManifest(
          p,
          [](nlohmann::json& m) {
            m["format_version"] = 1;
            m.erase("manifest_crc32");
            for (nlohmann::json& s : m["slices"]) s.erase("crc32");
          },
          /*stamp=*/false);
    });
    checkContents(CheckpointReader(d.string()), tensors_, 7, 37);
    flip(d / "rank-00002.safetensors",
         static_cast<std::int64_t>(fs::file_size(d / "rank-00002.safetensors")) - 5);
    const std::string file2 = readText(d / "rank-00002.safetensors");
    char message1[160];
    std::snprintf(
        message1, sizeof message1,
        ": CRC32 %08lx over %zu bytes, manifest.json says %08x over %zu bytes (corrupted file)",
        crc32(0, reinterpret_cast<const Bytef*>(file2.data()), static_cast<uInt>(file2.size())),
        file2.size(), good["files"][2]["crc32"].get<unsigned>(), file2.size());
    const CheckpointReader old(d.string());
    std::string refused;
    for (const nlohmann::json& s : good["slices"]) {
      if (s["file"] != "rank-00002.safetensors" || s["field"] != "param") continue;
      std::vector<float> out(s["count"].get<std::size_t>());
      refused = messageOf([&] {
        old.read({s["tensor"].get<std::string>(), StateField::Param, s["begin"].get<std::int64_t>(),
                  s["count"].get<std::int64_t>(), out.data()});
      });
      break;
    }
    QCOMPARE(refused, (d / "rank-00002.safetensors").string() + message1);
  }

  void badCheckpoints() {
    const auto manifestOf = [](const fs::path& d) { return (d / "manifest.json").string(); };
    const nlohmann::json good = readManifest(good_);
    const nlohmann::json& s0 = good["slices"][0];  // c_attn param [0, k) in rank-00000
    QCOMPARE(s0["tensor"].get<std::string>(), std::string("h.0.attn.c_attn.weight"));
    QCOMPARE(s0["file"].get<std::string>(), std::string("rank-00000.safetensors"));
    const std::int64_t k = s0["count"].get<std::int64_t>();
    const std::int64_t bytes0 = good["files"][0]["bytes"].get<std::int64_t>();
    const std::string slice0 =
        "tensor 'h.0.attn.c_attn.weight' (param, elements [0, " + std::to_string(k) + "))";

    fs::path d = damagedCopy("version", [&](const fs::path& p) {
      editManifest(p, [](nlohmann::json& m) { m["format_version"] = 3; });
    });
    QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
             manifestOf(d) + ": format_version 3 is not supported (supported: 1, 2)");

    // Any change to what the manifest says, without its checksum following.
    d = damagedCopy("edited", [&](const fs::path& p) {
      editManifest(
          p, [](nlohmann::json& m) { m["counters"]["step"] = 8; }, /*stamp=*/false);
    });
    {
      nlohmann::json edited = readManifest(d);
      edited.erase("manifest_crc32");
      const std::string text = edited.dump();
      char message[160];
      std::snprintf(
          message, sizeof message,
          ": its contents have CRC32 %08lx, its 'manifest_crc32' says %08x (an edited "
          "or corrupted manifest)",
          crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())),
          good["manifest_crc32"].get<unsigned>());
      QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }), manifestOf(d) + message);
    }
    // Whitespace is not contents: a manifest re-indented by hand still loads.
    d = damagedCopy("reindented",
                    [&](const fs::path& p) { writeText(p / "manifest.json", good.dump(4)); });
    QCOMPARE(CheckpointReader(d.string()).manifest().counters.step, 7);

    for (const char* bad : {"/etc/passwd", "../rank-00000.safetensors", "sub/rank.safetensors"}) {
      d = damagedCopy(bad[0] == '/'   ? "absolute"
                      : bad[0] == '.' ? "dotdot"
                                      : "separator",
                      [&](const fs::path& p) {
                        editManifest(p, [&](nlohmann::json& m) { m["files"][0]["name"] = bad; });
                      });
      QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
               manifestOf(d) + ": file name '" + bad +
                   "' must be a plain name inside the checkpoint directory (no '/', '\\' or "
                   "'..')");
    }

    d = damagedCopy("missing", [](const fs::path& p) { fs::remove(p / "rank-00001.safetensors"); });
    QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
             (d / "rank-00001.safetensors").string() + ": missing (listed in manifest.json)");

    d = damagedCopy("truncated", [&](const fs::path& p) {
      fs::resize_file(p / "rank-00000.safetensors", static_cast<std::uintmax_t>(bytes0 - 10));
    });
    QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
             (d / "rank-00000.safetensors").string() + ": " + std::to_string(bytes0 - 10) +
                 " bytes, manifest.json says " + std::to_string(bytes0) +
                 " (truncated or replaced file)");

    d = damagedCopy("outside-file", [&](const fs::path& p) {
      editManifest(p, [&](nlohmann::json& m) { m["slices"][0]["offset"] = bytes0 - 4; });
    });
    QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
             (d / "rank-00000.safetensors").string() + ": " + slice0 + " at bytes [" +
                 std::to_string(bytes0 - 4) + ", " + std::to_string(bytes0 - 4 + 4 * k) +
                 ") lies outside the file's " + std::to_string(bytes0) +
                 " bytes or is not count * 4 bytes");

    d = damagedCopy("outside-tensor", [&](const fs::path& p) {
      editManifest(p, [&](nlohmann::json& m) { m["slices"][0]["begin"] = 72 * 24 - 1; });
    });
    QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
             manifestOf(d) + ": tensor 'h.0.attn.c_attn.weight' (param, elements [1727, " +
                 std::to_string(1727 + k) + ")) lies outside the tensor's 1728 elements");

    d = damagedCopy("overlap", [&](const fs::path& p) {
      editManifest(p, [&](nlohmann::json& m) { m["slices"][1]["begin"] = k - 2; });
    });
    QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
             manifestOf(d) +
                 ": tensor 'h.0.attn.c_attn.weight' (param): slices overlap at "
                 "elements [" +
                 std::to_string(k - 2) + ", " + std::to_string(k) +
                 ") (files 'rank-00000.safetensors' and 'rank-00000.safetensors')");

    const std::int64_t k1 = good["slices"][1]["count"].get<std::int64_t>();
    d = damagedCopy("not-covered", [&](const fs::path& p) {
      editManifest(p, [&](nlohmann::json& m) { m["slices"].erase(1); });
    });
    QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
             manifestOf(d) + ": tensor 'h.0.attn.c_attn.weight' (param): elements [" +
                 std::to_string(k) + ", " + std::to_string(k + k1) + ") are not stored");

    d = damagedCopy("unknown-tensor", [&](const fs::path& p) {
      editManifest(p, [&](nlohmann::json& m) { m["tensors"].erase(0); });
    });
    QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
             manifestOf(d) +
                 ": slice of tensor 'h.0.attn.c_attn.weight', which is not in the tensors list");

    // Slices must lie where their shard's own header puts them: an offset moved by one element,
    // into the header, or onto another slice's bytes (two slices sharing bytes).
    const std::int64_t offset0 = good["slices"][0]["offset"].get<std::int64_t>();
    const std::string shard0 = (fs::path("rank-00000.safetensors")).string();
    for (const auto& [name, slice, offset] :
         {std::tuple{"moved", 0, offset0 + 4}, std::tuple{"into-header", 0, std::int64_t{8}},
          std::tuple{"aliased", 1, offset0}}) {
      d = damagedCopy(name, [&](const fs::path& p) {
        editManifest(p, [&](nlohmann::json& m) { m["slices"][slice]["offset"] = offset; });
      });
      const nlohmann::json& s = good["slices"][slice];
      const std::int64_t at = s["offset"].get<std::int64_t>(), n = s["count"].get<std::int64_t>();
      QCOMPARE(messageOf([&] { CheckpointReader r(d.string()); }),
               (d / shard0).string() + ": tensor 'h.0.attn.c_attn.weight' (param, elements [" +
                   std::to_string(s["begin"].get<std::int64_t>()) + ", " +
                   std::to_string(s["begin"].get<std::int64_t>() + n) + ")) is at bytes [" +
                   std::to_string(offset) + ", " + std::to_string(offset + 4 * n) +
                   ") in manifest.json but the shard's header has it as f32 [" + std::to_string(n) +
                   "] from byte " + std::to_string(at));
    }

    const fs::path parent = fs::path(tmp_.path().toStdString()) / "damaged" / "bad-latest";
    fs::create_directories(parent);
    writeText(parent / "latest", "../../etc\n");
    QCOMPARE(messageOf([&] { CheckpointReader r(parent.string()); }),
             (parent / "latest").string() +
                 ": '../../etc' is not a step directory name (step-NNNNNNNN)");
    QCOMPARE(messageOf([&] { CheckpointReader r((parent / "nope").string()); }),
             (parent / "nope").string() + ": no such checkpoint directory");

    // Same size, one bit flipped in the data: found by the CRC, not at open.
    d = damagedCopy("corrupted", [&](const fs::path& p) {
      std::fstream f(p / "rank-00002.safetensors", std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(-5, std::ios::end);
      const char c = static_cast<char>(f.get() ^ 0x10);
      f.seekp(-5, std::ios::end);
      f.put(c);
    });
    const CheckpointReader corrupted(d.string());
    const std::string data = readText(d / "rank-00002.safetensors");
    char message[160];
    std::snprintf(
        message, sizeof message,
        ": CRC32 %08lx over %zu bytes, manifest.json says %08x over %zu bytes "
        "(corrupted file)",
        crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())),
        data.size(), good["files"][2]["crc32"].get<unsigned>(), data.size());
    QCOMPARE(messageOf([&] { corrupted.verifyChecksums(); }),
             (d / "rank-00002.safetensors").string() + message);
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
