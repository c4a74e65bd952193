// parascope-cli checkpoint inspect / verify / export as a user runs them: JSON lines with the
// step and sizes, "OK" or exit 2 with the one-line reason, and an exported weights file holding
// every tensor's parameters whole, with their names and shapes; and train's checkpoints as a user
// relies on them, a run with its optimizer state on a disk SIGKILLed in a step and resumed
// included.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "checkpoint_fixture.h"
#include "core/io/safetensors.h"
#include "tests/cli_run.h"

using namespace parascope;
using namespace parascope::test;
namespace fs = std::filesystem;

using Result = CliResult;

namespace {

Result run(const QStringList& args) {
  return runCli(args, 60000);
}

const QString kDefaultConfig = PARASCOPE_SOURCE_DIR "/resources/configs/default.json";

}  // namespace

class TestCheckpointCli : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  std::vector<LogicalTensor> tensors_ = fakeTensors(16);
  QString dir_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.filePath("ckpt");
    saveFakeCheckpoint(dir_.toStdString(), 3, tensors_, 2, 0);
    saveFakeCheckpoint(dir_.toStdString(), 4, tensors_, 3, 0);
  }

  void inspectJson() {
    const Result r = run({"checkpoint", "inspect", dir_, "--json"});
    QCOMPARE(r.code, 0);
    const QStringList lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 4);  // the checkpoint, then its 3 files
    const auto head = nlohmann::json::parse(lines[0].toStdString());
    QCOMPARE(head["kind"].get<std::string>(), std::string("checkpoint"));
    QCOMPARE(head["step"].get<int>(), 4);
    QCOMPARE(head["counters"]["next_sample"].get<int>(), 32);
    QCOMPARE(head["tensors"].get<int>(), 4);
    QCOMPARE(head["elements_per_field"].get<int>(), 4 * 16 * 16 + 51 * 16);
    QCOMPARE(head["config"]["model.type"].get<std::string>(), std::string("gpt"));
    std::int64_t bytes = 0;
    for (int i = 1; i < 4; ++i) {
      const auto file = nlohmann::json::parse(lines[i].toStdString());
      QCOMPARE(file["name"].get<std::string>(),
               "rank-0000" + std::to_string(i - 1) + ".safetensors");
      bytes += file["size_bytes"].get<std::int64_t>();
    }
    QCOMPARE(head["size_bytes"].get<std::int64_t>(), bytes);
  }

  void verify() {
    const QString step3 = dir_ + "/step-00000003";
    Result r = run({"checkpoint", "verify", step3});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.startsWith("OK " + step3 + ": step 3, 2 files, "), qPrintable(r.out));
    fs::resize_file(fs::path(step3.toStdString()) / "rank-00001.safetensors", 100);
    r = run({"checkpoint", "verify", step3});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.startsWith("error: " + step3 +
                              "/rank-00001.safetensors: 100 bytes, "
                              "manifest.json says "),
             qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
  }

  void exportWeights() {
    const QString out = tmp_.filePath("weights.safetensors");
    const Result r = run({"checkpoint", "export", dir_, "--out", out});
    QCOMPARE(r.code, 0);
    QCOMPARE(r.out, "wrote " + out + ": 4 tensors (param, f32) of step 4\n");
    const SafetensorsFile f = readSafetensors(out.toStdString());
    QCOMPARE(f.tensors.size(), tensors_.size());
    QCOMPARE(f.metadata.at("format"), std::string("pt"));
    for (std::size_t t = 0; t < tensors_.size(); ++t) {
      const Tensor& w = f.tensors.at(tensors_[t].name);
      QCOMPARE(w.shape(), tensors_[t].shape);
      QCOMPARE(w.dtype(), DType::F32);
      for (std::int64_t i = 0; i < w.numel(); ++i) {
        if (w.data<float>()[i] != stateValue(4, t, StateField::Param, i)) {
          QFAIL(qPrintable(QString("%1[%2] differs").arg(tensors_[t].name.c_str()).arg(i)));
        }
      }
    }
    // A directory as the output is refused before anything is read.
    const Result bad = run({"checkpoint", "export", dir_, "--out", tmp_.path()});
    QCOMPARE(bad.code, 2);
  }

  // A run saving into a directory another holds is refused before it trains.
  void saveIntoALockedDirectoryIsRefused() {
    const std::string dir = tmp_.filePath("locked").toStdString();
    const CheckpointLock held(dir);
    const Result r = run({"train", "--config", kDefaultConfig, "--save",
                          QString::fromStdString(dir), "train_iters=1"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.startsWith(QString::fromStdString("error: checkpoint directory '" + dir +
                                                     "': another run is saving into it (process " +
                                                     std::to_string(::getpid()) + " on ")),
             qPrintable(r.err));
    QVERIFY2(!r.out.contains("loss"), qPrintable(r.out));
  }

  // A shard of the right size holding other bytes (here NaNs over part of the embedding) trained
  // to a NaN loss and exited 0; the load checks every slice's CRC-32 and refuses it before any
  // step. Another model's checkpoint is refused before any rank builds the model.
  void aDamagedOrForeignCheckpointIsRefusedBeforeTraining() {
    const QString dir = tmp_.filePath("trained");
    Result r =
        run({"train", "--config", kDefaultConfig, "--save", dir, "train_iters=1", "eval_iters=1"});
    QCOMPARE(r.code, 0);
    const fs::path step = fs::path(dir.toStdString()) / "step-00000001";
    const nlohmann::json manifest = nlohmann::json::parse(std::ifstream(step / "manifest.json"));
    const nlohmann::json* wte = nullptr;
    for (const nlohmann::json& s : manifest["slices"]) {
      if (s["tensor"] == "wte.weight" && s["field"] == "param") wte = &s;
    }
    QVERIFY(wte != nullptr);
    {
      std::fstream f(step / "rank-00000.safetensors",
                     std::ios::in | std::ios::out | std::ios::binary);
      f.seekp((*wte)["offset"].get<std::int64_t>() + 400);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (int i = 0; i < 16; ++i) f.write(reinterpret_cast<const char*>(&nan), sizeof nan);
    }
    r = run({"train", "--config", kDefaultConfig, "--load", dir, "train_iters=2"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.startsWith(QString::fromStdString(
                 "error: " + (step / "rank-00000.safetensors").string() +
                 ": tensor 'wte.weight' (param, elements [0, " +
                 std::to_string((*wte)["count"].get<std::int64_t>()) + ")): CRC32 ")),
             qPrintable(r.err));
    QVERIFY2(r.err.endsWith("(corrupted file; nothing was loaded)\n"), qPrintable(r.err));
    QVERIFY2(!r.out.contains("loss"), qPrintable(r.out));

    r = run({"train", "--config", kDefaultConfig, "--load", dir_, "train_iters=5"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "error: checkpoint " + dir_ +
                        "/step-00000004: tensor 'wte.weight' is [50, 16] in the checkpoint but "
                        "[256, 256] in this model (a checkpoint of another model?)\n");
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));  // refused before the run's first report
  }

  // fp16 after fp32 (through --load, or --switch) starts at its own config's scale: the saved
  // scale of 1 was no scaler's. Every step's loss_scale, from the JSON lines.
  void fp16AfterFp32StartsAtItsOwnScale() {
    const QString dir = tmp_.filePath("fp32");
    const QStringList small = {"train",        "--config",        kDefaultConfig,
                               "eval_iters=1", "eval_interval=0", "model.num_layers=1",
                               "--json"};
    const Result saved = run(QStringList(small) << "--save" << dir << "train_iters=1");
    QVERIFY2(saved.code == 0, qPrintable(saved.err));
    const auto scales = [](const Result& r) {
      std::vector<double> out;
      for (const QString& line : r.out.split('\n', Qt::SkipEmptyParts)) {
        const auto j = nlohmann::json::parse(line.toStdString());
        if (j.value("event", "") == "step") out.push_back(j["loss_scale"].get<double>());
      }
      return out;
    };
    Result r = run(QStringList(small) << "--load" << dir << "train_iters=2"
                                      << "fp16.enabled=true"
                                      << "fp16.initial_scale_power=8");
    QCOMPARE(r.code, 0);
    QCOMPARE(scales(r), std::vector<double>{256});
    r = run(QStringList(small) << "--load" << dir << "train_iters=2"
                               << "fp16.enabled=true"
                               << "fp16.loss_scale=128");
    QCOMPARE(r.code, 0);
    QCOMPARE(scales(r), std::vector<double>{128});
    r = run(QStringList(small) << "train_iters=3"
                               << "--switch"
                               << "2:fp16.enabled=true,fp16.initial_scale_power=8");
    QCOMPARE(r.code, 0);
    QCOMPARE(scales(r), (std::vector<double>{1, 1, 256}));
  }

  // A run with its optimizer state swapped, saving every 2 steps, is SIGKILLed in the step after
  // its first checkpoint: nothing is left in the swap directory (each file was unlinked when it
  // was opened), and `--resume` continues from the last checkpoint with the losses of the run
  // that was never killed, bit for bit, to the same final weights.
  void offloadedRunKilledInAStepResumes() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const fs::path swap = tmp.filePath("swap").toStdString();
    fs::create_directories(swap);
    const QStringList base = {
        "train",
        "--config",
        PARASCOPE_SOURCE_DIR "/resources/configs/default.json",
        "model.num_layers=1",
        "eval_interval=0",
        "train_iters=8",
        "data_parallel_size=2",
        "zero_optimization.stage=2",
        "zero_optimization.offload_optimizer.device=nvme",
        "zero_optimization.offload_optimizer.nvme_path=" + QString::fromStdString(swap.string()),
        "zero_optimization.sub_group_size=10000",
        "--json"};
    // Step number -> loss, from the JSON lines.
    const auto losses = [](const QString& out) {
      std::map<int, double> byStep;
      for (const QString& line : out.split('\n', Qt::SkipEmptyParts)) {
        const auto j = nlohmann::json::parse(line.toStdString());
        if (j.value("event", "") == "step") byStep[j["step"].get<int>()] = j["loss_nats"];
      }
      return byStep;
    };
    const QString reference = tmp.filePath("reference"), killed = tmp.filePath("killed");
    const CliResult whole = runCli(QStringList(base) << "--save" << reference, 120000);
    QVERIFY2(whole.code == 0, qPrintable(whole.err));
    const std::map<int, double> want = losses(whole.out);
    QCOMPARE(want.size(), std::size_t{8});

    QProcess run;
    run.start(PARASCOPE_CLI, QStringList(base) << "--save" << killed << "--save-interval"
                                               << "2");
    QString seen;
    while (!losses(seen).contains(3)) {
      QVERIFY2(run.waitForReadyRead(60000), "no step 3 within a minute");
      while (run.canReadLine()) seen += QString::fromUtf8(run.readLine());
    }
    run.kill();  // SIGKILL, in step 4
    QVERIFY(run.waitForFinished(60000));
    QCOMPARE(run.exitStatus(), QProcess::CrashExit);
    QVERIFY(fs::is_empty(swap));

    const CliResult resumed = runCli(QStringList(base) << "--resume" << killed, 120000);
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
    const std::map<int, double> got = losses(resumed.out);
    QVERIFY2(!got.empty() && got.begin()->first >= 3 && got.rbegin()->first == 8,
             qPrintable(resumed.out));
    for (const auto& [step, loss] : got) {
      QVERIFY2(std::bit_cast<std::uint64_t>(loss) == std::bit_cast<std::uint64_t>(want.at(step)),
               qPrintable(QString("step %1: %2 resumed, %3 uninterrupted")
                              .arg(step)
                              .arg(loss, 0, 'g', 17)
                              .arg(want.at(step), 0, 'g', 17)));
    }
    const auto weights = [&](const QString& dir) {
      const QString out = dir + ".safetensors";
      const CliResult r = runCli({"checkpoint", "export", dir, "--out", out}, 60000);
      QFile file(out);
      return r.code == 0 && file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    };
    const QByteArray final = weights(reference);
    QVERIFY(!final.isEmpty());
    QVERIFY(final == weights(killed));
    QVERIFY(fs::is_empty(swap));
  }

  // A --switch is read and checked whole before the run: a comma inside a value's brackets is the
  // value's, a bad value names its switch, and a target that cannot fit is refused up front.
  void switchesAreCheckedBeforeTheRun() {
    // The list is read whole (split at its comma, "[0.8" failed to parse) and judged as a
    // switch: one that changes the optimizer is refused.
    Result r = run({"train", "--config", kDefaultConfig, "train_iters=2", "--switch",
                    "1:optimizer.params.betas=[0.8,0.95]"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QString("error: --switch '1:optimizer.params.betas=[0.8,0.95]': optimizer "
                            "differs from the running session's; a switch changes only how the "
                            "run is spread (parallel degrees, schedule, micro-batches, ZeRO, "
                            "precision, buckets)\n"));

    r = run({"train", "--config", kDefaultConfig, "train_iters=3", "--switch",
             "1:data_parallel_size=[2,"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QString("error: --switch '1:data_parallel_size=[2,': config: "
                            "data_parallel_size must be an integer in 1..4096, got a string "
                            "(\"[2,\")\n"));

    // 256 ranks of 6.2 GiB: more than any machine the suites run on, so the refusal does not
    // depend on the host (8 ranks, 49.3 GiB, fitted a 128 GiB one and trained for a minute).
    r = run({"train", "--config", kDefaultConfig, "train_iters=3", "model.hidden_size=2048",
             "model.num_layers=8", "model.num_attention_heads=16",
             "train_micro_batch_size_per_gpu=1", "gradient_accumulation_steps=256", "--switch",
             "1:data_parallel_size=256,gradient_accumulation_steps=1"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.startsWith("error: --switch '1:data_parallel_size=256,gradient_accumulation_"
                              "steps=1': memory: the run needs about 1.5 TiB (256 ranks x 6.2 GiB"),
             qPrintable(r.err));
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));  // before the first step, not at the switch
  }

  // A checkpoint saved at another global batch names the batch to load it with; a position no
  // batch reaches (steps of several batch sizes, an edited manifest) says so, never "saved with a
  // global batch of 8 ... this config's is 8".
  void batchMismatchesSayWhatTheCheckpointHolds() {
    Result r = run({"train", "--config", kDefaultConfig, "--load", dir_,
                    "train_micro_batch_size_per_gpu=4", "train_batch_size=4", "train_iters=5"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "error: checkpoint " + dir_ +
                        "/step-00000004: was saved with a global batch of 8 samples but this "
                        "config's is 4; load it with train_batch_size=8\n");

    const fs::path odd = fs::path(tmp_.filePath("odd").toStdString()) / "step-00000004";
    fs::create_directories(odd.parent_path());
    fs::copy(dir_.toStdString() + "/step-00000004", odd, fs::copy_options::recursive);
    CheckpointManifest m = CheckpointReader(odd.string()).manifest();
    m.counters.nextSample = 33;
    fs::remove(odd / "manifest.json");
    std::ofstream(odd / "manifest.json") << manifestToJson(m).dump(1);
    r = run({"train", "--config", kDefaultConfig, "--load", QString::fromStdString(odd.string()),
             "train_iters=5"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QString::fromStdString("error: checkpoint " + odd.string() +
                                           ": is at sample 33 after 4 steps, which no global "
                                           "batch reaches (this config's 8 would be at sample "
                                           "32)\n"));
  }

  // Switch steps count the saved steps: one at or before the checkpoint's step would never come
  // and would hold back every later one, so it is refused before the run.
  void switchBeforeTheLoadedStepIsRefused() {
    for (const QString option : {"--load", "--resume"}) {
      const Result r = run({"train", "--config", kDefaultConfig, option, dir_, "--switch",
                            "4:data_parallel_size=2,train_micro_batch_size_per_gpu=4", "--switch",
                            "9:data_parallel_size=1,train_micro_batch_size_per_gpu=8"});
      QCOMPARE(r.code, 2);
      QCOMPARE(r.err,
               "error: --switch '4:data_parallel_size=2,train_micro_batch_size_per_gpu=4': step 4 "
               "is not after step 4, where " +
                   option + " starts the run; switch steps count the saved steps too\n");
    }
  }
};

QTEST_GUILESS_MAIN(TestCheckpointCli)
#include "test_checkpoint_cli.moc"
