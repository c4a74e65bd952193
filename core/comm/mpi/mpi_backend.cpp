// Open MPI backend: operations map onto MPI's non-blocking calls; in-place forms MPI cannot
// express (reduceScatter, allToAll) go through a temporary. Floating sums and averages do not
// use MPI's reductions, which combine ranks in whatever order the library's algorithm picks:
// MPI only moves the data (a gather, or an all-to-all of chunks and an all-gather) and the
// ranks' values are combined here in rank order, as the in-process backend does, so both give
// bitwise the same results. With checkMismatch every collective
// first exchanges a signature with each peer, which both catches mismatched arguments and lets
// a timeout name the ranks that never arrived. A rank that fails sends a notice to every peer
// on a communicator of its own; waits poll for it, so peers fail with the reason at once
// instead of at the timeout.
#include "core/comm/mpi/mpi_backend.h"

#include <mpi.h>
#include <sched.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "core/comm/collective_traits.h"
#include "core/comm/comm_bytes.h"
#include "core/comm/reduce_kernels.h"
#include "core/common/error.h"

namespace parascope {
namespace {

#define MPICHECK(call)                                                                   \
  do {                                                                                   \
    const int rc_ = (call);                                                              \
    if (rc_ != MPI_SUCCESS) throw CommError(mpiMessage(rc_, #call, __FILE__, __LINE__)); \
  } while (0)

std::string mpiMessage(int rc, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + " on rank " +
         std::to_string(rank) + ": " + std::string(text, static_cast<std::size_t>(len));
}

MPI_Datatype gBf16 = MPI_DATATYPE_NULL, gF16 = MPI_DATATYPE_NULL;
MPI_Op gHalfOps[2] = {MPI_OP_NULL, MPI_OP_NULL};  // max, min

// inout = inout op in for bf16 and f16 (max and min: exact in any order).
template <ReduceOp Op>
void halfCombine(void* in, void* inout, int* len, MPI_Datatype* type) {
  const DType t = *type == gBf16 ? DType::BF16 : DType::F16;
  const void* srcs[] = {inout, in};
  reduceBuffers(inout, srcs, 2, static_cast<std::size_t>(*len), t, Op, 1);
}

void finalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// Failure notices: a duplicate of MPI_COMM_WORLD so that they never match the caller's
// messages. A failing rank sends kFailTag (the reason) to every peer; a peer that has seen it
// answers kDoneTag once it has reported the failure itself.
MPI_Comm gFailComm = MPI_COMM_NULL;
constexpr int kFailTag = 1, kDoneTag = 2;
int gFailedRank = -1;  // world rank of the first peer that reported a failure
std::string gFailReason;

// Receives one failure notice if any has arrived: its sender's world rank, or -1.
int receiveFailureNotice(std::string* reason) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kFailTag, gFailComm, &flag, &status);
  if (!flag) return -1;
  int len = 0;
  MPI_Get_count(&status, MPI_CHAR, &len);
  reason->assign(static_cast<std::size_t>(len), '\0');
  MPI_Recv(reason->data(), len, MPI_CHAR, status.MPI_SOURCE, kFailTag, gFailComm,
           MPI_STATUS_IGNORE);
  return status.MPI_SOURCE;
}

// True once any peer has reported a failure (checked without blocking).
bool peerFailed() {
  if (gFailedRank < 0 && gFailComm != MPI_COMM_NULL)
    gFailedRank = receiveFailureNotice(&gFailReason);
  return gFailedRank >= 0;
}

std::string peerFailure() {
  return "world rank " + std::to_string(gFailedRank) + " failed: " + gFailReason +
         "; ranks that did not arrive: " + std::to_string(gFailedRank);
}

void initMpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &gFailComm);
  MPI_Type_contiguous(1, MPI_UINT16_T, &gBf16);
  MPI_Type_commit(&gBf16);
  MPI_Type_contiguous(1, MPI_UINT16_T, &gF16);
  MPI_Type_commit(&gF16);
  MPI_Op_create(&halfCombine<ReduceOp::Max>, 1, &gHalfOps[0]);
  MPI_Op_create(&halfCombine<ReduceOp::Min>, 1, &gHalfOps[1]);
  std::atexit(finalizeAtExit);
}

