// The collective suite. Inputs are small integers (|v| <= 8) so that every type holds them and
// every sum over up to 8 ranks exactly; expectations are computed in double from the same
// generator, averages rounded the documented way (f32 division, then the element type).
#include "collective_suite.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/comm/adjoint.h"
#include "core/comm/collective_traits.h"
#include "core/tensor/dtype.h"

namespace parascope::commtest {
namespace {

constexpr DType kTypes[] = {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64};
constexpr ReduceOp kReductions[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};

double valueOf(int rank, std::size_t i, int salt) {
  return static_cast<double>(static_cast<long long>((rank * 7 + i * 13 + salt * 5) % 17) - 8);
}

void store(DType t, void* base, std::size_t i, double v) {
  switch (t) {
    case DType::F32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::BF16:
      static_cast<std::uint16_t*>(base)[i] = floatToBf16(static_cast<float>(v));
      break;
    case DType::F16:
      static_cast<std::uint16_t*>(base)[i] = floatToF16(static_cast<float>(v));
      break;
    case DType::I32: static_cast<std::int32_t*>(base)[i] = static_cast<std::int32_t>(v); break;
    case DType::I64: static_cast<std::int64_t*>(base)[i] = static_cast<std::int64_t>(v); break;
  }
}

double load(DType t, const void* base, std::size_t i) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(base)[i];
    case DType::BF16: return bf16ToFloat(static_cast<const std::uint16_t*>(base)[i]);
    case DType::F16: return f16ToFloat(static_cast<const std::uint16_t*>(base)[i]);
    case DType::I32: return static_cast<const std::int32_t*>(base)[i];
    case DType::I64: return static_cast<double>(static_cast<const std::int64_t*>(base)[i]);
  }
  return 0;
}

// The element type's value nearest to f32 x (what an f32-accumulated result rounds to).
double asType(DType t, float x) {
  switch (t) {
    case DType::BF16: return bf16ToFloat(floatToBf16(x));
    case DType::F16: return f16ToFloat(floatToF16(x));
    default: return x;
  }
}

double expectedReduce(DType t, ReduceOp op, int n, const std::function<double(int)>& v) {
  double acc = v(0);
  for (int p = 1; p < n; ++p) {
    const double x = v(p);
    if (op == ReduceOp::Max)
      acc = std::max(acc, x);
    else if (op == ReduceOp::Min)
      acc = std::min(acc, x);
    else
      acc += x;
  }
  if (op != ReduceOp::Avg) return acc;
  // Integer types average by truncating division, as the backends do.
  // NOLINTNEXTLINE(bugprone-integer-division)
  if (!isFloating(t)) return static_cast<double>(static_cast<long long>(acc) / n);
  return asType(t, static_cast<float>(acc) / static_cast<float>(n));
}

struct Buffer;
// The buffers of this thread's current case, so a check can read what an operation wrote
// wherever the buffers live.
thread_local std::vector<Buffer*> tLive;

// A case's buffer: in host memory, or in a device's (BufferMemory) with a host mirror that the
// suite fills and checks, copied up after filling and down after the operation.
struct Buffer {
  Buffer(std::size_t n, DType t, BufferMemory* m)
      : type(t), bytes(n * dtypeSize(t) + 64), host(bytes), memory(m) {
    if (memory) {
      device = static_cast<std::byte*>(memory->allocate(bytes));
      memory->upload(device, host.data(), bytes);
    }
    tLive.push_back(this);
  }
  ~Buffer() {
    tLive.erase(std::find(tLive.begin(), tLive.end(), this));
    if (memory) memory->release(device);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Where operations read and write.
  void* ptr(std::size_t element = 0) {
    return (memory ? device : host.data()) + element * dtypeSize(type);
  }
  void upload() {
    if (memory) memory->upload(device, host.data(), bytes);
  }
  void download() {
    if (memory) memory->download(host.data(), device, bytes);
  }
  // The host mirror of `p`, an address ptr() gave; null when p is not in this buffer.
  const std::byte* mirror(const void* p) const {
    const std::byte* base = memory ? device : host.data();
    const auto* at = static_cast<const std::byte*>(p);
    return at >= base && at < base + bytes ? host.data() + (at - base) : nullptr;
  }

  DType type;
  std::size_t bytes;
  std::vector<std::byte> host;
  BufferMemory* memory;
  std::byte* device = nullptr;
};

// After an operation: every buffer of the case copied down to its mirror.
void synced() {
  for (Buffer* b : tLive) b->download();
}

const void* mirrorOf(const void* p) {
  for (const Buffer* b : tLive)
    if (const std::byte* m = b->mirror(p)) return m;
  throw std::runtime_error("collective suite: an address outside the case's buffers");
}

struct Case {
  Communicator& comm;
  CommOp op;
  DType type;
  ReduceOp reduce;
  std::size_t count;
  bool inPlace;
  int root;
  BufferMemory* memory;

