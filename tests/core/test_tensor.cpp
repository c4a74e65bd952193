// Tensors, the tracked allocator and the exact dtype conversions.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "core/common/error.h"
#include "core/tensor/tensor.h"

using namespace parascope;

class TestTensor : public QObject {
  Q_OBJECT
 private slots:
  void bf16RoundsToNearestEven();
  void f16RoundsToNearestEvenAcrossRanges();
  void f16ConversionMatchesCompilerHalf();
  void allocatorTracksLiveAndPeakPerCategory();
  void allocatorHookSeesEveryEvent();
  void allocatorReusesReleasedBlocks();
  void deviceBlocksAreCachedAcrossSteps();
  void fullDeviceGivesBackItsCacheFirst();
  void pagePoolMovesPagesIntoOtherSizes();
  void pagePoolRefusesPartialGranules();
  void pagePoolAdvisesHugePagesUnlessTold();
  void allocatorsSharingAPoolReuseEachOthersPages();
  void viewsShareStorage();
  void onHostCopiesOnlyADevicesTensor();
  void dtypeNamesParseAndRejectUnknown();
};

void TestTensor::bf16RoundsToNearestEven() {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1 + 2^-7: ties go to the even mantissa.
  QCOMPARE(bf16ToFloat(floatToBf16(1.0f + 0x1p-8f)), 1.0f);
  QCOMPARE(bf16ToFloat(floatToBf16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  QCOMPARE(bf16ToFloat(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f)), 1.0f + 0x1p-7f);
  QCOMPARE(floatToBf16(-0.0f), std::uint16_t{0x8000});
  QVERIFY(std::isnan(bf16ToFloat(floatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  QVERIFY(std::isinf(bf16ToFloat(floatToBf16(std::numeric_limits<float>::max()))));
}

void TestTensor::f16RoundsToNearestEvenAcrossRanges() {
  QCOMPARE(f16ToFloat(floatToF16(65504.0f)), 65504.0f);
  QCOMPARE(f16ToFloat(floatToF16(65519.0f)), 65504.0f);
  QVERIFY(std::isinf(f16ToFloat(floatToF16(65520.0f))));  // tie rounds to even: infinity
  QCOMPARE(f16ToFloat(floatToF16(0x1p-24f)), 0x1p-24f);   // smallest subnormal
  QCOMPARE(f16ToFloat(floatToF16(0x1p-25f)), 0.0f);       // tie to even: zero
  QCOMPARE(f16ToFloat(floatToF16(0x1.8p-25f)), 0x1p-24f);
  QCOMPARE(f16ToFloat(floatToF16(3 * 0x1p-25f)), 2 * 0x1p-24f);  // 1.5 ulp: tie to even (2)
  QCOMPARE(f16ToFloat(floatToF16(1.0f + 0x1p-11f)), 1.0f);
  QCOMPARE(f16ToFloat(floatToF16(1.0f + 3 * 0x1p-11f)), 1.0f + 0x1p-9f);
  QVERIFY(std::isnan(f16ToFloat(floatToF16(std::numeric_limits<float>::quiet_NaN()))));
}

void TestTensor::f16ConversionMatchesCompilerHalf() {
  // Every f16 pattern converts to float and back unchanged; a sweep of float bit patterns
  // converts exactly as the compiler's own _Float16 (IEEE round-to-nearest-even).
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = f16ToFloat(bits);
    if (std::isnan(f)) continue;
    QCOMPARE(floatToF16(f), bits);
  }
  for (std::uint64_t u = 0; u < 0x100000000ull; u += 0x1003) {
    const float f = bitsFloat(static_cast<std::uint32_t>(u));
    if (std::isnan(f)) continue;
    const auto expected = static_cast<_Float16>(f);
    std::uint16_t expectedBits;
    std::memcpy(&expectedBits, &expected, 2);
    if (floatToF16(f) != expectedBits) {
      QFAIL(qPrintable(QString("f16(%1) = %2, expected %3")
                           .arg(static_cast<double>(f))
                           .arg(floatToF16(f))
                           .arg(expectedBits)));
    }
  }
}

void TestTensor::allocatorTracksLiveAndPeakPerCategory() {
  Allocator a;
  {
    Tensor p = Tensor::empty({10, 10}, DType::F32, MemoryCategory::Parameter, a);
    QCOMPARE(a.liveBytes(MemoryCategory::Parameter), 400);
    {
      Tensor x = Tensor::zeros({3, 5}, DType::BF16, MemoryCategory::Activation, a);
      QCOMPARE(a.liveBytes(MemoryCategory::Activation), 30);
      QCOMPARE(a.liveTotal(), 430);
    }
    QCOMPARE(a.liveBytes(MemoryCategory::Activation), 0);
    QCOMPARE(a.peakBytes(MemoryCategory::Activation), 30);
    QCOMPARE(a.peakTotal(), 430);
    a.resetPeaks();
    QCOMPARE(a.peakTotal(), 400);
  }
  QCOMPARE(a.liveTotal(), 0);
  QCOMPARE(a.peakBytes(MemoryCategory::Parameter), 400);
}

void TestTensor::allocatorHookSeesEveryEvent() {
  Allocator a;
  std::vector<AllocationEvent> events;
  a.setHook([&](const AllocationEvent& e) { events.push_back(e); });
  {
    Tensor g = Tensor::empty({8}, DType::F32, MemoryCategory::Gradient, a);
    Tensor w = Tensor::empty({2}, DType::I64, MemoryCategory::Workspace, a);
  }
  QCOMPARE(events.size(), std::size_t{4});
  QCOMPARE(events[0].bytes, 32);
  QCOMPARE(events[0].category, MemoryCategory::Gradient);
  QCOMPARE(events[1].liveTotal, 48);
  QCOMPARE(events[2].bytes, -16);  // destroyed in reverse order
  QCOMPARE(events[3].liveTotal, 0);
}

void TestTensor::allocatorReusesReleasedBlocks() {
  Allocator a;
  void* first = nullptr;
  {
    Tensor t = Tensor::empty({1000}, DType::F32, MemoryCategory::Activation, a);
    first = t.raw();
  }
  QCOMPARE(a.liveTotal(), 0);
  QCOMPARE(a.cachedBytes(), 4032);  // rounded up to the 64-byte alignment
  Tensor again = Tensor::empty({1000}, DType::F32, MemoryCategory::Gradient, a);
  QCOMPARE(again.raw(), first);
  QCOMPARE(a.cachedBytes(), 0);
  QCOMPARE(a.liveBytes(MemoryCategory::Gradient), 4000);
  Tensor other = Tensor::empty({10}, DType::F32, MemoryCategory::Activation, a);
  QVERIFY(other.raw() != first);
  a.releaseCached();
  QCOMPARE(a.cachedBytes(), 0);
}

// Pages given back come back with their bytes: moved, not copied and not fresh (which would read
// as zeros).
namespace {
// A device whose memory is the host's, with a capacity, counting its calls.
class CountingDevice final : public DeviceMemory {
 public:
  explicit CountingDevice(std::size_t capacity) : capacity_(capacity) {}
  Device device() const override { return {Device::Kind::Cuda, 0}; }
  void* allocate(std::size_t bytes) override {
    if (held + bytes > capacity_) throw std::bad_alloc();
    ++allocations;
    held += bytes;
    return std::malloc(bytes);
  }
  void release(void* p, std::size_t bytes) noexcept override {
    ++releases;
    held -= bytes;
    std::free(p);
  }
  void zero(void* p, std::size_t bytes) override {
    ++zeros;
    std::memset(p, 0, bytes);
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    ++copies;
    std::memcpy(dst, src, bytes);
  }
  int allocations = 0, releases = 0, zeros = 0, copies = 0;
  std::size_t held = 0;

 private:
  std::size_t capacity_;
};
}  // namespace

// A step's tensors come from the device once; every later step reuses them, calling the device
// not at all. Zeroing and copies in go through the device's own calls.
void TestTensor::deviceBlocksAreCachedAcrossSteps() {
  auto device = std::make_shared<CountingDevice>(std::size_t{64} << 20);
  Allocator a(device);
  QCOMPARE(a.device(), (Device{Device::Kind::Cuda, 0}));
  auto step = [&] {
    Tensor w = Tensor::zeros({1000}, DType::F32, MemoryCategory::Parameter, a);
    Tensor x = Tensor::empty({3, 1 << 20}, DType::BF16, MemoryCategory::Activation, a);
    Tensor g = Tensor::empty({1000}, DType::F32, MemoryCategory::Gradient, a);
    QCOMPARE(a.liveBytes(MemoryCategory::Activation), std::int64_t{6} << 20);
    QCOMPARE(a.liveTotal(), 8000 + (std::int64_t{6} << 20));
  };
  step();
  QCOMPARE(device->allocations, 3);
  QCOMPARE(a.freshBlocks(), 3);
  QCOMPARE(device->zeros, 1);
  for (int i = 0; i < 5; ++i) step();
  QCOMPARE(device->allocations, 3);
  QCOMPARE(a.freshBlocks(), 3);
  QCOMPARE(device->zeros, 6);
  QCOMPARE(a.liveTotal(), 0);
  QCOMPARE(a.peakBytes(MemoryCategory::Activation), std::int64_t{6} << 20);
  // 4000 bytes rounded to 4032, 6 MiB a multiple of 2 MiB already.
  QCOMPARE(a.cachedBytes(), 2 * 4032 + (std::int64_t{6} << 20));

  Tensor host = Tensor::zeros({4}, DType::F32, MemoryCategory::Workspace);
  host.data<float>()[2] = 5.0f;
  Tensor onDevice = Tensor::empty({4}, DType::F32, MemoryCategory::Workspace, a);
  onDevice.copyFrom(host);
  QCOMPARE(device->copies, 1);
  Tensor back = Tensor::zeros({4}, DType::F32, MemoryCategory::Workspace);
  back.copyFrom(onDevice);  // the device copies out of its own memory
  QCOMPARE(device->copies, 2);
  QCOMPARE(back.data<float>()[2], 5.0f);
  a.releaseCached();
  QCOMPARE(device->releases, 3);
}

// A device full of cached blocks of other sizes gives them back and is asked again; one with no
// room even then refuses, its counters unchanged.
void TestTensor::fullDeviceGivesBackItsCacheFirst() {
  auto device = std::make_shared<CountingDevice>(std::size_t{8} << 20);
  Allocator a(device);
  { Tensor big = Tensor::empty({6 << 18}, DType::F32, MemoryCategory::Activation, a); }
  QCOMPARE(a.cachedBytes(), std::int64_t{6} << 20);
  Tensor other = Tensor::empty({4 << 18}, DType::F32, MemoryCategory::Activation, a);
  QCOMPARE(device->releases, 1);
  QCOMPARE(a.cachedBytes(), 0);
  QCOMPARE(device->held, std::size_t{4} << 20);
  QCOMPARE(a.freshBlocks(), 2);  // the refused first request took none
  QVERIFY_THROWS_EXCEPTION(std::bad_alloc,
                           Tensor::empty({6 << 18}, DType::F32, MemoryCategory::Activation, a));
  QCOMPARE(a.liveTotal(), std::int64_t{4} << 20);
  QCOMPARE(device->held, std::size_t{4} << 20);
  QCOMPARE(a.freshBlocks(), 2);
}

void TestTensor::pagePoolMovesPagesIntoOtherSizes() {
  constexpr std::size_t g = PagePool::kGranule;
  PagePool pool;
  auto* block = static_cast<unsigned char*>(pool.take(2 * g));
  std::memset(block, 0xA1, g);
  std::memset(block + g, 0xB2, g);
  pool.give(block, 2 * g);
  QCOMPARE(pool.heldBytes(), std::int64_t{2 * g});
  QCOMPARE(pool.reusedBytes(), 0);

  // One granule: the block's last one, moved.
  auto* one = static_cast<unsigned char*>(pool.take(g));
  QCOMPARE(one[0], 0xB2);
  QCOMPARE(one[g - 1], 0xB2);
  QCOMPARE(pool.heldBytes(), std::int64_t{g});
  QCOMPARE(pool.reusedBytes(), std::int64_t{g});

  // Three granules: the block's first granule at the end, then fresh memory.
  auto* three = static_cast<unsigned char*>(pool.take(3 * g));
  QCOMPARE(three[0], 0xA1);
  QCOMPARE(three[g - 1], 0xA1);
  QCOMPARE(three[g], 0);
  QCOMPARE(three[3 * g - 1], 0);
  QCOMPARE(pool.heldBytes(), 0);
  QCOMPARE(pool.reusedBytes(), std::int64_t{2 * g});
  three[2 * g] = 1;  // every granule is mapped and writable

  // A block of the size asked for is handed out whole, where it was.
  pool.give(one, g);
  QCOMPARE(pool.take(g), static_cast<void*>(one));
  pool.give(one, g);
  pool.give(three, 3 * g);
  pool.release();
  QCOMPARE(pool.heldBytes(), 0);
}

void TestTensor::pagePoolRefusesPartialGranules() {
  PagePool pool;
  QVERIFY_THROWS_EXCEPTION(std::bad_alloc, pool.take(0));
  QVERIFY_THROWS_EXCEPTION(std::bad_alloc, pool.take(PagePool::kGranule + 4096));
  QCOMPARE(pool.heldBytes(), 0);
}

namespace {
// The VmFlags of the mapping holding `p` (from /proc/self/smaps), e.g. "rd wr mr mw me ac hg".
QString mappingFlags(const void* p) {
  QFile smaps("/proc/self/smaps");
  if (!smaps.open(QIODevice::ReadOnly | QIODevice::Text)) return "(no smaps)";
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (const QByteArray& line : smaps.readAll().split('\n')) {
    const QList<QByteArray> words = line.simplified().split(' ');
    const QList<QByteArray> range = words.front().split('-');
    bool first = false, second = false;
    if (range.size() == 2) {
      const std::uintptr_t begin = range[0].toULongLong(&first, 16);
      const std::uintptr_t end = range[1].toULongLong(&second, 16);
      if (first && second) inside = begin <= address && address < end;
    }
    if (inside && words.front() == "VmFlags:") return QString::fromLatin1(line.mid(9).trimmed());
  }
  return "(not mapped)";
}
}  // namespace

// Fresh blocks are advised for huge pages ("hg") while the pool is left to its default.
void TestTensor::pagePoolAdvisesHugePagesUnlessTold() {
  constexpr std::size_t g = PagePool::kGranule;
  PagePool pool;
  void* huge = pool.take(g);
  pool.setHugePages(false);
  void* small = pool.take(2 * g);
  pool.setHugePages(true);
  void* again = pool.take(3 * g);
  const QStringList hugeFlags = mappingFlags(huge).split(' ');
  const QStringList smallFlags = mappingFlags(small).split(' ');
  const QStringList againFlags = mappingFlags(again).split(' ');
  QVERIFY2(hugeFlags.contains("hg"), qPrintable(hugeFlags.join(' ')));
  QVERIFY2(!smallFlags.contains("hg"), qPrintable(smallFlags.join(' ')));
  QVERIFY2(smallFlags.contains("wr"), qPrintable(smallFlags.join(' ')));
  QVERIFY2(againFlags.contains("hg"), qPrintable(againFlags.join(' ')));
  pool.give(huge, g);
  pool.give(small, 2 * g);
  pool.give(again, 3 * g);
}

// A layout's allocator gone, the next one's tensors of other sizes land on its pages.
void TestTensor::allocatorsSharingAPoolReuseEachOthersPages() {
  auto pool = std::make_shared<PagePool>();
  constexpr std::int64_t kFloats = 3 * (1 << 20);  // 12 MiB: six granules
  {
    Allocator old(Device::cpu(), pool);
    Tensor t = Tensor::empty({kFloats}, DType::F32, MemoryCategory::OptimizerState, old);
    Tensor small = Tensor::empty({10}, DType::F32, MemoryCategory::Activation, old);
  }
  QCOMPARE(pool->heldBytes(), std::int64_t{12} << 20);  // the small block went to the system
  Allocator next(Device::cpu(), pool);
  Tensor a = Tensor::zeros({kFloats / 3}, DType::F32, MemoryCategory::Parameter, next);
  QCOMPARE(pool->reusedBytes(), std::int64_t{4} << 20);
  QCOMPARE(next.liveBytes(MemoryCategory::Parameter), kFloats / 3 * 4);
  QCOMPARE(next.cachedBytes(), 0);
  QCOMPARE(a.data<float>()[kFloats / 3 - 1], 0.0f);
}

void TestTensor::viewsShareStorage() {
  Tensor t = Tensor::zeros({2, 3}, DType::F32, MemoryCategory::Workspace);
  Tensor v = t.view({6});
  v.data<float>()[4] = 7.0f;
  QCOMPARE(t.data<float>()[4], 7.0f);
  Tensor s = t.slice(3, 3);
  QCOMPARE(s.data<float>()[1], 7.0f);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, t.view({4}));
  QVERIFY_THROWS_EXCEPTION(std::out_of_range, t.slice(4, 3));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, t.data<std::uint16_t>());
}

// A host tensor is its own host view; a device's is copied out through the device, the copy
// holding its values in host memory of the same shape and type.
void TestTensor::onHostCopiesOnlyADevicesTensor() {
  const Tensor host = Tensor::zeros({2, 3}, DType::F32, MemoryCategory::Workspace);
  QCOMPARE(host.onHost().raw(), host.raw());
  auto device = std::make_shared<CountingDevice>(std::size_t{1} << 20);
  Allocator a(device);
  const Tensor there = Tensor::empty({2, 3}, DType::F32, MemoryCategory::Activation, a);
  host.data<float>()[4] = 7.0f;
  there.copyFrom(host);
  const int copies = device->copies;
  const Tensor back = there.onHost();
  QCOMPARE(device->copies, copies + 1);
  QVERIFY(back.raw() != there.raw());
  QCOMPARE(back.device().kind, Device::Kind::Cpu);
  QCOMPARE(back.shape(), there.shape());
  QCOMPARE(back.data<float>()[4], 7.0f);
}

void TestTensor::dtypeNamesParseAndRejectUnknown() {
  QCOMPARE(parseDType("bfloat16"), DType::BF16);
  QCOMPARE(parseDType("fp16"), DType::F16);
  try {
    parseDType("f8");
    QFAIL("expected a UserError");
  } catch (const UserError& e) {
    QVERIFY(QString(e.what()).contains("'f8'"));
    QVERIFY(QString(e.what()).contains("bf16"));
  }
}

QTEST_GUILESS_MAIN(TestTensor)
#include "test_tensor.moc"
