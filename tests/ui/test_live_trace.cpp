// The workbench's live trace when memory runs out on its drain thread: an exception leaving that
// thread aborted the application. Allocations off the test's own thread fail on request (this
// executable replaces operator new), so the drain thread's next one throws std::bad_alloc.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <thread>

#include "tests/input_probes.h"
#include "ui/live_trace.h"

namespace {

std::atomic<bool> failOffMainThread{false};
std::thread::id mainThread;

}  // namespace

void* operator new(std::size_t bytes) {
  if (failOffMainThread.load(std::memory_order_relaxed) &&
      std::this_thread::get_id() != mainThread) {
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

class TestLiveTrace : public QObject {
  Q_OBJECT
 private slots:
  void allocationFailureEndsTheFeed();
};

void TestLiveTrace::allocationFailureEndsTheFeed() {
  mainThread = std::this_thread::get_id();
  QTemporaryDir dir;
  const std::string path = dir.filePath(QStringLiteral("run.json")).toStdString();
  parascope::ui::LiveTrace live(path);
  live.begin(nullptr, 1);
  QCOMPARE(QString::fromStdString(live.failure()), QString());
  failOffMainThread = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (live.failure().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  failOffMainThread = false;
  const QString why =
      QStringLiteral("out of memory while collecting the run's events; the live timeline stopped");
  QCOMPARE(QString::fromStdString(live.failure()), why);
  QVERIFY(live.take().events.empty());
  QCOMPARE(parascope::test::userErrorOf([&] { live.end(-1); }),
           QStringLiteral("the run's trace was not written: ") + why);
  QVERIFY(!std::filesystem::exists(path));
}

QTEST_APPLESS_MAIN(TestLiveTrace)
#include "test_live_trace.moc"