  std::string name() const {
    return std::string(commOpName(op)) + " " + std::string(dtypeName(type)) + " " +
           std::string(reduceOpName(reduce)) + " count " + std::to_string(count) +
           (inPlace ? " in place" : " out of place") + " root " + std::to_string(root) +
           " on group '" + comm.name() + "' rank " + std::to_string(comm.rank()) + " of " +
           std::to_string(comm.size());
  }
  void expect(const void* base, std::size_t i, double want) const {
    const double got = load(type, mirrorOf(base), i);
    if (got != want)
      throw std::runtime_error(name() + ": element " + std::to_string(i) + " is " +
                               std::to_string(got) + ", expected " + std::to_string(want));
  }
};

void fill(Buffer& b, std::size_t n, int rank, int salt, std::size_t offset = 0) {
  for (std::size_t i = 0; i < n; ++i)
    store(b.type, b.host.data(), offset + i, valueOf(rank, i, salt));
  b.upload();
}

void checkRooted(const Case& c) {
  const int n = c.comm.size(), r = c.comm.rank();
  const std::size_t k = c.count, N = static_cast<std::size_t>(n);
  switch (c.op) {
    case CommOp::Broadcast: {
      Buffer b(k, c.type, c.memory);
      fill(b, k, r, r == c.root ? 1 : 99);
      c.comm.broadcast(b.ptr(), k, c.type, c.root);
      synced();
      for (std::size_t i = 0; i < k; ++i) c.expect(b.ptr(), i, valueOf(c.root, i, 1));
      break;
    }
    case CommOp::Reduce: {
      Buffer in(k, c.type, c.memory), out(k, c.type, c.memory);
      fill(in, k, r, 2);
      void* dst = c.inPlace && r == c.root ? in.ptr() : out.ptr();
      c.comm.reduce(in.ptr(), dst, k, c.type, c.reduce, c.root);
      synced();
      if (r == c.root)
        for (std::size_t i = 0; i < k; ++i)
          c.expect(dst, i,
                   expectedReduce(c.type, c.reduce, n, [&](int p) { return valueOf(p, i, 2); }));
      break;
    }
    case CommOp::Gather: {
      Buffer in(k, c.type, c.memory), out(k * N, c.type, c.memory);
      const bool place = c.inPlace && r == c.root;
      fill(place ? out : in, k, r, 3, place ? k * static_cast<std::size_t>(r) : 0);
      const void* src = place ? out.ptr(k * static_cast<std::size_t>(r)) : in.ptr();
      c.comm.gather(src, out.ptr(), k, c.type, c.root);
      synced();
      if (r == c.root)
        for (std::size_t p = 0; p < N; ++p)
          for (std::size_t i = 0; i < k; ++i)
            c.expect(out.ptr(), p * k + i, valueOf(static_cast<int>(p), i, 3));
      break;
    }
    case CommOp::Scatter: {
      Buffer in(k * N, c.type, c.memory), out(k, c.type, c.memory);
      if (r == c.root) fill(in, k * N, r, 4);
      const bool place = c.inPlace && r == c.root;
      void* dst = place ? in.ptr(k * static_cast<std::size_t>(r)) : out.ptr();
      c.comm.scatter(in.ptr(), dst, k, c.type, c.root);
      synced();
      for (std::size_t i = 0; i < k; ++i)
        c.expect(dst, i, valueOf(c.root, static_cast<std::size_t>(r) * k + i, 4));
      break;
    }
    default: throw std::runtime_error(c.name() + ": the suite has no check for this operation");
  }
}

void checkSymmetric(const Case& c) {
  const int n = c.comm.size(), r = c.comm.rank();
  const std::size_t k = c.count, N = static_cast<std::size_t>(n);
  const auto ur = static_cast<std::size_t>(r);
  switch (c.op) {
    case CommOp::AllReduce: {
      Buffer in(k, c.type, c.memory), out(k, c.type, c.memory);
      fill(in, k, r, 5);
      void* dst = c.inPlace ? in.ptr() : out.ptr();
      c.comm.allReduce(in.ptr(), dst, k, c.type, c.reduce);
      synced();
      for (std::size_t i = 0; i < k; ++i)
        c.expect(dst, i,
                 expectedReduce(c.type, c.reduce, n, [&](int p) { return valueOf(p, i, 5); }));
      break;
    }
    case CommOp::AllGather: {
      Buffer in(k, c.type, c.memory), out(k * N, c.type, c.memory);
      fill(c.inPlace ? out : in, k, r, 6, c.inPlace ? k * ur : 0);
      c.comm.allGather(c.inPlace ? out.ptr(k * ur) : in.ptr(), out.ptr(), k, c.type);
      synced();
      for (std::size_t p = 0; p < N; ++p)
        for (std::size_t i = 0; i < k; ++i)
          c.expect(out.ptr(), p * k + i, valueOf(static_cast<int>(p), i, 6));
      break;
    }
    case CommOp::ReduceScatter: {
      Buffer in(k * N, c.type, c.memory), out(k, c.type, c.memory);
      fill(in, k * N, r, 7);
      void* dst = c.inPlace ? in.ptr(k * ur) : out.ptr();
      c.comm.reduceScatter(in.ptr(), dst, k, c.type, c.reduce);
      synced();
      for (std::size_t i = 0; i < k; ++i)
        c.expect(dst, i, expectedReduce(c.type, c.reduce, n, [&](int p) {
                   return valueOf(p, ur * k + i, 7);
                 }));
      break;
    }
    case CommOp::AllToAll: {
      Buffer in(k * N, c.type, c.memory), out(k * N, c.type, c.memory);
      fill(in, k * N, r, 8);
      void* dst = c.inPlace ? in.ptr() : out.ptr();
      c.comm.allToAll(in.ptr(), dst, k, c.type);
      synced();
      for (std::size_t p = 0; p < N; ++p)
        for (std::size_t i = 0; i < k; ++i)
          c.expect(dst, p * k + i, valueOf(static_cast<int>(p), ur * k + i, 8));
      break;
    }
    case CommOp::Send:
    case CommOp::Recv: {
      // A ring: both directions posted before either is waited, so any order of arrival works.
      Buffer in(k, c.type, c.memory), out(k, c.type, c.memory);
      fill(in, k, r, 9);
      const int to = (r + 1) % n, from = (r + n - 1) % n;
      CommHandle rh = c.comm.recvAsync(out.ptr(), k, c.type, from);
      CommHandle sh = c.comm.sendAsync(in.ptr(), k, c.type, to);
      rh.wait();
      sh.wait();
      synced();
      for (std::size_t i = 0; i < k; ++i) c.expect(out.ptr(), i, valueOf(from, i, 9));
      break;
    }
    default: throw std::runtime_error(c.name() + ": the suite has no check for this operation");
  }
}

void runOne(Communicator& comm, CommOp op, DType t, ReduceOp red, std::size_t count,
            BufferMemory* memory = nullptr) {
  const bool rooted = commTraits(op).root == RootRole::Root;
  for (bool inPlace : {false, true}) {
    if (commTraits(op).inPlace == InPlace::OneBuffer && inPlace) continue;
    for (int root : {0, comm.size() - 1}) {
      Case c{comm, op, t, red, count, inPlace, rooted ? root : -1, memory};
      if (rooted)
        checkRooted(c);
      else
        checkSymmetric(c);
      if (!rooted || comm.size() == 1) break;
    }
  }
}

}  // namespace

