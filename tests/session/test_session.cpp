// The session: its report stream is complete and ordered, it is controlled from another thread
// (pause, one step, resume, stop at arbitrary moments), a rank that throws ends it with that
// rank's reason within a second while the process goes on to run another session, and its own
// ranks train bit for bit as one-rank sessions over their caller's world do.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/plan/memory_estimate.h"
#include "core/session/session.h"
#include "tests/train/dp_harness.h"

using namespace parascope;
using Clock = std::chrono::steady_clock;

class TestSession : public QObject {
  Q_OBJECT
 private slots:
  void cleanupTestCase() { std::filesystem::remove(dptest::textFixture()); }
  void reportsAreCompleteAndOrdered_data();
  void reportsAreCompleteAndOrdered();
  void callersWorldTrainsAsOwnRanksBitForBit();
  void controlledFromAnotherThread();
  void stopAtArbitraryMoments();
  void failingRankEndsTheSession_data();
  void failingRankEndsTheSession();
  void allocationFailureSaysWhatToChange();
  void userErrorIsMarked();
  void startsOnlyOnce();
};

namespace {

// The data-parallel tests' tiny GPT, six steps with an evaluation every second one.
TrainConfig tinyConfig(std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), {"train_iters=6", "eval_interval=2", "eval_iters=2"});
  return dptest::tinyConfig(overrides);
}

// Every report as a line ("start", "step 3", "eval 4", "rank-step 1 3", "error 1", "finished"),
// in arrival order; rank steps are kept apart since ranks report them concurrently.
class Recorder : public SessionObserver {
 public:
  void onStart(const StartReport& s) override {
    add("start");
    worldSize = s.worldSize;
  }
  void onStep(const StepReport& r) override {
    add("step " + std::to_string(r.step));
    std::lock_guard lock(mutex);
    losses.push_back(r.loss);
  }
  void onRankStep(const StepReport& r) override {
    std::lock_guard lock(mutex);
    rankSteps.push_back(std::to_string(r.rank) + ":" + std::to_string(r.step));
    exposed[r.rank] += r.exposedCommSeconds;
  }
  void onEval(const EvalReport& r) override { add("eval " + std::to_string(r.step)); }
  void onError(const ErrorReport& e) override {
    add("error " + std::to_string(e.rank));
    std::lock_guard lock(mutex);
    error = e;
  }
  void onFinished(const FinishedReport&) override { add("finished"); }

  std::vector<std::string> lines() {
    std::lock_guard lock(mutex);
    return log;
  }
  int steps() {
    std::lock_guard lock(mutex);
    return static_cast<int>(losses.size());
  }

  std::mutex mutex;
  std::vector<std::string> log;
  std::vector<std::string> rankSteps;
  std::map<int, double> exposed;  // per rank, over the run
  std::vector<double> losses;
  ErrorReport error;
  int worldSize = 0;

 private:
  void add(const std::string& line) {
    std::lock_guard lock(mutex);
    log.push_back(line);
  }
};

