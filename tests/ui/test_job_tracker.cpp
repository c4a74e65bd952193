// The GUI's job tracker: a job's result reaches the GUI thread through its callback; a job
// replaced or cancelled before it ended delivers nothing, is told so, and never blocks the GUI
// thread; a failure arrives as its message; progress arrives as a signal; the tracker's end
// waits for jobs still running.
#include <QSignalSpy>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "ui/job_tracker.h"

using parascope::ui::JobTracker;

namespace {

// A gate a job waits at until the test opens it.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace

class TestJobTracker : public QObject {
  Q_OBJECT
 private slots:
  void deliversResults();
  void replacedJobDeliversNothing();
  void cancelledJobIsTold();
  void failureArrivesAsMessage();
  void progressArrives();
  void endWaitsForRunningJobs();
  void callbackMayStartTheNextJob();
};

void TestJobTracker::deliversResults() {
  JobTracker jobs;
  int got = 0;
  jobs.start(
      QStringLiteral("a"), [](const JobTracker::Job&) { return 41 + 1; }, [&](int v) { got = v; });
  QVERIFY(jobs.running(QStringLiteral("a")));
  QTRY_COMPARE(got, 42);
  QVERIFY(!jobs.running(QStringLiteral("a")));
  QCOMPARE(jobs.threads(), 0);
}

// The first job still runs (held at its gate) when the second replaces it: start returns at
// once, only the second's result lands, and the first is told it was dropped.
void TestJobTracker::replacedJobDeliversNothing() {
  JobTracker jobs;
  Gate gate;
  std::atomic<bool> firstSawCancel{false};
  QStringList delivered;
  jobs.start(
      QStringLiteral("slot"),
      [&](const JobTracker::Job& job) {
        gate.wait();
        firstSawCancel = job.cancelled();
        return QStringLiteral("first");
      },
      [&](const QString& v) { delivered << v; });
  jobs.start(
      QStringLiteral("slot"), [](const JobTracker::Job&) { return QStringLiteral("second"); },
      [&](const QString& v) { delivered << v; });
  QCOMPARE(jobs.threads(), 2);
  QTRY_COMPARE(delivered, QStringList{QStringLiteral("second")});
  QCOMPARE(jobs.threads(), 1);  // the first still waits at its gate
  gate.open();
  QTRY_COMPARE(jobs.threads(), 0);
  QVERIFY(firstSawCancel);
  QCOMPARE(delivered, QStringList{QStringLiteral("second")});
}

void TestJobTracker::cancelledJobIsTold() {
  JobTracker jobs;
  std::atomic<bool> cancelled{false};
  bool delivered = false, failed = false;
  jobs.start(
      QStringLiteral("c"),
      [&](const JobTracker::Job& job) {
        while (!job.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        cancelled = true;
        throw std::runtime_error("stopped");
        return 0;
      },
      [&](int) { delivered = true; }, [&](const QString&) { failed = true; });
  jobs.cancel(QStringLiteral("c"));
  QVERIFY(!jobs.running(QStringLiteral("c")));
  QTRY_COMPARE(jobs.threads(), 0);
  QVERIFY(cancelled);
  QVERIFY(!delivered);
  QVERIFY(!failed);  // a dropped job's failure is dropped too
}

void TestJobTracker::failureArrivesAsMessage() {
  JobTracker jobs;
  QString message;
  bool delivered = false;
  jobs.start(
      QStringLiteral("f"),
      [](const JobTracker::Job&) -> int { throw std::runtime_error("the file is truncated"); },
      [&](int) { delivered = true; }, [&](const QString& m) { message = m; });
  QTRY_COMPARE(message, QStringLiteral("the file is truncated"));
  QVERIFY(!delivered);
}

void TestJobTracker::progressArrives() {
  JobTracker jobs;
  QSignalSpy spy(&jobs, &JobTracker::progressed);
  Gate gate;
  bool done = false;
  jobs.start(
      QStringLiteral("p"),
      [&](const JobTracker::Job& job) {
        job.progress(QStringLiteral("reading"), 0.5);
        gate.wait();
        return 0;
      },
      [&](int) { done = true; });
  QTRY_COMPARE(spy.count(), 1);
  QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("p"));
  QCOMPARE(spy.at(0).at(1).toString(), QStringLiteral("reading"));
  QCOMPARE(spy.at(0).at(2).toDouble(), 0.5);
  gate.open();
  QTRY_VERIFY(done);
  QCOMPARE(spy.count(), 1);  // reported once
}

void TestJobTracker::endWaitsForRunningJobs() {
  std::atomic<bool> ended{false};
  {
    JobTracker jobs;
    jobs.start(
        QStringLiteral("e"),
        [&](const JobTracker::Job& job) {
          while (!job.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          ended = true;
          return 0;
        },
        [](int) {});
  }
  QVERIFY(ended);
}

// A callback that starts a job of another slot whose older job ended in the same poll: that
// older result is stale by then and is not delivered.
void TestJobTracker::callbackMayStartTheNextJob() {
  JobTracker jobs;
  QStringList delivered;
  std::atomic<int> finished{0};
  auto quick = [&](const QString& value) {
    return [&finished, value](const JobTracker::Job&) {
      ++finished;
      return value;
    };
  };
  jobs.start(QStringLiteral("a"), quick(QStringLiteral("a1")), [&](const QString& v) {
    delivered << v;
    jobs.start(
        QStringLiteral("b"), [](const JobTracker::Job&) { return QStringLiteral("b2"); },
        [&](const QString& w) { delivered << w; });
  });
  jobs.start(QStringLiteral("b"), quick(QStringLiteral("b1")),
             [&](const QString& v) { delivered << v; });
  // Both end before the first poll looks.
  while (finished < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  QTRY_COMPARE(jobs.threads(), 0);
  QCOMPARE(delivered.first(), QStringLiteral("a1"));
  QCOMPARE(delivered.last(), QStringLiteral("b2"));
  QVERIFY(!delivered.contains(QStringLiteral("b1")));
}

QTEST_GUILESS_MAIN(TestJobTracker)
#include "test_job_tracker.moc"