// Sanitizers slow memory-bound loops tenfold: under them the largest case is 256 KiB.
SuiteSizes defaultSizes() {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  return {{0, 1, 2, 7, 61, 1031, 12289}, {65537}};
#else
  return {{0, 1, 2, 7, 61, 1031, 12289}, {65537, (1u << 20) + 3}};
#endif
}
SuiteSizes smallSizes() {
  return {{0, 1, 13, 257}, {8209}};
}

// Every row of the traits table; reductions other than sum only where the row reduces.
void runCollectives(Communicator& comm, const SuiteSizes& sizes, BufferMemory* memory) {
  for (const CollectiveTraits& op : kCollectiveTraits)
    for (DType t : kTypes)
      for (ReduceOp red : kReductions) {
        if (!op.reduces && red != ReduceOp::Sum) continue;
        for (std::size_t count : sizes.counts) runOne(comm, op.op, t, red, count, memory);
      }
  const std::pair<DType, ReduceOp> few[] = {
      {DType::F32, ReduceOp::Sum}, {DType::BF16, ReduceOp::Avg}, {DType::I64, ReduceOp::Max}};
  for (const CollectiveTraits& op : kCollectiveTraits)
    for (auto [t, red] : few)
      for (std::size_t count : sizes.large) runOne(comm, op.op, t, red, count, memory);
}

