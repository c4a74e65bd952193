// The collective suite on the in-process backend at world sizes 1, 2, 3, 4 and 8, plus what
// only a single process can check directly: hand-derived byte counts per algorithm, failure
// propagation and its latency, mismatch detection and argument validation.
#include <QtTest>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "collective_suite.h"
#include "core/comm/adjoint.h"
#include "core/comm/device_buffers.h"
#include "core/comm/launch.h"
#include "core/comm/reduce_kernels.h"
#include "core/common/error.h"
#include "core/trace/trace.h"
#include "tests/input_probes.h"

using namespace parascope;
using namespace parascope::commtest;

namespace {

bool has(const std::string& s, const char* fragment) {
  return s.find(fragment) != std::string::npos;
}

// Runs fn on every rank; a std::exception on any rank fails the test with its message.
void onRanks(int n, const std::function<void(Communicator&)>& fn, CommOptions options = {}) {
  try {
    runInProcess(n, fn, options);
  } catch (const std::exception& e) {
    QFAIL(e.what());
  }
}

// Expects `fn` to throw E whose message contains every fragment.
template <typename E>
void expectThrow(const std::function<void()>& fn, std::initializer_list<const char*> fragments) {
  try {
    fn();
  } catch (const E& e) {
    for (const char* f : fragments)
      if (!has(e.what(), f))
        throw std::runtime_error(std::string("message '") + e.what() + "' lacks '" + f + "'");
    return;
  }
  throw std::runtime_error("expected an exception");
}

using Bytes = std::vector<std::uint64_t>;

std::string show(const Bytes& v) {
  std::string s;
  for (auto x : v) s.append(s.empty() ? "" : " ").append(std::to_string(x));
  return "[" + s + "]";
}
template <typename T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return v;
  else if constexpr (std::is_enum_v<T>)
    return std::to_string(static_cast<int>(v));
  else
    return std::to_string(v);
}

// QCOMPARE for rank threads: Qt Test's macros may only run on the test's own thread.
#define SAME(a, b)                                                                         \
  do {                                                                                     \
    const auto& sameA_ = (a);                                                              \
    const auto& sameB_ = (b);                                                              \
    if (!(sameA_ == sameB_))                                                               \
      throw std::runtime_error(std::string(#a) + " is " + show(sameA_) + ", expected " +   \
                               show(sameB_) + " (line " + std::to_string(__LINE__) + ")"); \
  } while (0)
#define TRUE_(c)                                                         \
  do {                                                                   \
    if (!(c))                                                            \
      throw std::runtime_error(std::string("failed: ") + #c + " line " + \
                               std::to_string(__LINE__));                \
  } while (0)

// A device whose memory the host cannot read: host memory at addresses with bit 62 set, which
// no load reaches (x86-64 and AArch64 fault on them), so a collective that touched a device
// buffer directly instead of through DeviceBuffers would crash the suite. Its copies and
// reductions take the tag off and do what the host backend does.
//
// Each thread also has a stream of "kernels" (launchWrite) that land only once a mark taken
// after them is waited for, as a compute stream runs work after its launch has returned: an
// operation that touched a rank's buffers before waiting for that rank's mark would read what
// was there before, or have its result overwritten by a write landing later.
constexpr std::uintptr_t kDeviceTag = std::uintptr_t{1} << 62;
template <typename T>
T* tagged(T* p) {
  return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) | kDeviceTag);
}
template <typename T>
T* untagged(T* p) {
  return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) & ~kDeviceTag);
}