MPI_Datatype mpiType(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::BF16: return gBf16;
    case DType::F16: return gF16;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

// The MPI reduction for what MPI reduces itself: integer sums (avg: sum, then a division), and
// max and min of every type.
MPI_Op mpiOp(DType t, ReduceOp op) {
  if (op == ReduceOp::Sum || op == ReduceOp::Avg) return MPI_SUM;
  const bool max = op == ReduceOp::Max;
  if (t == DType::BF16 || t == DType::F16) return gHalfOps[max ? 0 : 1];
  return max ? MPI_MAX : MPI_MIN;
}

// Sums and averages of floating types, whose result depends on the order of the ranks.
bool combinedInRankOrder(const CommArgs& a) {
  return commTraits(a.op).reduces && isFloating(a.dtype) &&
         (a.reduce == ReduceOp::Sum || a.reduce == ReduceOp::Avg);
}

// The group's blocks of `blockBytes` each that a gather or an all-to-all left in `staged`,
// rank j's j-th.
std::vector<const void*> blocksOf(const std::vector<std::byte>& staged, int ranks,
                                  std::size_t blockBytes) {
  std::vector<const void*> blocks(static_cast<std::size_t>(ranks));
  for (std::size_t j = 0; j < blocks.size(); ++j) blocks[j] = staged.data() + j * blockBytes;
  return blocks;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// What every rank of a collective must agree on.
struct Signature {
  std::int64_t op, count, dtype, reduce, root;
  bool operator==(const Signature&) const = default;
  std::string describe() const {
    std::string s = std::string(commOpName(static_cast<CommOp>(op))) + " count " +
                    std::to_string(count) + " " + std::string(dtypeName(static_cast<DType>(dtype)));
    if (reduce >= 0) s.append(" ").append(reduceOpName(static_cast<ReduceOp>(reduce)));
    if (root >= 0) s += " root " + std::to_string(root);
    return s;
  }
};

class MpiRequest final : public CommRequest {
 public:
  MpiRequest(std::string prefix, std::chrono::milliseconds timeout, std::string missing)
      : prefix_(std::move(prefix)), timeout_(timeout), missing_(std::move(missing)) {}
  bool test() override;
  void wait() override;

  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Status status{};
  std::vector<std::byte> temp;  // staging for in-place forms MPI cannot express, and reductions
  std::vector<int> layout;      // element counts and offsets of MPI's "v" calls
  // Runs once when `request` completes (copy out, reduce, checks); it may post the next stage
  // into `request` and set the next `finish`.
  std::function<void()> finish;

 private:
  bool poll();
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::string missing_;  // who to blame on a timeout
  bool done_ = false;
  std::exception_ptr error_;
};

bool MpiRequest::poll() {
  while (!done_) {
    int flag = 0;
    const int rc = MPI_Test(&request, &flag, &status);
    if (rc != MPI_SUCCESS) {
      error_ = std::make_exception_ptr(
          CommError(prefix_ + " failed: " + mpiMessage(rc, "MPI_Test", __FILE__, __LINE__)));
      done_ = true;
      break;
    }
    if (!flag) return false;
    const std::function<void()> stage = std::exchange(finish, nullptr);
    try {
      if (stage) stage();
    } catch (...) {
      error_ = std::current_exception();
      request = MPI_REQUEST_NULL;
    }
    // MPI_Test left the request null; a stage that posted another one is waited for next.
    done_ = request == MPI_REQUEST_NULL;
  }
  return true;
}

bool MpiRequest::test() {
  poll();
  if (error_) std::rethrow_exception(error_);
  return done_;
}

void MpiRequest::wait() {
  const auto start = std::chrono::steady_clock::now();
  while (!poll()) {
    if (peerFailed()) {
      // The request stays pending: the process is about to end (see failMpiWorld).
      error_ = std::make_exception_ptr(CommError(prefix_ + " failed: " + peerFailure()));
      done_ = true;
      break;
    }
    if (timeout_.count() > 0 && std::chrono::steady_clock::now() - start > timeout_) {
      // MPI cannot cancel a collective: the request stays pending and the group is unusable.
      error_ = std::make_exception_ptr(CommError(prefix_ + " failed: timed out after " +
                                                 std::to_string(timeout_.count()) +
                                                 " ms; ranks that did not arrive: " + missing_));
      done_ = true;
      break;
    }
    // MPI progresses only inside MPI calls: poll hard (Open MPI yields the core inside
    // MPI_Test when ranks outnumber cores); nap only once the wait is long enough to be a
    // straggler's.
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  if (error_) std::rethrow_exception(error_);
}

class MpiComm final : public CommBackend {
 public:
  MpiComm(MPI_Comm comm, std::string name, CommOptions options)
      : CommBackend(std::move(name), std::move(options)), comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_dup(comm_, &control_);
  }
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Comm_free(&control_);
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view kind() const override { return "mpi"; }
  std::shared_ptr<CommRequest> start(const CommArgs& a, bool blocking) override;
  std::shared_ptr<CommBackend> split(int color, int key) override;

 private:
  std::string prefix(CommOp op) const {
    return operationPrefix(commOpName(op), name(), rank_, size_);
  }
  void checkSignature(const CommArgs& a);
  void post(const CommArgs& a, MpiRequest& req);
  void postInRankOrder(const CommArgs& a, MpiRequest& req);

  MPI_Comm comm_;
  MPI_Comm control_;  // signature exchange, never mixed with the caller's messages
  int rank_ = 0, size_ = 1;
};

void MpiComm::checkSignature(const CommArgs& a) {
  const Signature mine{static_cast<std::int64_t>(a.op), static_cast<std::int64_t>(a.count),
                       static_cast<std::int64_t>(a.dtype),
                       commTraits(a.op).reduces ? static_cast<std::int64_t>(a.reduce) : -1, a.root};
  const auto n = static_cast<std::size_t>(size_);
  // Heap buffers: after a timeout MPI may still write into or read from them, so they are
  // then deliberately left allocated.
  auto buffers = std::make_unique<std::vector<Signature>>(n + 1, mine);
  std::vector<Signature>& theirs = *buffers;
  std::vector<MPI_Request> reqs(2 * n, MPI_REQUEST_NULL);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    MPICHECK(MPI_Irecv(&theirs[p], sizeof(Signature), MPI_BYTE, p, 1, control_, &reqs[p]));
    MPICHECK(MPI_Isend(&theirs[n], sizeof(Signature), MPI_BYTE, p, 1, control_, &reqs[n + p]));
  }
  const auto deadline = std::chrono::steady_clock::now() + options().timeout;
  for (bool all = false; !all;) {
    all = true;
    for (MPI_Request& r : reqs) {
      int flag = 1;
      if (r != MPI_REQUEST_NULL) MPICHECK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
      all = all && flag;
    }
    if (!all && peerFailed()) {
      (void)buffers.release();  // MPI may still write into them
      throw CommError(prefix(a.op) + " failed: " + peerFailure());
    }
    if (all || options().timeout.count() <= 0 || std::chrono::steady_clock::now() < deadline)
      continue;
    std::vector<int> missing;
    for (int p = 0; p < size_; ++p) {
      if (reqs[p] == MPI_REQUEST_NULL) continue;
      missing.push_back(p);
      MPI_Cancel(&reqs[p]);
      MPI_Request_free(&reqs[p]);
    }
    for (std::size_t i = n; i < 2 * n; ++i)
      if (reqs[i] != MPI_REQUEST_NULL) MPI_Request_free(&reqs[i]);
    (void)buffers.release();
    throw CommError(prefix(a.op) + " failed: timed out after " +
                    std::to_string(options().timeout.count()) +
                    " ms; ranks that did not arrive: " + rankList(missing));
  }
  theirs.resize(n);
  bool same = true;
  for (const Signature& s : theirs) same = same && s == mine;
  if (same) return;
  std::string detail;
  for (int p = 0; p < size_; ++p)
    detail += (p ? "; rank " : "rank ") + std::to_string(p) + ": " + theirs[p].describe();
  throw CommError(prefix(a.op) + " failed: ranks issued different operations or arguments (" +
                  detail + ")");
}

std::shared_ptr<CommRequest> MpiComm::start(const CommArgs& a, bool) {
  if (peerFailed()) throw CommError(prefix(a.op) + " failed: " + peerFailure());
  const bool p2p = isPointToPoint(a.op);
  if (a.count > static_cast<std::size_t>(INT_MAX))
    throw UserError(prefix(a.op) + ": count " + std::to_string(a.count) +
                    " exceeds MPI's limit of 2^31-1 elements");
  const std::string missing = p2p ? std::to_string(a.root)
                              : options().checkMismatch
                                  ? "unknown (the signature exchange completed)"
                                  : "unknown (set CommOptions::checkMismatch to name them)";
  auto req = std::make_shared<MpiRequest>(prefix(a.op), options().timeout, missing);
  req->record = makeRecord(kind(), name(), rank_, size_, a, algorithmFor(a, size_));
  req->record.algorithm = "mpi/" + req->record.algorithm;
  if (options().checkMismatch && !p2p) checkSignature(a);
  post(a, *req);
  return req;
}

void MpiComm::post(const CommArgs& a, MpiRequest& req) {
  const int n = static_cast<int>(a.count);
  const MPI_Datatype t = mpiType(a.dtype);
  const std::size_t bytes = a.count * dtypeSize(a.dtype);
  const bool isRoot = rank_ == a.root;
  void* inPlace = MPI_IN_PLACE;
  const int groupSize = size_;
  auto average = [a, groupSize](void* buf) {
    if (a.reduce == ReduceOp::Avg) divideBuffer(buf, a.count, a.dtype, groupSize);
  };
  MPI_Request* r = &req.request;
  if (combinedInRankOrder(a)) {
    postInRankOrder(a, req);
    return;
  }
  switch (a.op) {
    case CommOp::Broadcast: MPICHECK(MPI_Ibcast(a.recv, n, t, a.root, comm_, r)); break;
    case CommOp::Reduce:
      MPICHECK(MPI_Ireduce(isRoot && a.send == a.recv ? inPlace : a.send, a.recv, n, t,
                           mpiOp(a.dtype, a.reduce), a.root, comm_, r));
      if (isRoot) req.finish = [=] { average(a.recv); };
      break;
    case CommOp::AllReduce:
      MPICHECK(MPI_Iallreduce(a.send == a.recv ? inPlace : a.send, a.recv, n, t,
                              mpiOp(a.dtype, a.reduce), comm_, r));
      req.finish = [=] { average(a.recv); };
      break;
    case CommOp::Gather: {
      const bool place = isRoot && a.send == static_cast<const char*>(a.recv) + bytes * rank_;
      MPICHECK(MPI_Igather(place ? inPlace : a.send, n, t, a.recv, n, t, a.root, comm_, r));
      break;
    }
    case CommOp::AllGather: {
      const bool place = a.send == static_cast<const char*>(a.recv) + bytes * rank_;
      MPICHECK(MPI_Iallgather(place ? inPlace : a.send, n, t, a.recv, n, t, comm_, r));
      break;
    }
    case CommOp::Scatter: {
      const bool place = isRoot && a.recv == static_cast<const char*>(a.send) + bytes * rank_;
      MPICHECK(MPI_Iscatter(a.send, n, t, place ? inPlace : a.recv, n, t, a.root, comm_, r));
      break;
    }
    case CommOp::ReduceScatter: {
      void* out = a.recv;
      if (a.recv == static_cast<const char*>(a.send) + bytes * rank_) {
        req.temp.resize(bytes);
        out = req.temp.data();
      }
      MPICHECK(MPI_Ireduce_scatter_block(a.send, out, n, t, mpiOp(a.dtype, a.reduce), comm_, r));
      req.finish = [=] {
        if (out != a.recv && bytes > 0) std::memcpy(a.recv, out, bytes);
        average(a.recv);
      };
      break;
    }
    case CommOp::AllToAll: {
      const void* in = a.send;
      if (a.send == a.recv && size_ > 1) {
        req.temp.assign(static_cast<const std::byte*>(a.send),
                        static_cast<const std::byte*>(a.send) + bytes * size_);
        in = req.temp.data();
      }
      MPICHECK(MPI_Ialltoall(in, n, t, a.recv, n, t, comm_, r));
      break;
    }
    case CommOp::Send: MPICHECK(MPI_Isend(a.send, n, t, a.root, 0, comm_, r)); break;
    case CommOp::Recv:
      MPICHECK(MPI_Irecv(a.recv, n, t, a.root, 0, comm_, r));
      req.finish = [=, where = prefix(a.op), &req] {
        int got = 0;
        MPI_Get_count(&req.status, t, &got);
        if (got != n)
          throw CommError(where + " failed: expected " + std::to_string(n) + " " +
                          std::string(dtypeName(a.dtype)) + " from rank " + std::to_string(a.root) +
                          " but the matching send had " + std::to_string(got));
      };
      break;
  }
}

// Each rank receives what the in-process backend's rank of the same number combines, and
// combines it the same way (docs/communication.md): reduceScatter is an all-to-all of the
// blocks; a direct allReduce gathers every input at every rank; the chunked algorithms are an
// all-to-all of chunks, each rank combining its own, then an all-gather of the chunks
// (allReduce) or a gather at the root (reduce).
void MpiComm::postInRankOrder(const CommArgs& a, MpiRequest& req) {
  const int n = static_cast<int>(a.count);
  const MPI_Datatype t = mpiType(a.dtype);
  const std::size_t es = dtypeSize(a.dtype);
  const int ranks = size_;
  const auto un = static_cast<std::size_t>(ranks);
  if (algorithmFor(a, ranks) == CommAlgorithm::Direct) {
    const std::size_t bytes = a.count * es;
    req.temp.resize(bytes * un);
    if (a.op == CommOp::ReduceScatter) {
      MPICHECK(MPI_Ialltoall(a.send, n, t, req.temp.data(), n, t, comm_, &req.request));
    } else {
      MPICHECK(MPI_Iallgather(a.send, n, t, req.temp.data(), n, t, comm_, &req.request));
    }
    req.finish = [a, bytes, ranks, &req] {
      reduceBuffers(a.recv, blocksOf(req.temp, ranks, bytes).data(), ranks, a.count, a.dtype,
                    a.reduce, ranks);
    };
    return;
  }
  // layout: every rank's chunk (count, offset), then this rank's chunk from every rank.
  req.layout.assign(4 * un, 0);
  int* chunkCounts = req.layout.data();
  int* chunkBegins = chunkCounts + un;
  int* mineCounts = chunkBegins + un;
  int* mineBegins = mineCounts + un;
  const ElementRange mine = chunkOf(a.count, ranks, rank_, a.dtype);
  for (int j = 0; j < ranks; ++j) {
    const ElementRange c = chunkOf(a.count, ranks, j, a.dtype);
    chunkCounts[j] = static_cast<int>(c.count);
    chunkBegins[j] = static_cast<int>(c.begin);
    mineCounts[j] = static_cast<int>(mine.count);
    mineBegins[j] = static_cast<int>(mine.count) * j;
  }
  const std::size_t mineBytes = mine.count * es;
  // The chunks received, and after them this rank's combined chunk where it has no place in
  // the output (a reduce's ranks other than the root).
  const bool inOutput = a.op == CommOp::AllReduce || rank_ == a.root;
  req.temp.resize(mineBytes * (un + (inOutput ? 0 : 1)));
  MPICHECK(MPI_Ialltoallv(a.send, chunkCounts, chunkBegins, t, req.temp.data(), mineCounts,
                          mineBegins, t, comm_, &req.request));
  req.finish = [a, t, mine, mineBytes, ranks, inOutput, comm = comm_, rank = rank_, &req] {
    const int* counts = req.layout.data();
    const int* begins = counts + ranks;
    std::byte* combined = inOutput
                              ? static_cast<std::byte*>(a.recv) + mine.begin * dtypeSize(a.dtype)
                              : req.temp.data() + mineBytes * static_cast<std::size_t>(ranks);
    reduceBuffers(combined, blocksOf(req.temp, ranks, mineBytes).data(), ranks, mine.count, a.dtype,
                  a.reduce, ranks);
    const int m = static_cast<int>(mine.count);
    if (a.op == CommOp::AllReduce) {
      MPICHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, t, a.recv, counts, begins, t, comm, &req.request));
    } else if (rank == a.root) {
      MPICHECK(
          MPI_Igatherv(MPI_IN_PLACE, 0, t, a.recv, counts, begins, t, a.root, comm, &req.request));
    } else {
      MPICHECK(
          MPI_Igatherv(combined, m, t, nullptr, nullptr, nullptr, t, a.root, comm, &req.request));
    }
  };
}

