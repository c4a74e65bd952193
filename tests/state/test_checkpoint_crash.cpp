// Crash safety: checkpoint_crash_writer saves a few MB per step in a loop and is SIGKILLed at
// random moments (fixed seed), 100 times, each run continuing from `latest`. After every kill the
// `latest` checkpoint must open, pass its CRCs and hold exactly the values of its step, and the
// step never goes back. A kill comes a random 0-50 ms (or up to two save cycles, if longer) after
// the run's first commit, so every run makes progress and kills fall in every phase of a save.
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "checkpoint_fixture.h"
#include "core/common/error.h"

extern char** environ;

using namespace parascope;
using namespace parascope::test;
namespace fs = std::filesystem;

namespace {

std::string latestOf(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "latest");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

class TestCheckpointCrash : public QObject {
  Q_OBJECT

 private slots:
  void latestSurvivesSigkill() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const std::string dir = tmp.filePath("ckpt").toStdString();
    const auto tensors = fakeTensors(256);  // as the writer's
    std::mt19937 random(20261123);
    // Delays span two save cycles (at least 50 ms), so kills land in every phase of the next
    // save: shards, manifest, renames, `latest`, pruning. The first run measures the cycle.
    std::chrono::microseconds maxDelay{50000};
    // The windows between a commit's renames are a few ms of a save cycle; 100 kills land in one
    // with high probability (a `latest` written before its step directory was caught in two runs of
    // three).
    constexpr int kKills = 100;
    int lastStep = 0, midSave = 0, commits = 0;
    for (int kill = 0; kill < kKills; ++kill) {
      pid_t pid = 0;
      std::string program = CHECKPOINT_CRASH_WRITER;
      char* argv[] = {program.data(), const_cast<char*>(dir.c_str()), nullptr};
      QCOMPARE(posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, environ), 0);
      int status = 0;
      const auto waitForCommit = [&] {
        const std::string before = latestOf(dir);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (latestOf(dir) == before) {
          if (::waitpid(pid, &status, WNOHANG) != 0) return false;  // ended by itself
          if (std::chrono::steady_clock::now() > deadline) return false;
          std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        return true;
      };
      QVERIFY2(waitForCommit(), "the writer committed nothing within 30 s or ended by itself");
      if (kill == 0) {
        const auto start = std::chrono::steady_clock::now();
        QVERIFY(waitForCommit());
        maxDelay = std::max(maxDelay, 2 * std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::steady_clock::now() - start));
      }
      std::uniform_int_distribution<long> delayUs(0, maxDelay.count());
      std::this_thread::sleep_for(std::chrono::microseconds(delayUs(random)));
      QCOMPARE(::kill(pid, SIGKILL), 0);
      QCOMPARE(::waitpid(pid, &status, 0), pid);
      QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
               "the writer ended before it was killed (an error?)");

      for (const auto& e : fs::directory_iterator(dir, std::filesystem::directory_options{})) {
        if (e.path().filename().string().rfind(".staging-", 0) == 0) ++midSave;
      }
      std::optional<CheckpointReader> reader;
      try {
        reader.emplace(dir);
        reader->verifyChecksums();
      } catch (const UserError& e) {
        QFAIL(qPrintable(QString("after kill %1: %2").arg(kill).arg(e.what())));
      }
      const int step = reader->manifest().counters.step;
      QVERIFY2(step >= lastStep,
               qPrintable(QString("latest went back from step %1 to %2").arg(lastStep).arg(step)));
      commits += step - lastStep;
      lastStep = step;
      QCOMPARE(countersToJson(reader->manifest().counters), countersToJson(fakeCounters(step)));
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        const std::int64_t n = elementCount(tensors[t]);
        for (int f = 0; f < kStateFieldCount; ++f) {
          const auto field = static_cast<StateField>(f);
          std::vector<float> got(static_cast<std::size_t>(n));
          reader->read({tensors[t].name, field, 0, n, got.data()});
          for (std::int64_t i = 0; i < n; ++i) {
            if (std::bit_cast<std::uint32_t>(got[i]) !=
                std::bit_cast<std::uint32_t>(stateValue(step, t, field, i))) {
              QFAIL(qPrintable(QString("step %1: %2 %3 element %4 differs")
                                   .arg(step)
                                   .arg(tensors[t].name.c_str(), stateFieldName(field))
                                   .arg(i)));
            }
          }
        }
      }
    }
    qInfo(
        "%d checkpoints committed across %d kills (delays up to %ld us), %d kills during a save "
        "(staging left), last step %d",
        commits, kKills, static_cast<long>(maxDelay.count()), midSave, lastStep);
    QVERIFY2(midSave > 0, "no kill landed during a save; the test proved nothing");
    QVERIFY2(commits >= kKills, "a run ended without a commit");
  }
};

QTEST_GUILESS_MAIN(TestCheckpointCrash)
#include "test_checkpoint_crash.moc"