class UnreadableDevice final : public DeviceBuffers {
 public:
  bool holds(const void* p) const override {
    return (reinterpret_cast<std::uintptr_t>(p) & kDeviceTag) != 0;
  }
  void copy(void* dst, const void* src, std::size_t bytes) const override {
    ++copies;
    std::memcpy(untagged(dst), untagged(src), bytes);
  }
  void zero(void* p, std::size_t bytes) const override { std::memset(untagged(p), 0, bytes); }
  void reduce(void* const* dsts, int ndst, const void* const* srcs, int nsrc, std::size_t count,
              DType type, ReduceOp op, int divisor) const override {
    ++reductions;
    {
      std::lock_guard lock(streamsMutex_);
      reducingRanks.insert(trace::context().rank);
    }
    std::vector<void*> d(dsts, dsts + ndst);
    std::vector<const void*> s(srcs, srcs + nsrc);
    for (void*& p : d) p = untagged(p);
    for (const void*& p : s) p = untagged(p);
    reduceBuffers(d.data(), ndst, s.data(), nsrc, count, type, op, divisor);
  }
  std::shared_ptr<void> allocate(std::size_t bytes) const override {
    return {tagged(std::malloc(bytes)), [](void* p) { std::free(untagged(p)); }};
  }
  std::shared_ptr<const void> mark() const override {
    Stream& s = mine();
    std::lock_guard lock(s.mutex);
    return std::make_shared<const Mark>(Mark{&s, s.writes.size()});
  }
  void waitFor(const std::shared_ptr<const void>& mark) const override {
    if (!mark) return;
    const auto& m = *static_cast<const Mark*>(mark.get());
    std::lock_guard lock(m.stream->mutex);
    for (; m.stream->landed < m.upTo; ++m.stream->landed) {
      const Write& w = m.stream->writes[m.stream->landed];
      std::memcpy(untagged(w.dst), w.bytes.data(), w.bytes.size());
    }
  }
  // A kernel on the calling thread's stream writing `bytes` of `src` (host memory) to `dst`.
  void launchWrite(void* dst, const void* src, std::size_t bytes) const {
    Stream& s = mine();
    std::lock_guard lock(s.mutex);
    const auto* b = static_cast<const std::byte*>(src);
    s.writes.push_back({dst, std::vector<std::byte>(b, b + bytes)});
  }
  mutable std::atomic<long> copies{0}, reductions{0};
  // The trace rank of the threads that reduced: a GPU's reduction kernels are attributed to it.
  mutable std::set<int> reducingRanks;

 private:
  struct Write {
    void* dst;
    std::vector<std::byte> bytes;
  };
  struct Stream {
    std::mutex mutex;
    std::vector<Write> writes;
    std::size_t landed = 0;
  };
  struct Mark {
    Stream* stream;
    std::size_t upTo;
  };
  Stream& mine() const {
    std::lock_guard lock(streamsMutex_);
    std::unique_ptr<Stream>& s = streams_[std::this_thread::get_id()];
    if (!s) s = std::make_unique<Stream>();
    return *s;
  }
  mutable std::mutex streamsMutex_;
  mutable std::map<std::thread::id, std::unique_ptr<Stream>> streams_;
};

class UnreadableMemory final : public BufferMemory {
 public:
  void* allocate(std::size_t bytes) override { return tagged(std::malloc(bytes)); }
  void release(void* p) override { std::free(untagged(p)); }
  void upload(void* device, const void* host, std::size_t bytes) override {
    std::memcpy(untagged(device), host, bytes);
  }
  void download(void* host, const void* device, std::size_t bytes) override {
    std::memcpy(host, untagged(device), bytes);
  }
};

}  // namespace

class TestCommThreads : public QObject {
  Q_OBJECT
 private slots:
  void collectives_data();
  void collectives();
  void deviceBuffersGoThroughTheirDevice();
  void operationsWaitForTheirRanksDeviceWork();
  void splitGroups();
  void manyInFlight();
  void rankOrder();
  void reductionsPastTheCache();
  void adjointness();
  void byteConsistency();
  void handDerivedBytes();
  void observerSeesEveryOperation();
  void throwingRankFailsPeersWithinOneSecond();
  void exitedRankFailsPeers();
  void ranksBeyondTheThreadLimitFailWithTheReason();
  void stalledRankTimesOut();
  void returningRankFinishesItsAsyncWork();
  void mismatchIsAnError();
  void invalidArgumentsAreRejected();
  void defaultCommunicatorIsSingleRank();
};

void TestCommThreads::collectives_data() {
  QTest::addColumn<int>("ranks");
  for (int n : {1, 2, 3, 4, 8}) QTest::addRow("n=%d", n) << n;
}

void TestCommThreads::collectives() {
  QFETCH(int, ranks);
  onRanks(ranks, [ranks](Communicator& c) {
    runCollectives(c, ranks > 4 ? smallSizes() : defaultSizes());
  });
}