std::shared_ptr<CommBackend> MpiComm::split(int color, int key) {
  // MPI_Comm_split blocks without a bound; a non-blocking barrier first, polled for failure
  // notices and the timeout, makes sure every rank has arrived before entering it.
  MpiRequest arrived(operationPrefix("split", name(), rank_, size_), options().timeout,
                     "unknown (a rank did not reach the split)");
  MPICHECK(MPI_Ibarrier(control_, &arrived.request));
  arrived.wait();
  MPI_Comm out = MPI_COMM_NULL;
  MPICHECK(MPI_Comm_split(comm_, color, key, &out));
  return std::make_shared<MpiComm>(out, name() + "/" + std::to_string(color), options());
}

}  // namespace

bool launchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
}

int mpiRanksOnThisNode() {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const long n = local ? std::strtol(local, nullptr, 10) : 1;
  return n >= 1 && n <= INT_MAX ? static_cast<int>(n) : 1;
}

void failMpiWorld(const std::string& reason, int exitCode, std::chrono::milliseconds grace) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized || gFailComm == MPI_COMM_NULL) return;
  std::fflush(stdout);
  std::fflush(stderr);
  int rank = 0, size = 1;
  MPI_Comm_rank(gFailComm, &rank);
  MPI_Comm_size(gFailComm, &size);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  auto untilDeadline = [&](const std::function<bool()>& done) {
    while (!done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  if (peerFailed()) {
    // This rank failed because of that peer: confirm, then let the peer end the job so that
    // every rank's report is printed first.
    MPI_Request done = MPI_REQUEST_NULL;
    MPI_Isend(nullptr, 0, MPI_CHAR, gFailedRank, kDoneTag, gFailComm, &done);
    untilDeadline([] { return false; });
  } else {
    std::vector<MPI_Request> notices(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
    std::vector<MPI_Request> dones(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      MPI_Isend(reason.data(), static_cast<int>(reason.size()), MPI_CHAR, p, kFailTag, gFailComm,
                &notices[static_cast<std::size_t>(p)]);
      MPI_Irecv(nullptr, 0, MPI_CHAR, p, kDoneTag, gFailComm, &dones[static_cast<std::size_t>(p)]);
    }
    untilDeadline([&] {
      // Peers failing at the same time wait for this rank's confirmation likewise.
      std::string other;
      for (int p; (p = receiveFailureNotice(&other)) >= 0;) {
        MPI_Request r = MPI_REQUEST_NULL;
        MPI_Isend(nullptr, 0, MPI_CHAR, p, kDoneTag, gFailComm, &r);
        MPI_Request_free(&r);
      }
      int all = 0;
      MPI_Testall(size, dones.data(), &all, MPI_STATUSES_IGNORE);
      return all != 0;
    });
  }
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode);
}

Communicator mpiWorld(CommOptions options) {
  initMpi();
  return Communicator(std::make_shared<MpiComm>(MPI_COMM_WORLD, "world", std::move(options)));
}

}  // namespace parascope