void runRankOrder(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const auto N = static_cast<std::size_t>(n), ur = static_cast<std::size_t>(r);
  auto value = [](int rank, std::size_t i) {
    const auto magnitude = static_cast<double>((static_cast<std::size_t>(rank) + i) % 4);
    return std::sin(static_cast<double>(i) * 0.7 + rank) * std::pow(10.0, magnitude);
  };
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (ReduceOp red : {ReduceOp::Sum, ReduceOp::Avg}) {
      // Below and above the all-reduce's 32 KiB switch from direct to chunked.
      for (std::size_t k : {std::size_t{61}, std::size_t{20011}}) {
        // Element i of the whole input, folded in rank order in f32 and rounded once.
        auto want = [&](std::size_t i) {
          float acc = 0;
          for (int p = 0; p < n; ++p) {
            const auto x = static_cast<float>(asType(t, static_cast<float>(value(p, i))));
            acc = p == 0 ? x : acc + x;
          }
          if (red == ReduceOp::Avg) acc /= static_cast<float>(n);
          return asType(t, acc);
        };
        auto check = [&](const char* what, const std::vector<std::byte>& out, std::size_t first) {
          for (std::size_t i = 0; i < k; ++i) {
            const double got = load(t, out.data(), i), expected = want(first + i);
            if (got == expected) continue;
            throw std::runtime_error(std::string(what) + " " + std::string(dtypeName(t)) + " " +
                                     std::string(reduceOpName(red)) + " count " +
                                     std::to_string(k) + " on rank " + std::to_string(r) + " of " +
                                     std::to_string(n) + ": element " + std::to_string(first + i) +
                                     " is " + std::to_string(got) + ", in rank order " +
                                     std::to_string(expected));
          }
        };
        const std::size_t es = dtypeSize(t);
        std::vector<std::byte> in(k * N * es), out(k * es);
        for (std::size_t i = 0; i < k * N; ++i) store(t, in.data(), i, value(r, i));
        comm.allReduce(in.data(), out.data(), k, t, red);
        check("allReduce", out, 0);
        comm.reduce(in.data(), out.data(), k, t, red, n - 1);
        if (r == n - 1) check("reduce", out, 0);
        comm.reduceScatter(in.data(), out.data(), k, t, red);
        check("reduceScatter", out, ur * k);
      }
    }
  }
}