// Ranks sharing a GPU: the suite's buffers all in a device's memory, every operation (sends and
// receives to oneself included) copies and reduces them through DeviceBuffers only; a reduction
// over one rank's device buffer and another's host buffer is refused on both.
void TestCommThreads::deviceBuffersGoThroughTheirDevice() {
  for (int n : {1, 2, 3, 4}) {
    auto device = std::make_shared<UnreadableDevice>();
    CommOptions options;
    options.deviceBuffers = device;
    UnreadableMemory memory;
    onRanks(
        n, [&](Communicator& c) { runCollectives(c, smallSizes(), &memory); }, options);
    QVERIFY(device->copies > 0);
    QVERIFY(n == 1 || device->reductions > 0);
  }
  // The adjoints that write gradients themselves (broadcast's zeros, reduce's copy at the root)
  // write device buffers through the device too.
  {
    CommOptions options;
    options.deviceBuffers = std::make_shared<UnreadableDevice>();
    UnreadableMemory memory;
    onRanks(
        3,
        [&](Communicator& c) {
          const float mine[4] = {1.0f + c.rank(), 1.0f + c.rank(), 1.0f + c.rank(),
                                 1.0f + c.rank()};
          const std::unique_ptr<void, std::function<void(void*)>> out(
              memory.allocate(sizeof mine), [&](void* p) { memory.release(p); });
          const std::unique_ptr<void, std::function<void(void*)>> in(
              memory.allocate(sizeof mine), [&](void* p) { memory.release(p); });
          memory.upload(out.get(), mine, sizeof mine);
          float got[4];
          const CommArgs broadcast{CommOp::Broadcast, nullptr,       nullptr, 4,
                                   DType::F32,        ReduceOp::Sum, 0};
          adjointAsync(c, broadcast, out.get(), in.get()).wait();
          memory.download(got, in.get(), sizeof got);
          SAME(got[3], c.rank() == 0 ? 6.0f : 0.0f);
          const CommArgs reduce{CommOp::Reduce, nullptr, nullptr, 4, DType::F32, ReduceOp::Sum, 1};
          adjointAsync(c, reduce, out.get(), in.get()).wait();
          memory.download(got, in.get(), sizeof got);
          SAME(got[0], 2.0f);  // the root's gradient, broadcast
        },
        options);
  }
  CommOptions options;
  options.deviceBuffers = std::make_shared<UnreadableDevice>();
  UnreadableMemory memory;
  try {
    runInProcess(
        2,
        [&](Communicator& c) {
          float host[4] = {1, 2, 3, 4};
          const std::unique_ptr<void, std::function<void(void*)>> device(
              memory.allocate(sizeof host), [&](void* p) { memory.release(p); });
          memory.upload(device.get(), host, sizeof host);
          float* buffer = c.rank() == 0 ? static_cast<float*>(device.get()) : host;
          c.allReduce(buffer, buffer, 4, DType::F32, ReduceOp::Sum);
        },
        options);
    QFAIL("a reduction over host and device buffers went through");
  } catch (const CommError& e) {
    QVERIFY2(has(e.what(), "a reduction over host and device buffers at once"), e.what());
  }
}

