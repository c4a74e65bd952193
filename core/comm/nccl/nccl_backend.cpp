// NCCL backend: each operation is one NCCL call on the communicator's stream followed by an
// event; wait polls the event and NCCL's asynchronous error state against the timeout and
// aborts the communicator on failure, so a dead peer cannot hang the caller forever.
#include "core/comm/nccl/nccl_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "core/comm/collective_traits.h"
#include "core/comm/comm_bytes.h"
#include "core/common/error.h"
#include "core/cuda/device.h"

namespace parascope {
namespace {

#define CUDACHECK(call)                                                          \
  do {                                                                           \
    const cudaError_t e_ = (call);                                               \
    if (e_ != cudaSuccess)                                                       \
      throw CommError(std::string(#call) + " failed at " + __FILE__ + ":" +      \
                      std::to_string(__LINE__) + ": " + cudaGetErrorString(e_)); \
  } while (0)

#define NCCLCHECK(call)                                                          \
  do {                                                                           \
    const ncclResult_t r_ = (call);                                              \
    if (r_ != ncclSuccess)                                                       \
      throw CommError(std::string(#call) + " failed at " + __FILE__ + ":" +      \
                      std::to_string(__LINE__) + ": " + ncclGetErrorString(r_)); \
  } while (0)

ncclDataType_t ncclType(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Avg: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
  }
  return ncclSum;
}

class NcclRequest final : public CommRequest {
 public:
  NcclRequest(ncclComm_t comm, std::string prefix, std::chrono::milliseconds timeout)
      : comm_(comm), prefix_(std::move(prefix)), timeout_(timeout) {
    CUDACHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  ~NcclRequest() override { cudaEventDestroy(event); }
  bool test() override {
    if (launch) std::exchange(launch, nullptr)();  // a receive still held back: post it now
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady)
      throw CommError(prefix_ + " failed: " + std::string(cudaGetErrorString(e)));
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress)
      throw CommError(prefix_ + " failed: " + std::string(ncclGetErrorString(async)));
    return false;
  }
  void wait() override {
    const auto start = std::chrono::steady_clock::now();
    while (!test()) {
      if (timeout_.count() > 0 && std::chrono::steady_clock::now() - start > timeout_) {
        ncclCommAbort(comm_);  // the communicator is unusable from here on
        throw CommError(prefix_ + " failed: timed out after " + std::to_string(timeout_.count()) +
                        " ms; communicator aborted");
      }
      std::this_thread::yield();
    }
  }
  cudaEvent_t event = nullptr;
  void* temp = nullptr;  // device staging for in-place allToAll, freed on the stream
  // Set while this receive is held back (NcclComm::start): posts it, with any others held.
  std::function<void()> launch;

 private:
  ncclComm_t comm_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

class NcclComm final : public CommBackend {
 public:
  NcclComm(ncclComm_t comm, int device, std::string name, CommOptions options)
      : CommBackend(std::move(name), std::move(options)), comm_(comm), device_(device) {
    NCCLCHECK(ncclCommUserRank(comm_, &rank_));
    NCCLCHECK(ncclCommCount(comm_, &size_));
    CUDACHECK(cudaSetDevice(device_));
    CUDACHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDACHECK(cudaEventCreateWithFlags(&launched_, cudaEventDisableTiming));
  }
  ~NcclComm() override {
    cudaStreamSynchronize(stream_);
    cudaEventDestroy(launched_);
    cudaStreamDestroy(stream_);
    ncclCommDestroy(comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view kind() const override { return "nccl"; }
  std::shared_ptr<CommRequest> start(const CommArgs& a, bool blocking) override;
  std::shared_ptr<CommBackend> split(int color, int key) override {
    ncclComm_t out = nullptr;
    NCCLCHECK(ncclCommSplit(comm_, color, key, &out, nullptr));
    return std::make_shared<NcclComm>(out, device_, name() + "/" + std::to_string(color),
                                      options());
  }

 private:
  void enqueue(const CommArgs& a, NcclRequest& req);
  void postHeldReceives();
  void afterLaunchedWork();
  ncclComm_t comm_;
  // Receives posted but not yet handed to NCCL (see start()).
  std::vector<std::pair<CommArgs, std::shared_ptr<NcclRequest>>> held_;
  int device_;
  int rank_ = 0, size_ = 1;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t launched_ = nullptr;  // afterLaunchedWork's
};

// The kernels launched on this device before an operation is issued produce its inputs, or still
// read its outputs: NCCL's stream waits for them. An event on the legacy default stream comes
// after all of them, on every blocking stream (a rank's compute stream is one,
// core/cuda/stream.h); the rank's later kernels wait for that event, not for NCCL.
void NcclComm::afterLaunchedWork() {
  CUDACHECK(cudaEventRecord(launched_, cudaStreamLegacy));
  CUDACHECK(cudaStreamWaitEvent(stream_, launched_, 0));
}

// NCCL runs one communicator's operations in order on its stream, and a receive waits inside
// its kernel for the matching send: a ring (every rank receives, then sends) or a send to
// oneself would wait forever with each posted alone. So a receive is held back until the next
// operation of this rank, and posted in one NCCL group with it (as batch_isend_irecv does), or
// alone once it is waited for.
std::shared_ptr<CommRequest> NcclComm::start(const CommArgs& a, bool) {
  CUDACHECK(cudaSetDevice(device_));
  auto req = std::make_shared<NcclRequest>(
      comm_, operationPrefix(commOpName(a.op), name(), rank_, size_), options().timeout);
  const bool chunked = a.op == CommOp::Reduce || a.op == CommOp::AllReduce;
  req->record = makeRecord(kind(), name(), rank_, size_, a,
                           chunked ? CommAlgorithm::Chunked : CommAlgorithm::Direct);
  req->record.algorithm = "nccl/" + req->record.algorithm;
  if (a.op == CommOp::Recv) {
    req->launch = [this] { postHeldReceives(); };
    held_.emplace_back(a, req);
    return req;
  }
  afterLaunchedWork();
  NCCLCHECK(ncclGroupStart());
  for (auto& [args, held] : held_) enqueue(args, *held);
  enqueue(a, *req);
  NCCLCHECK(ncclGroupEnd());
  for (auto& [args, held] : held_) {
    held->launch = nullptr;
    CUDACHECK(cudaEventRecord(held->event, stream_));
  }
  held_.clear();
  CUDACHECK(cudaEventRecord(req->event, stream_));
  return req;
}

void NcclComm::postHeldReceives() {
  CUDACHECK(cudaSetDevice(device_));
  afterLaunchedWork();
  NCCLCHECK(ncclGroupStart());
  for (auto& [args, held] : held_) enqueue(args, *held);
  NCCLCHECK(ncclGroupEnd());
  for (auto& [args, held] : held_) {
    held->launch = nullptr;
    CUDACHECK(cudaEventRecord(held->event, stream_));
  }
  held_.clear();
}

void NcclComm::enqueue(const CommArgs& a, NcclRequest& req) {
  const ncclDataType_t t = ncclType(a.dtype);
  const std::size_t n = a.count;
  // One rank's average is its own values. NCCL 2.28's one-rank average left the last element of
  // a reduce unwritten (an H200, f32, 12289 elements: the collective suite), so it is a copy.
  if (size_ == 1 && a.reduce == ReduceOp::Avg && commTraits(a.op).reduces) {
    if (a.send != a.recv && n > 0)
      CUDACHECK(cudaMemcpyAsync(a.recv, a.send, n * dtypeSize(a.dtype), cudaMemcpyDeviceToDevice,
                                stream_));
    return;
  }
  switch (a.op) {
    case CommOp::Broadcast:
      NCCLCHECK(ncclBroadcast(a.recv, a.recv, n, t, a.root, comm_, stream_));
      break;
    case CommOp::Reduce:
      NCCLCHECK(ncclReduce(a.send, a.recv, n, t, ncclOp(a.reduce), a.root, comm_, stream_));
      break;
    case CommOp::AllReduce:
      NCCLCHECK(ncclAllReduce(a.send, a.recv, n, t, ncclOp(a.reduce), comm_, stream_));
      break;
    case CommOp::Gather: NCCLCHECK(ncclGather(a.send, a.recv, n, t, a.root, comm_, stream_)); break;
    case CommOp::AllGather: NCCLCHECK(ncclAllGather(a.send, a.recv, n, t, comm_, stream_)); break;
    case CommOp::Scatter:
      NCCLCHECK(ncclScatter(a.send, a.recv, n, t, a.root, comm_, stream_));
      break;
    case CommOp::ReduceScatter:
      NCCLCHECK(ncclReduceScatter(a.send, a.recv, n, t, ncclOp(a.reduce), comm_, stream_));
      break;
    case CommOp::AllToAll: {
      const void* in = a.send;
      if (a.send == a.recv && size_ > 1) {
        const std::size_t bytes = n * dtypeSize(a.dtype) * static_cast<std::size_t>(size_);
        CUDACHECK(cudaMallocAsync(&req.temp, bytes, stream_));
        CUDACHECK(cudaMemcpyAsync(req.temp, a.send, bytes, cudaMemcpyDeviceToDevice, stream_));
        in = req.temp;
      }
      NCCLCHECK(ncclAlltoAll(in, a.recv, n, t, comm_, stream_));
      if (req.temp) CUDACHECK(cudaFreeAsync(req.temp, stream_));
      break;
    }
    case CommOp::Send: NCCLCHECK(ncclSend(a.send, n, t, a.root, comm_, stream_)); break;
    case CommOp::Recv: NCCLCHECK(ncclRecv(a.recv, n, t, a.root, comm_, stream_)); break;
  }
}

}  // namespace

Communicator ncclCommunicator(Communicator& bootstrap, int device, CommOptions options) {
  if (device < 0 || device >= cuda::deviceCount())
    throw UserError("NCCL: device " + std::to_string(device) + " does not exist (" +
                    std::to_string(cuda::deviceCount()) + " CUDA devices visible)");
  ncclUniqueId id{};
  if (bootstrap.rank() == 0) NCCLCHECK(ncclGetUniqueId(&id));
  static_assert(sizeof(id) % 4 == 0);
  bootstrap.broadcast(&id, sizeof(id) / 4, DType::I32, 0);
  CUDACHECK(cudaSetDevice(device));
  ncclComm_t comm = nullptr;
  NCCLCHECK(ncclCommInitRank(&comm, bootstrap.size(), id, bootstrap.rank()));
  return Communicator(
      std::make_shared<NcclComm>(comm, device, bootstrap.name(), std::move(options)));
}

}  // namespace parascope