void runSplitGroups(Communicator& comm, const SuiteSizes& sizes) {
  const int color = comm.rank() % 2;
  Communicator sub = comm.split(color, -comm.rank());
  const int members = (comm.size() + 1 - color) / 2;
  if (sub.size() != members || sub.name() != comm.name() + "/" + std::to_string(color))
    throw std::runtime_error("split: got group '" + sub.name() + "' of size " +
                             std::to_string(sub.size()) + ", expected " + std::to_string(members));
  // Keys are descending ranks, so the highest rank of the colour comes first.
  const int lastOfColor = (comm.size() - 1) % 2 == color ? comm.size() - 1 : comm.size() - 2;
  if (sub.rank() != (lastOfColor - comm.rank()) / 2)
    throw std::runtime_error("split: rank " + std::to_string(comm.rank()) + " got group rank " +
                             std::to_string(sub.rank()) + ", expected " +
                             std::to_string((lastOfColor - comm.rank()) / 2));
  runCollectives(sub, sizes);
  // A group of the group, and the parent still works after its children were used.
  Communicator single = sub.split(sub.rank(), 0);
  if (single.size() != 1) throw std::runtime_error("split to singletons: size != 1");
  runCollectives(single, smallSizes());
  runOne(comm, CommOp::AllReduce, DType::F32, ReduceOp::Sum, 1031);
}

void runManyInFlight(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  constexpr int kOps = 48;
  constexpr std::size_t kCount = 4099;
  std::vector<std::vector<float>> bufs(kOps), gathered(kOps);
  std::vector<CommHandle> handles;
  for (int k = 0; k < kOps; ++k) {
    bufs[k].assign(kCount, 0.0f);
    for (std::size_t i = 0; i < kCount; ++i) bufs[k][i] = static_cast<float>(valueOf(r, i, k));
    if (k % 3 == 2) {
      gathered[k].assign(kCount * static_cast<std::size_t>(n), 0.0f);
      handles.push_back(
          comm.allGatherAsync(bufs[k].data(), gathered[k].data(), kCount, DType::F32));
    } else {
      handles.push_back(
          comm.allReduceAsync(bufs[k].data(), bufs[k].data(), kCount, DType::F32, ReduceOp::Sum));
    }
  }
  for (int k = kOps - 1; k >= 0; --k) handles[static_cast<std::size_t>(k)].wait();
  for (int k = 0; k < kOps; ++k)
    for (std::size_t i = 0; i < kCount; ++i) {
      if (k % 3 == 2) {
        for (int p = 0; p < n; ++p)
          if (gathered[k][static_cast<std::size_t>(p) * kCount + i] != valueOf(p, i, k))
            throw std::runtime_error("in flight: allGather " + std::to_string(k) + " wrong");
        continue;
      }
      double want = 0;
      for (int p = 0; p < n; ++p) want += valueOf(p, i, k);
      if (bufs[k][i] != want)
        throw std::runtime_error("in flight: allReduce " + std::to_string(k) + " element " +
                                 std::to_string(i) + " is " + std::to_string(bufs[k][i]) +
                                 ", expected " + std::to_string(want));
    }
}

namespace {

// sum over ranks of <a, b> over `count` i64 elements at each rank.
std::int64_t globalDot(Communicator& comm, const std::vector<std::int64_t>& a,
                       const std::vector<std::int64_t>& b) {
  std::int64_t local = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) local += a[i] * b[i];
  std::int64_t total = 0;
  comm.allReduce(&local, &total, 1, DType::I64, ReduceOp::Sum);
  return total;
}

}  // namespace