// A rank's kernels run after their launch has returned. Every operation over device buffers
// waits for the work its rank launched before issuing it, before any rank reads or writes that
// rank's buffers: a collective run on the rank's worker behind another or on its own thread, a
// send and its receive (whose buffer an earlier kernel still writes), an adjoint's own writes.
// The queued all-reduce runs on each rank's communication thread, under the rank's trace tags.
void TestCommThreads::operationsWaitForTheirRanksDeviceWork() {
  for (int n : {2, 3, 4}) {
    auto device = std::make_shared<UnreadableDevice>();
    CommOptions options;
    options.deviceBuffers = device;
    UnreadableMemory memory;
    onRanks(
        n,
        [&](Communicator& c) {
          const int r = c.rank();
          constexpr std::size_t k = 1000;
          using Buffer = std::unique_ptr<void, std::function<void(void*)>>;
          auto buffer = [&](std::size_t count) {
            Buffer b(memory.allocate(count * sizeof(float)), [&](void* p) { memory.release(p); });
            const std::vector<float> zeros(count, 0.0f);
            memory.upload(b.get(), zeros.data(), count * sizeof(float));
            return b;
          };
          auto launch = [&](const Buffer& b, float value) {
            const std::vector<float> v(k, value);
            device->launchWrite(b.get(), v.data(), k * sizeof(float));
          };
          // What the rank's kernels see after the operation: its stream run to the end.
          auto read = [&](const Buffer& b, std::size_t count) {
            device->waitFor(device->mark());
            std::vector<float> v(count);
            memory.download(v.data(), b.get(), count * sizeof(float));
            return v;
          };
          auto element = [&](const Buffer& b, std::size_t i) { return read(b, i + 1)[i]; };
          const float mine = 1.0f + static_cast<float>(r);
          const auto sum = static_cast<float>(n * (n + 1) / 2);

          const Buffer in = buffer(k), gathered = buffer(k * n), reduced = buffer(k);
          launch(in, mine);
          launch(reduced, mine);
          CommHandle first = c.allGatherAsync(in.get(), gathered.get(), k, DType::F32);
          CommHandle second =  // queued on the worker behind the gather
              c.allReduceAsync(reduced.get(), reduced.get(), k, DType::F32, ReduceOp::Sum);
          first.wait();
          second.wait();
          const std::vector<float> g = read(gathered, k * n);
          for (int p = 0; p < n; ++p) SAME(g[static_cast<std::size_t>(p) * k + k - 1], 1.0f + p);
          SAME(element(reduced, k / 2), sum);

          const Buffer inline_ = buffer(k);
          launch(inline_, mine);
          c.allReduce(inline_.get(), inline_.get(), k, DType::F32, ReduceOp::Sum);
          SAME(element(inline_, 0), sum);

          const Buffer sent = buffer(k), received = buffer(k);
          launch(sent, mine);
          launch(received, -7.0f);  // an earlier kernel's write the receive must follow
          CommHandle s = c.sendAsync(sent.get(), k, DType::F32, (r + 1) % n);
          CommHandle v = c.recvAsync(received.get(), k, DType::F32, (r + n - 1) % n);
          s.wait();
          v.wait();
          SAME(element(received, k - 1), 1.0f + static_cast<float>((r + n - 1) % n));

          // Broadcast's adjoint zeroes the non-roots' gradients on the rank's own thread.
          const Buffer gradOut = buffer(k), gradIn = buffer(k);
          launch(gradOut, mine);
          launch(gradIn, -7.0f);
          const CommArgs broadcast{CommOp::Broadcast, nullptr,       nullptr, k,
                                   DType::F32,        ReduceOp::Sum, 0};
          adjointAsync(c, broadcast, gradOut.get(), gradIn.get()).wait();
          SAME(element(gradIn, 1), r == 0 ? sum : 0.0f);
        },
        options);
    // An asynchronous all-reduce runs on each rank's communication thread, under the issuing
    // rank's trace tags: each rank reduces its chunk as itself.
    auto tagged = std::make_shared<UnreadableDevice>();
    options.deviceBuffers = tagged;
    onRanks(
        n,
        [&](Communicator& c) {
          const trace::ScopedContext traced({.rank = c.rank()});
          float* buffer = static_cast<float*>(memory.allocate(64 * sizeof(float)));
          c.allReduceAsync(buffer, buffer, 64, DType::F32, ReduceOp::Sum).wait();
          memory.release(buffer);
        },
        options);
    QCOMPARE(static_cast<int>(tagged->reducingRanks.size()), n);
  }
}

void TestCommThreads::splitGroups() {
  for (int n : {2, 3, 4, 8}) onRanks(n, [](Communicator& c) { runSplitGroups(c, smallSizes()); });
}

void TestCommThreads::manyInFlight() {
  for (int n : {2, 3, 8}) onRanks(n, runManyInFlight);
}

// Results of 16 MiB and more per rank bypass the cache with non-temporal stores; check them,
// from unaligned buffers, for f32 (in place) and bf16 (widened, rounded once), every element.
void TestCommThreads::rankOrder() {
  for (int n : {1, 3, 4, 8}) onRanks(n, [](Communicator& c) { runRankOrder(c); });
}

