// The workbench's live feed when memory runs out, on its drain thread or on the GUI thread
// indexing the events: an exception leaving either aborted the application. Allocations fail on
// request (this executable replaces operator new): off the test's own thread, so the drain
// thread's next one throws std::bad_alloc, or any large one on it.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <thread>

#include "profiler/live_trace.h"
#include "profiler/synthetic_trace.h"
#include "tests/input_probes.h"
#include "ui/timeline/timeline_view.h"

namespace {

std::atomic<bool> failOffMainThread{false};
std::atomic<bool> failLarge{false};  // the next allocation of 64 KiB or more
std::thread::id mainThread;

// Every form of new and delete is replaced, so that each block is allocated and released by
// the same pair (malloc / aligned_alloc and free): a form left to the sanitizer's runtime would
// release with its own bookkeeping what these allocated, or the reverse.
void* allocate(std::size_t bytes, std::size_t alignment) {
  if (failOffMainThread.load(std::memory_order_relaxed) &&
      std::this_thread::get_id() != mainThread) {
    throw std::bad_alloc();
  }
  if (bytes >= (std::size_t{1} << 16) && failLarge.exchange(false)) throw std::bad_alloc();
  bytes = bytes ? bytes : 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(bytes)
                : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* allocateOrNull(std::size_t bytes, std::size_t alignment) noexcept {
  try {
    return allocate(bytes, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace

void* operator new(std::size_t n) {
  return allocate(n, 0);
}
void* operator new[](std::size_t n) {
  return allocate(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocateOrNull(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocateOrNull(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocateOrNull(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocateOrNull(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

class TestLiveTrace : public QObject {
  Q_OBJECT
 private slots:
  void allocationFailureEndsTheFeed();
  void allocationFailureStopsTheLiveView();
};

void TestLiveTrace::allocationFailureEndsTheFeed() {
  mainThread = std::this_thread::get_id();
  QTemporaryDir dir;
  const std::string path = dir.filePath(QStringLiteral("run.json")).toStdString();
  parascope::profiler::LiveTrace live(path);
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

void TestLiveTrace::allocationFailureStopsTheLiveView() {
  parascope::profiler::SyntheticOptions o;
  o.events = 200'000;
  const parascope::profiler::TraceData trace = parascope::profiler::syntheticTrainingTrace(o);
  const std::size_t tenth = trace.events.size() / 10;
  parascope::ui::TimelineView view;
  view.resize(1200, 600);
  view.appendEvents({trace.events.begin(), trace.events.begin() + tenth});
  QCOMPARE(view.index().eventCount(), tenth);
  // The rest no longer fits: the index's next growth fails.
  const std::vector<parascope::profiler::Event> rest(trace.events.begin() + tenth,
                                                     trace.events.end());
  failLarge = true;
  view.appendEvents(rest);
  QVERIFY(!failLarge);
  QVERIFY(view.liveStopped());
  QCOMPARE(view.index().eventCount(), std::size_t{0});
  QVERIFY2(view.message().startsWith(
               QStringLiteral("The live timeline stopped: out of memory while indexing the run's "
                              "events (")),
           qPrintable(view.message()));
  // Later live events are not taken (the index lost what came before them)...
  view.appendEvents({trace.events.begin(), trace.events.begin() + tenth});
  QCOMPARE(view.index().eventCount(), std::size_t{0});
  view.grab();  // ...and the view paints its message
  // A new index (the run's file, another trace) is a fresh start.
  view.setIndex(std::make_shared<parascope::profiler::TimelineIndex>());
  QVERIFY(!view.liveStopped());
  view.appendEvents({trace.events.begin(), trace.events.begin() + tenth});
  QCOMPARE(view.index().eventCount(), tenth);
}

QTEST_MAIN(TestLiveTrace)
#include "test_live_trace.moc"