void runAdjointness(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t k = 37;
  for (const CollectiveTraits& op : kCollectiveTraits) {
    const CommOp which = op.op;
    if (isPointToPoint(which)) continue;  // below, as a pair
    {
      // Lengths of this rank's input x and output y for the forward operation (root n-1).
      const bool root = r == n - 1;
      const std::size_t inLen = spanOf(op.sendBuffer, k, n, root);
      const std::size_t outLen = spanOf(op.recvBuffer, k, n, root);
      std::vector<std::int64_t> x(std::max<std::size_t>(inLen, 1)),
          y(std::max<std::size_t>(outLen, 1)), opx(std::max<std::size_t>(outLen, 1)),
          aty(std::max<std::size_t>(inLen, 1));
      for (std::size_t i = 0; i < inLen; ++i) x[i] = static_cast<std::int64_t>(valueOf(r, i, 11));
      for (std::size_t i = 0; i < outLen; ++i) y[i] = static_cast<std::int64_t>(valueOf(r, i, 12));
      CommArgs f{which, x.data(), opx.data(), k, DType::I64, ReduceOp::Sum, n - 1};
      if (op.inPlace == InPlace::OneBuffer) {  // broadcast: its one buffer is input and output
        opx = x;
        f.send = f.recv = opx.data();
      }
      comm.run(f);
      adjointAsync(comm, f, y.data(), aty.data()).wait();
      opx.resize(outLen);
      aty.resize(inLen);
      const std::int64_t lhs = globalDot(comm, opx, y), rhs = globalDot(comm, x, aty);
      if (lhs != rhs)
        throw std::runtime_error("adjoint of " + std::string(commOpName(which)) + ": <op(x),y> = " +
                                 std::to_string(lhs) + " but <x,op^T(y)> = " + std::to_string(rhs));
    }
  }
  // send <-> recv: rank r sends x to r+1; the adjoint sends the gradient back from r+1 to r.
  if (n > 1) {
    std::vector<std::int64_t> x(k), y(k), got(k), back(k);
    for (std::size_t i = 0; i < k; ++i) {
      x[i] = static_cast<std::int64_t>(valueOf(r, i, 13));
      y[i] = static_cast<std::int64_t>(valueOf(r, i, 14));
    }
    const int to = (r + 1) % n, from = (r + n - 1) % n;
    CommArgs fs{CommOp::Send, x.data(), nullptr, k, DType::I64, ReduceOp::Sum, to};
    CommArgs fr{CommOp::Recv, nullptr, got.data(), k, DType::I64, ReduceOp::Sum, from};
    CommHandle a = comm.startAsync(fr), b = comm.startAsync(fs);
    a.wait();
    b.wait();
    // Forward output on this rank is `got`; its adjoint input is y; x's gradient lands in back.
    CommHandle c = adjointAsync(comm, fs, nullptr, back.data());
    CommHandle d = adjointAsync(comm, fr, y.data(), nullptr);
    c.wait();
    d.wait();
    const std::int64_t lhs = globalDot(comm, got, y), rhs = globalDot(comm, x, back);
    if (lhs != rhs)
      throw std::runtime_error("adjoint of send/recv: " + std::to_string(lhs) +
                               " != " + std::to_string(rhs));
  }
}

void runByteConsistency(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const auto N = static_cast<std::size_t>(n);
  for (const CollectiveTraits& t : kCollectiveTraits) {
    const CommOp op = t.op;
    if (isPointToPoint(op)) continue;  // each side alone would wait for the other
    for (std::size_t count : {std::size_t{5}, std::size_t{20000}}) {
      std::vector<float> in(count * N, 1.0f), out(count * N, 0.0f);
      CommArgs a{op, in.data(), out.data(), count, DType::F32, ReduceOp::Sum, n / 2};
      if (t.inPlace == InPlace::OneBuffer) a.send = a.recv = in.data();
      const CommRecord rec = comm.run(a);
      // Row r of the sent matrix, gathered: sent[a][b] must equal received[b][a].
      std::vector<std::int64_t> sent(N), recv(N), allSent(N * N), allRecv(N * N);
      for (std::size_t p = 0; p < N; ++p) {
        sent[p] = static_cast<std::int64_t>(rec.sentTo[p]);
        recv[p] = static_cast<std::int64_t>(rec.receivedFrom[p]);
      }
      comm.allGather(sent.data(), allSent.data(), N, DType::I64);
      comm.allGather(recv.data(), allRecv.data(), N, DType::I64);
      for (std::size_t x = 0; x < N; ++x)
        for (std::size_t y = 0; y < N; ++y)
          if (allSent[x * N + y] != allRecv[y * N + x] || (x == y && allSent[x * N + y] != 0))
            throw std::runtime_error(
                std::string(commOpName(op)) + " count " + std::to_string(count) + ": rank " +
                std::to_string(x) + " sent " + std::to_string(allSent[x * N + y]) + " to " +
                std::to_string(y) + " which received " + std::to_string(allRecv[y * N + x]));
      if (rec.rank != r || rec.size != n || rec.group != comm.name())
        throw std::runtime_error("record names the wrong rank or group");
    }
  }
}

}  // namespace parascope::commtest