void TestCommThreads::reductionsPastTheCache() {
  const std::size_t count = (std::size_t{33} << 20) / sizeof(float) + 3;  // 16.5 MiB per rank
  onRanks(2, [&](Communicator& c) {
    std::vector<float> buf(count + 1);
    float* x = buf.data() + 1;  // 4-byte aligned only
    for (std::size_t i = 0; i < count; ++i) x[i] = static_cast<float>((i % 1021) * (c.rank() + 1));
    c.allReduce(x, x, count, DType::F32, ReduceOp::Sum);
    for (std::size_t i = 0; i < count; ++i) TRUE_(x[i] == static_cast<float>((i % 1021) * 3));
  });
  const std::size_t half = (std::size_t{17} << 20) / 2 + 5;  // per rank, bf16: 17 MiB + 10 B
  onRanks(2, [&](Communicator& c) {
    std::vector<std::uint16_t> send(2 * half), recv(half + 1);
    for (std::size_t i = 0; i < send.size(); ++i)
      send[i] = floatToBf16(static_cast<float>(i % 97) + 0.5f * c.rank());
    c.reduceScatter(send.data(), recv.data() + 1, half, DType::BF16, ReduceOp::Avg);
    for (std::size_t i = 0; i < half; ++i) {
      const std::size_t g = c.rank() * half + i;
      const float mean = (2.0f * static_cast<float>(g % 97) + 0.5f) / 2.0f;
      TRUE_(recv[i + 1] == floatToBf16(mean));
    }
  });
}

void TestCommThreads::adjointness() {
  for (int n : {1, 2, 3, 4, 8}) onRanks(n, runAdjointness);
}

void TestCommThreads::byteConsistency() {
  for (int n : {2, 3, 8}) onRanks(n, runByteConsistency);
}

// Counts derived by hand from the algorithms in docs/communication.md.
void TestCommThreads::handDerivedBytes() {
  onRanks(3, [](Communicator& c) {
    const int r = c.rank();
    std::vector<float> a(30000, 1.0f), b(30000);
    // Direct all-reduce (400 B <= 32 KiB): every peer reads my whole input and I read theirs.
    CommRecord rec = c.allReduce(a.data(), b.data(), 100, DType::F32, ReduceOp::Sum);
    SAME(rec.algorithm, std::string("direct"));
    Bytes peer400(3, 400);
    peer400[static_cast<std::size_t>(r)] = 0;
    SAME(rec.sentTo, peer400);
    SAME(rec.receivedFrom, peer400);
    SAME(rec.bytes, std::size_t{400});
    // Chunked all-reduce of 10000 f32: ceil(10000/3) = 3334 -> 3344 (16-element lines), so
    // chunks of 13376, 13376 and 13248 bytes; to each peer p: chunk p + my chunk.
    rec = c.allReduce(a.data(), b.data(), 10000, DType::F32, ReduceOp::Sum);
    SAME(rec.algorithm, std::string("chunked"));
    const Bytes chunked[3] = {{0, 26752, 26624}, {26752, 0, 26624}, {26624, 26624, 0}};
    SAME(rec.sentTo, chunked[r]);
    SAME(rec.receivedFrom, chunked[r]);
    // Reduce of 100 f32 to root 1: chunks of 48, 48, 4 elements (192, 192, 16 bytes).
    rec = c.reduce(a.data(), b.data(), 100, DType::F32, ReduceOp::Sum, 1);
    const Bytes reduceSent[3] = {{0, 384, 16}, {192, 0, 16}, {192, 208, 0}};
    const Bytes reduceRecv[3] = {{0, 192, 192}, {384, 0, 208}, {16, 16, 0}};
    SAME(rec.sentTo, reduceSent[r]);
    SAME(rec.receivedFrom, reduceRecv[r]);
    // Broadcast of 5 i64 from root 2: 40 bytes from the root to each peer.
    rec = c.broadcast(a.data(), 5, DType::I64, 2);
    SAME(rec.sentTo, (r == 2 ? Bytes{40, 40, 0} : Bytes{0, 0, 0}));
    SAME(rec.receivedFrom, (r == 2 ? Bytes{0, 0, 0} : Bytes{0, 0, 40}));
    // Gather and scatter of 3 i32 per rank at root 0: 12 bytes per non-root.
    rec = c.gather(a.data(), b.data(), 3, DType::I32, 0);
    SAME(rec.sentTo, (r == 0 ? Bytes{0, 0, 0} : Bytes{12, 0, 0}));
    SAME(rec.receivedFrom, (r == 0 ? Bytes{0, 12, 12} : Bytes{0, 0, 0}));
    SAME(rec.bytes, std::size_t{36});
    rec = c.scatter(a.data(), b.data(), 3, DType::I32, 0);
    SAME(rec.sentTo, (r == 0 ? Bytes{0, 12, 12} : Bytes{0, 0, 0}));
    SAME(rec.receivedFrom, (r == 0 ? Bytes{0, 0, 0} : Bytes{12, 0, 0}));
    // allGather, reduceScatter, allToAll of 3 bf16 blocks: 6 bytes each way per peer.
    Bytes peer6(3, 6);
    peer6[static_cast<std::size_t>(r)] = 0;
    for (CommOp op : {CommOp::AllGather, CommOp::ReduceScatter, CommOp::AllToAll}) {
      rec = c.startAsync({op, a.data(), b.data(), 3, DType::BF16, ReduceOp::Sum, -1}).wait();
      SAME(rec.sentTo, peer6);
      SAME(rec.receivedFrom, peer6);
      SAME(rec.bytes, std::size_t{18});
    }
    // Send 7 f16 from rank 0 to 2: 14 bytes.
    if (r == 0) SAME(c.send(a.data(), 7, DType::F16, 2).sentTo, (Bytes{0, 0, 14}));
    if (r == 2) SAME(c.recv(b.data(), 7, DType::F16, 0).receivedFrom, (Bytes{14, 0, 0}));
  });
}