// Waits (up to 60 s) until `done` holds.
template <class F>
bool eventually(F done) {
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace

void TestSession::reportsAreCompleteAndOrdered_data() {
  QTest::addColumn<QStringList>("overrides");
  QTest::newRow("one rank") << QStringList{};
  QTest::newRow("dp2") << QStringList{"data_parallel_size=2"};
  QTest::newRow("tp2 x pp2") << QStringList{"tensor_model_parallel_size=2",
                                            "pipeline_model_parallel_size=2",
                                            "gradient_accumulation_steps=2"};
}

void TestSession::reportsAreCompleteAndOrdered() {
  QFETCH(QStringList, overrides);
  std::vector<std::string> o;
  for (const QString& s : overrides) o.push_back(s.toStdString());
  const TrainConfig config = tinyConfig(o);
  Session session(config);
  Recorder rec;
  session.addObserver(rec);
  const FinishedReport f = session.run();
  QCOMPARE(session.state(), SessionState::Finished);
  QVERIFY(!session.error());
  QCOMPARE(f.steps, 6);
  QVERIFY(!f.stopped && !f.failed);
  QCOMPARE(f.lastEval.step, 6);
  const std::vector<std::string> want = {"start",  "step 1", "step 2",  "eval 2",
                                         "step 3", "step 4", "eval 4",  "step 5",
                                         "step 6", "eval 6", "finished"};
  QCOMPARE(rec.lines(), want);
  QCOMPARE(rec.worldSize, config.parallel.worldSize());
  // Every rank reports every step exactly once, and in step order per rank.
  const int ranks = config.parallel.worldSize();
  QCOMPARE(rec.rankSteps.size(), static_cast<std::size_t>(6 * ranks));
  for (int r = 0; r < ranks; ++r) {
    int last = 0;
    for (const std::string& s : rec.rankSteps) {
      if (s.substr(0, s.find(':')) != std::to_string(r)) continue;
      const int step = std::stoi(s.substr(s.find(':') + 1));
      QCOMPARE(step, last + 1);
      last = step;
    }
    QCOMPARE(last, 6);
    // Every rank of a parallel run waits on some communication nothing hides (gradient
    // reduction, tensor-parallel collectives, the pipeline's tied-embedding exchange); one rank
    // communicates with nobody.
    if (ranks == 1) {
      QCOMPARE(rec.exposed[r], 0.0);
    } else {
      QVERIFY2(rec.exposed[r] > 0, ("rank " + std::to_string(r)).c_str());
    }
  }
}

// The tests' harness and MPI run one rank per session over a world their caller made
// (SessionOptions::world); a session's own ranks must train exactly as they do.
void TestSession::callersWorldTrainsAsOwnRanksBitForBit() {
  const TrainConfig config =
      tinyConfig({"eval_interval=0", "data_parallel_size=2", "zero_optimization.stage=2"});
  Session session(config);
  Recorder rec;
  session.addObserver(rec);
  session.run();
  QCOMPARE(rec.steps(), config.trainIters);
  std::vector<dptest::RunRecord> ranks(2);
  runInProcess(2, [&](Communicator& world) {
    ranks[static_cast<std::size_t>(world.rank())] = dptest::train(config, config.trainIters, world);
  });
  for (const dptest::RunRecord& r : ranks) QCOMPARE(r.losses, rec.losses);  // exact
}

void TestSession::controlledFromAnotherThread() {
  const TrainConfig config = tinyConfig({"data_parallel_size=2", "train_iters=40"});
  Session session(config);
  Recorder rec;
  session.addObserver(rec);
  session.start(/*paused=*/true);
  QVERIFY(eventually([&] { return session.state() == SessionState::Paused; }));
  QCOMPARE(rec.steps(), 0);
  for (int i = 1; i <= 3; ++i) {
    session.stepOnce();
    QVERIFY(
        eventually([&] { return rec.steps() == i && session.state() == SessionState::Paused; }));
  }
  // Held at the boundary: no step runs while paused, however long.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  QCOMPARE(rec.steps(), 3);
  session.resume();
  QVERIFY(eventually([&] { return rec.steps() >= 6; }));
  session.pause();
  QVERIFY(eventually([&] { return session.state() == SessionState::Paused; }));
  const int held = rec.steps();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  QCOMPARE(rec.steps(), held);
  session.resume();
  const FinishedReport f = session.wait();
  QCOMPARE(f.steps, 40);
  QCOMPARE(session.state(), SessionState::Finished);
  QCOMPARE(rec.steps(), 40);
  QCOMPARE(rec.lines().back(), std::string("finished"));
}

void TestSession::stopAtArbitraryMoments() {
  // Stops land at different points of a step each time (before the first step, mid-step, at a
  // boundary); every time the session ends stopped, with each step reported once and in order.
  const TrainConfig config = tinyConfig({"data_parallel_size=2", "train_iters=1000"});
  for (int delayMs : {0, 1, 7, 23, 60}) {
    Session session(config);
    Recorder rec;
    session.addObserver(rec);
    session.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    session.stop();
    const FinishedReport f = session.wait();
    QVERIFY(f.stopped);
    QCOMPARE(session.state(), SessionState::Stopped);
    QCOMPARE(f.steps, rec.steps());
    QVERIFY(f.steps < 1000);
    int last = 0;
    for (const std::string& line : rec.lines()) {
      if (line.rfind("step ", 0) != 0) continue;
      QCOMPARE(std::stoi(line.substr(5)), last + 1);
      ++last;
    }
    QCOMPARE(rec.lines().back(), std::string("finished"));
  }
}

namespace {

// Throws from one rank's thread at one step, as a failing kernel or data read would.
class Saboteur : public SessionObserver {
 public:
  Saboteur(int rank, int step) : rank_(rank), step_(step) {}
  void onRankStep(const StepReport& r) override {
    if (r.rank == rank_ && r.step == step_) {
      thrownAt = Clock::now();
      throw std::runtime_error("disk on fire on rank " + std::to_string(rank_));
    }
  }
  Clock::time_point thrownAt;

 private:
  int rank_, step_;
};

}  // namespace

void TestSession::failingRankEndsTheSession_data() {
  QTest::addColumn<int>("ranks");
  QTest::addColumn<int>("failing");
  QTest::newRow("rank 0 of 1") << 1 << 0;
  QTest::newRow("rank 1 of 2") << 2 << 1;
  QTest::newRow("rank 0 of 4") << 4 << 0;
  QTest::newRow("rank 3 of 4") << 4 << 3;
}

void TestSession::failingRankEndsTheSession() {
  QFETCH(int, ranks);
  QFETCH(int, failing);
  const TrainConfig config =
      tinyConfig({"data_parallel_size=" + std::to_string(ranks), "train_iters=1000"});
  Session session(config);
  Recorder rec;
  Saboteur saboteur(failing, 3);
  session.addObserver(saboteur);
  session.addObserver(rec);
  session.start();
  const FinishedReport f = session.wait();
  const auto ended = Clock::now();
  QVERIFY(f.failed);
  QCOMPARE(session.state(), SessionState::Failed);
  QVERIFY(session.error().has_value());
  QCOMPARE(session.error()->rank, failing);
  QCOMPARE(session.error()->reason, "disk on fire on rank " + std::to_string(failing));
  QVERIFY(!session.error()->userError);
  QVERIFY2(ended - saboteur.thrownAt < std::chrono::seconds(1), "the session took over 1 s");
  const std::vector<std::string> lines = rec.lines();
  QCOMPARE(lines[lines.size() - 2], "error " + std::to_string(failing));
  QCOMPARE(lines.back(), std::string("finished"));
  QCOMPARE(
      static_cast<int>(std::count(lines.begin(), lines.end(), "error " + std::to_string(failing))),
      1);

  // The process lives on: another session runs to the end.
  Session next(tinyConfig({"data_parallel_size=" + std::to_string(ranks), "train_iters=2"}));
  QCOMPARE(next.run().steps, 2);
  QCOMPARE(next.state(), SessionState::Finished);
}

// A rank's std::bad_alloc ends the session with the run's memory and what to change, not the
// library's "std::bad_alloc".
void TestSession::allocationFailureSaysWhatToChange() {
  class Exhausted : public SessionObserver {
    void onRankStep(const StepReport& r) override {
      if (r.rank == 1 && r.step == 2) throw std::bad_alloc();
    }
  } exhausted;
  const TrainConfig config = tinyConfig({"data_parallel_size=2", "train_iters=1000"});
  Session session(config);
  session.addObserver(exhausted);
  QVERIFY(session.run().failed);
  QCOMPARE(session.error()->rank, 1);
  QVERIFY(!session.error()->userError);
  const MemoryEstimate e = estimateMemory(config, dataBytesInMemory(config.data), 2);
  const std::string reason = session.error()->reason;
  const std::string start = "out of memory: an allocation failed in a run estimated at about " +
                            formatBytes(e.totalBytes()) + " (2 ranks x " +
                            formatBytes(e.perRankBytes()) + "; largest: " + e.largest().name +
                            "), with ";
  QVERIFY2(reason.rfind(start, 0) == 0, reason.c_str());
  const std::string end =
      " available now; free memory, or use a smaller model or micro-batch, more ranks, a higher "
      "ZeRO stage or recompute";
  QVERIFY2(reason.size() > end.size() && reason.substr(reason.size() - end.size()) == end,
           reason.c_str());
}

void TestSession::userErrorIsMarked() {
  class BadInput : public SessionObserver {
    void onStart(const StartReport&) override { throw UserError("no such thing"); }
  } bad;
  Session session(tinyConfig({}));
  session.addObserver(bad);
  session.run();
  QVERIFY(session.error().has_value());
  QVERIFY(session.error()->userError);
  QCOMPARE(session.error()->reason, std::string("no such thing"));
}

void TestSession::startsOnlyOnce() {
  Session session(tinyConfig({"train_iters=1"}));
  session.start();
  session.wait();
  QVERIFY_THROWS_EXCEPTION(UserError, session.start());
}

QTEST_GUILESS_MAIN(TestSession)
#include "test_session.moc"
