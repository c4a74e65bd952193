#include "core/cuda/cuda_ops.h"

#include "core/cuda/blas.h"
#include "core/cuda/check.h"
#include "core/cuda/device.h"
#include "core/cuda/kernels.h"
#include "core/cuda/stream.h"
#include "core/trace/trace.h"

namespace parascope::cuda {

namespace {

class CudaOps final : public kernels::KernelOps {
 public:
  CudaOps(int index, GemmPrecision precision)
      : index_(index), compute_(index), stream_(compute_.get()), blas_(stream_, precision) {
    check(cudaMalloc(reinterpret_cast<void**>(&sum_), sizeof(double)), "cudaMalloc");
  }
  ~CudaOps() override { cudaFree(sum_); }
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;
  Device device() const override { return {Device::Kind::Cuda, index_}; }

  void embeddingForward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe,
                        int B, int T, int C) const override {
    const trace::LaunchSpan span("embedding_forward", trace::Category::Compute);
    cuda::embeddingForward(out, tokens, wte, wpe, B, T, C, stream_);
  }
  void embeddingBackward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                         int B, int T, int C) const override {
    const trace::LaunchSpan span("embedding_backward", trace::Category::Compute);
    cuda::embeddingBackward(dwte, dwpe, dout, tokens, B, T, C, stream_);
  }
  void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                        const float* bias, int N, int C) const override {
    const trace::LaunchSpan span("layernorm_forward", trace::Category::Compute);
    cuda::layernormForward(out, mean, rstd, inp, weight, bias, N, C, stream_);
  }
  void residualLayernormForward(float* sum, float* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int N,
                                int C) const override {
    const trace::LaunchSpan span("residual_layernorm_forward", trace::Category::Compute);
    cuda::residualLayernormForward(sum, out, mean, rstd, a, b, weight, bias, N, C, stream_);
  }
  void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                         const float* inp, const float* weight, const float* mean,
                         const float* rstd, int N, int C, const float* dresidual) const override {
    const trace::LaunchSpan span("layernorm_backward", trace::Category::Compute);
    cuda::layernormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, dresidual,
                            stream_);
  }
  void matmulForward(float* out, const float* inp, const float* weight, const float* bias, int N,
                     int C, int OC) const override {
    const trace::LaunchSpan span("matmul_forward", trace::Category::Compute);
    blas_.matmulForward(out, inp, weight, bias, N, C, OC);
  }
  void matmulBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                      const float* inp, const float* weight, int N, int C, int OC,
                      kernels::WeightGradient write) const override {
    const trace::LaunchSpan span("matmul_backward", trace::Category::Compute);
    blas_.matmulBackward(dinp, dweight, dout, inp, weight, N, C, OC,
                         write == kernels::WeightGradient::Overwrite);
    if (dbias != nullptr) cuda::biasBackward(dbias, dout, N, OC, stream_);
  }
  long attentionScratch(int, int, int, int, bool) const override { return 0; }
  void attentionForward(float* out, float* stats, float* /*scratch*/, const float* qkv, int B,
                        int T, int C, int NH) const override {
    const trace::LaunchSpan span("attention_forward", trace::Category::Compute);
    cuda::attentionForward(out, stats, qkv, B, T, C, NH, stream_);
  }
  void attentionBackward(float* dqkv, float* /*scratch*/, const float* dout, const float* qkv,
                         const float* out, const float* stats, int B, int T, int C,
                         int NH) const override {
    const trace::LaunchSpan span("attention_backward", trace::Category::Compute);
    cuda::attentionBackward(dqkv, dout, qkv, out, stats, B, T, C, NH, stream_);
  }
  void geluForward(float* out, const float* inp, long N) const override {
    const trace::LaunchSpan span("gelu_forward", trace::Category::Compute);
    cuda::geluForward(out, inp, N, stream_);
  }
  void geluBackward(float* dinp, const float* inp, const float* dout, long N) const override {
    const trace::LaunchSpan span("gelu_backward", trace::Category::Compute);
    cuda::geluBackward(dinp, inp, dout, N, stream_);
  }
  void residualForward(float* out, const float* a, const float* b, long N) const override {
    const trace::LaunchSpan span("residual_forward", trace::Category::Compute);
    cuda::residualForward(out, a, b, N, stream_);
  }
  void biasForward(float* out, const float* bias, long rows, long C) const override {
    const trace::LaunchSpan span("bias_forward", trace::Category::Compute);
    cuda::biasForward(out, bias, rows, C, stream_);
  }
  void biasBackward(float* dbias, const float* dout, long rows, long C) const override {
    const trace::LaunchSpan span("bias_backward", trace::Category::Compute);
    cuda::biasBackward(dbias, dout, rows, C, stream_);
  }
  void crossEntropyForward(float* losses, float* probs, const float* logits,
                           const std::int32_t* targets, int N, int V) const override {
    const trace::LaunchSpan span("cross_entropy_forward", trace::Category::Compute);
    cuda::crossEntropyForward(losses, probs, logits, targets, N, V, stream_);
  }
  void accumulate(void* acc, const void* add, long n, DType type) const override {
    const trace::LaunchSpan span("accumulate", trace::Category::Compute);
    cuda::accumulate(acc, add, n, type, stream_);
  }
  void embeddingPartForward(float* out, const std::int32_t* tokens, const float* wtePart, int N,
                            int first, int part, int C) const override {
    const trace::LaunchSpan span("embedding_forward", trace::Category::Compute);
    cuda::embeddingPartForward(out, tokens, wtePart, N, first, part, C, stream_);
  }
  void embeddingPartBackward(float* dwtePart, const float* dout, const std::int32_t* tokens, int N,
                             int first, int part, int C) const override {
    const trace::LaunchSpan span("embedding_backward", trace::Category::Compute);
    cuda::embeddingPartBackward(dwtePart, dout, tokens, N, first, part, C, stream_);
  }
  void positionForward(float* out, const float* wpe, int rows, int row0, int T,
                       int C) const override {
    const trace::LaunchSpan span("position_embedding_forward", trace::Category::Compute);
    cuda::positionForward(out, wpe, rows, row0, T, C, stream_);
  }
  void positionBackward(float* dwpe, const float* dout, int rows, int row0, int T,
                        int C) const override {
    const trace::LaunchSpan span("position_embedding_backward", trace::Category::Compute);
    cuda::positionBackward(dwpe, dout, rows, row0, T, C, stream_);
  }
  void crossEntropyPartMax(float* maxima, const float* logits, int N, int V) const override {
    const trace::LaunchSpan span("cross_entropy_max", trace::Category::Compute);
    cuda::crossEntropyPartMax(maxima, logits, N, V, stream_);
  }
  void crossEntropyPartExp(float* sums, float* probs, const float* logits, const float* maxima,
                           const std::int32_t* targets, int N, int V, int first) const override {
    const trace::LaunchSpan span("cross_entropy_exp", trace::Category::Compute);
    cuda::crossEntropyPartExp(sums, probs, logits, maxima, targets, N, V, first, stream_);
  }
  void crossEntropyPartFinish(float* losses, float* probs, const float* sums, const float* maxima,
                              int N, int V) const override {
    const trace::LaunchSpan span("cross_entropy_normalize", trace::Category::Compute);
    cuda::crossEntropyPartFinish(losses, probs, sums, maxima, N, V, stream_);
  }
  void crossEntropyPartBackward(float* dlogits, const std::int32_t* targets, int N, int V,
                                int first, float weight) const override {
    const trace::LaunchSpan span("cross_entropy_backward", trace::Category::Compute);
    cuda::crossEntropyPartBackward(dlogits, targets, N, V, first, weight, stream_);
  }
  void adamwUpdate(float* param, const float* grad, float* m, float* v, long n,
                   const kernels::AdamWHyper& h, int step, float gradScale) const override {
    const trace::LaunchSpan span("adamw", trace::Category::Optimizer);
    cuda::adamwUpdate(param, grad, m, v, n, kernels::adamwConstants(h, step), gradScale, stream_);
  }
  void widen(const std::uint16_t* in, float* out, long n, DType type) const override {
    const trace::LaunchSpan span("widen", trace::Category::Compute);
    cuda::widen(in, out, n, type, stream_);
  }
  void narrow(const float* in, std::uint16_t* out, long n, DType type) const override {
    const trace::LaunchSpan span("narrow", trace::Category::Compute);
    cuda::narrow(in, out, n, type, stream_);
  }
  void roundTo(float* x, long n, DType type) const override {
    if (type == DType::F32) return;  // nothing to round, nothing launched
    const trace::LaunchSpan span("round_to", trace::Category::Compute);
    cuda::roundTo(x, n, type, stream_);
  }
  void accumulateRounded(std::uint16_t* acc, const float* add, long n, DType type) const override {
    const trace::LaunchSpan span("accumulate_rounded", trace::Category::Compute);
    cuda::accumulateRounded(acc, add, n, type, stream_);
  }
  void adamwUpdateMixed(float* master, std::uint16_t* param, const std::uint16_t* grad, float* m,
                        float* v, long n, const kernels::AdamWHyper& h, int step, float gradScale,
                        DType type) const override {
    const trace::LaunchSpan span("adamw", trace::Category::Optimizer);
    cuda::adamwUpdateMixed(master, param, grad, m, v, n, kernels::adamwConstants(h, step),
                           gradScale, type, stream_);
  }
  // One parameter's sum at a time, each waited for: a norm is one number per step, and the few
  // dozen round trips cost far less than the step.
  double sumOfSquares(const void* grad, long n, DType type) const override {
    const trace::LaunchSpan span("grad_norm", trace::Category::Optimizer);
    check(cudaMemsetAsync(sum_, 0, sizeof(double), stream_), "cudaMemsetAsync");
    cuda::addSumOfSquares(sum_, grad, n, type, stream_);
    double host = 0;
    check(cudaMemcpyAsync(&host, sum_, sizeof(double), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync");
    synchronize();
    return host;
  }
  void synchronize() const override {
    const trace::Span span("synchronize", trace::Category::Sync);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  std::shared_ptr<void> enter() const override {
    return std::make_shared<ComputeStream::Scope>(compute_);
  }

 private:
  int index_;
  ComputeStream compute_;
  cudaStream_t stream_;
  // A product's plan cache changes under const calls; one rank's thread makes them all.
  mutable Blas blas_;
  double* sum_ = nullptr;  // sumOfSquares' result on the device
};

}  // namespace

std::shared_ptr<const kernels::KernelOps> cudaOps(int index, GemmPrecision precision) {
  requireDevice(index, "kernels");
  check(cudaSetDevice(index), "cudaSetDevice");
  return std::make_shared<CudaOps>(index, precision);
}

}  // namespace parascope::cuda