void TestCommThreads::observerSeesEveryOperation() {
  onRanks(2, [](Communicator& c) {
    std::vector<CommRecord> seen;
    c.setObserver([&](const CommRecord& r) { seen.push_back(r); });
    std::vector<float> x(64, 1.0f), y(128);
    CommHandle h = c.allReduceAsync(x.data(), x.data(), 64, DType::F32, ReduceOp::Avg);
    c.allGather(x.data(), y.data(), 64, DType::F32);
    SAME(seen.size(), std::size_t{1});  // the async one is reported when waited
    h.wait();
    h.wait();
    SAME(seen.size(), std::size_t{2});
    SAME(seen[0].op, CommOp::AllGather);
    SAME(seen[1].op, CommOp::AllReduce);
    SAME(seen[1].group, std::string("world"));
    SAME(seen[1].backend, std::string("threads"));
    TRUE_(seen[1].endNs >= seen[1].startNs);
    c.setObserver({});
  });
}

void TestCommThreads::throwingRankFailsPeersWithinOneSecond() {
  std::atomic<std::int64_t> thrownAt{0};
  std::vector<std::int64_t> failedAt(4, 0);
  std::vector<std::string> messages(4);
  try {
    runInProcess(4, [&](Communicator& c) {
      std::vector<float> x(1000, 1.0f);
      c.allReduce(x.data(), x.data(), 1000, DType::F32, ReduceOp::Sum);
      if (c.rank() == 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        thrownAt = commNowNs();
        throw std::runtime_error("boom");
      }
      CommHandle pending = c.allReduceAsync(x.data(), x.data(), 1000, DType::F32, ReduceOp::Sum);
      try {
        pending.wait();
      } catch (const CommError& e) {
        failedAt[static_cast<std::size_t>(c.rank())] = commNowNs();
        messages[static_cast<std::size_t>(c.rank())] = e.what();
      }
      // Later operations fail at once, too.
      expectThrow<CommError>([&] { c.broadcast(x.data(), 3, DType::F32, 0); }, {"boom"});
    });
    QFAIL("runInProcess did not rethrow");
  } catch (const std::runtime_error& e) {
    QCOMPARE(std::string(e.what()), std::string("boom"));
  }
  for (int r : {0, 1, 3}) {
    const std::string& m = messages[static_cast<std::size_t>(r)];
    QVERIFY2(has(m, "[allReduce] group 'world'") && has(m, "rank 2 failed: boom") &&
                 has(m, "ranks that did not arrive: 2"),
             m.c_str());
    const double seconds =
        static_cast<double>(failedAt[static_cast<std::size_t>(r)] - thrownAt) * 1e-9;
    QVERIFY2(seconds < 1.0, std::to_string(seconds).c_str());
  }
}

void TestCommThreads::exitedRankFailsPeers() {
  try {
    runInProcess(3, [](Communicator& c) {
      if (c.rank() == 1) return;
      std::int32_t v = 1;
      c.allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
    });
    QFAIL("expected a failure");
  } catch (const CommError& e) {
    // Rank 2 may find rank 1 gone before rank 0 has arrived: then it names both as missing.
    const std::string m = e.what();
    QVERIFY2(
        has(m, "rank(s) 1 exited without joining") &&
            (has(m, "ranks that did not arrive: 1") || has(m, "ranks that did not arrive: 0, 1")),
        m.c_str());
  }
  // A receive whose sender exited fails as well.
  try {
    runInProcess(2, [](Communicator& c) {
      if (c.rank() == 0) return;
      float v = 0;
      c.recv(&v, 1, DType::F32, 0);
    });
    QFAIL("expected a failure");
  } catch (const CommError& e) {
    QVERIFY2(has(e.what(), "rank 0 exited without a matching send"), e.what());
  }
}

// A world with more ranks than the process may start threads for (RLIMIT_NPROC, which counts a
// user's threads, as user nobody so that the limit applies) ends with one reason naming the rank
// and what to change; it aborted (a joinable std::thread destroyed) or left the started ranks
// waiting. Run in a process of its own (thread_limit_probe), whose user and limit end with it.
void TestCommThreads::ranksBeyondTheThreadLimitFailWithTheReason() {
  if (::geteuid() != 0) QSKIP("needs root, to run the probe as a user whose threads it can count");
  const parascope::test::RawRun r = parascope::test::runRaw(THREAD_LIMIT_PROBE, {}, STDOUT_FILENO);
  const std::string& message = r.output;
  QVERIFY2(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, message.c_str());
  QVERIFY2(message.starts_with("in-process world of 256 ranks: cannot start rank ") &&
               has(message,
                   "'s thread (Resource temporarily unavailable): this machine's limit on "
                   "threads or memory (ulimit -u, ulimit -v) is reached; use fewer "
                   "in-process ranks, or run the ranks as MPI processes (--backend mpi)"),
           message.c_str());
}

void TestCommThreads::stalledRankTimesOut() {
  CommOptions options;
  options.timeout = std::chrono::milliseconds(150);
  try {
    runInProcess(
        3,
        [](Communicator& c) {
          if (c.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(600));
          std::int64_t v = 1;
          c.allReduce(&v, &v, 1, DType::I64, ReduceOp::Sum);
        },
        options);
    QFAIL("expected a timeout");
  } catch (const CommError& e) {
    const std::string m = e.what();
    QVERIFY2(has(m, "timed out after 150 ms") && has(m, "ranks that did not arrive: 2"), m.c_str());
  }
}

// A rank may return with operations still queued: they run to completion before it counts as
// gone, so its peers succeed.
void TestCommThreads::returningRankFinishesItsAsyncWork() {
  std::vector<std::int64_t> values(3, 0);
  onRanks(3, [&](Communicator& c) {
    std::int64_t& v = values[static_cast<std::size_t>(c.rank())];
    v = c.rank() + 1;
    if (c.rank() == 0) {
      (void)c.allReduceAsync(&v, &v, 1, DType::I64, ReduceOp::Sum);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c.allReduce(&v, &v, 1, DType::I64, ReduceOp::Sum);
  });
  QCOMPARE(values, (std::vector<std::int64_t>{6, 6, 6}));
}

void TestCommThreads::mismatchIsAnError() {
  onRanks(3, [](Communicator& c) {
    const int r = c.rank();
    std::vector<float> x(64, 1.0f), y(64 * 3);
    expectThrow<CommError>(
        [&] { c.allReduce(x.data(), x.data(), r == 1 ? 5 : 4, DType::F32, ReduceOp::Sum); },
        {"ranks issued different operations or arguments", "rank 1: allReduce count 5 f32 sum"});
    expectThrow<CommError>(
        [&] {
          c.allReduce(x.data(), x.data(), 4, r == 2 ? DType::I32 : DType::F32, ReduceOp::Max);
        },
        {"rank 2: allReduce count 4 i32 max"});
    expectThrow<CommError>([&] { c.broadcast(x.data(), 4, DType::F32, r == 0 ? 1 : 0); },
                           {"rank 0: broadcast count 4 f32 root 1"});
    expectThrow<CommError>(
        [&] {
          if (r == 0)
            c.allGather(x.data(), y.data(), 4, DType::F32);
          else
            c.reduceScatter(y.data(), x.data(), 4, DType::F32, ReduceOp::Sum);
        },
        {"rank 0: allGather", "rank 1: reduceScatter"});
    // The group still works afterwards.
    c.allReduce(x.data(), x.data(), 64, DType::F32, ReduceOp::Sum);
    SAME(x[63], 3.0f);
    if (r == 0)
      expectThrow<CommError>([&] { c.send(x.data(), 4, DType::F32, 1); },
                             {"does not match recv of 5"});
    if (r == 1)
      expectThrow<CommError>([&] { c.recv(y.data(), 5, DType::F32, 0); },
                             {"send of 4 f32 from rank 0"});
  });
}

void TestCommThreads::invalidArgumentsAreRejected() {
  onRanks(2, [](Communicator& c) {
    std::vector<float> x(64), y(128);
    expectThrow<UserError>([&] { c.broadcast(x.data(), 4, DType::F32, 2); },
                           {"[broadcast] group 'world'", "root 2 is out of range (allowed 0..1)"});
    expectThrow<UserError>([&] { c.send(x.data(), 4, DType::F32, -1); },
                           {"peer -1 is out of range"});
    expectThrow<UserError>([&] { c.allReduce(nullptr, x.data(), 4, DType::F32, ReduceOp::Sum); },
                           {"send buffer is null"});
    expectThrow<UserError>(
        [&] { c.allReduce(x.data(), x.data() + 1, 4, DType::F32, ReduceOp::Sum); },
        {"overlap but are not in place"});
    expectThrow<UserError>([&] { c.allGather(y.data() + 1, y.data(), 4, DType::F32); },
                           {"overlap but are not in place"});
    expectThrow<UserError>([&] { (void)c.split(-1, 0); }, {"color -1 is negative"});
    Tensor in = Tensor::zeros({9}, DType::F32, MemoryCategory::CommBuffer);
    Tensor out = Tensor::zeros({4}, DType::F32, MemoryCategory::CommBuffer);
    expectThrow<UserError>([&] { c.reduceScatterAsync(in, out, ReduceOp::Sum); },
                           {"input of 9 elements is not divisible by the group size 2"});
    expectThrow<UserError>([&] { c.allGatherAsync(out, in); },
                           {"must hold group size x input = 8"});
    CommArgs maxAllReduce{CommOp::AllReduce, x.data(), y.data(), 4, DType::F32, ReduceOp::Max, -1};
    expectThrow<UserError>([&] { adjointAsync(c, maxAllReduce, x.data(), y.data()); },
                           {"'max' is not linear"});
    // Nothing above reached the peers: a valid operation still matches.
    Tensor t = Tensor::zeros({8}, DType::F32, MemoryCategory::CommBuffer);
    t.data<float>()[0] = static_cast<float>(c.rank() + 1);
    c.allReduceAsync(t, ReduceOp::Sum).wait();
    SAME(t.data<float>()[0], 3.0f);
  });
  QVERIFY_THROWS_EXCEPTION(UserError, runInProcess(0, [](Communicator&) {}));
}

void TestCommThreads::defaultCommunicatorIsSingleRank() {
  Communicator c;
  QCOMPARE(c.size(), 1);
  QCOMPARE(c.rank(), 0);
  QCOMPARE(c.name(), std::string("self"));
  std::vector<float> x{1, 2, 3}, y(3);
  const CommRecord rec = c.allReduce(x.data(), y.data(), 3, DType::F32, ReduceOp::Avg);
  QCOMPARE(y, x);
  QCOMPARE(rec.totalSent(), std::uint64_t{0});
}

QTEST_GUILESS_MAIN(TestCommThreads)
#include "test_comm_threads.moc"
