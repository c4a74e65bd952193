// Every CUDA kernel (core/cuda/kernels.h) against the CPU kernel it mirrors, on the same inputs
// (the element-wise kernels and the column sums give the CPU's bits, the row reductions agree to
// the tolerance stated at each check), and the tracked allocator on device memory. The checks
// that need a device skip with one line where none is visible.
#include <QtTest>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/cuda/blas.h"
#include "core/cuda/device.h"
#include "core/cuda/device_memory.h"
#include "core/cuda/kernels.h"
#include "core/kernels/adamw.h"
#include "core/kernels/attention.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/element_math.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/grad_clip.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/math.h"
#include "core/kernels/matmul.h"
#include "core/kernels/precision.h"
#include "core/kernels/residual.h"
#include "core/tensor/tensor.h"
#include "tests/flash_attention_reference.h"
#include "tests/gpu/require_device.h"

using namespace parascope;
using Floats = std::vector<float>;

namespace {

Floats randomFloats(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Floats v(n);
  for (float& x : v) x = d(gen);
  return v;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) QFAIL((std::string(what) + ": " + cudaGetErrorString(e)).c_str());
}

// A device copy of a host vector, read back with host().
template <typename T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : n_(host.size()) {
    check(cudaMalloc(reinterpret_cast<void**>(&p_), bytes()), "cudaMalloc");
    check(cudaMemcpy(p_, host.data(), bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ~DeviceVector() { cudaFree(p_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  T* get() const { return p_; }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    check(cudaDeviceSynchronize(), "kernel");
    check(cudaMemcpy(h.data(), p_, bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return h;
  }

 private:
  std::size_t bytes() const { return n_ * sizeof(T); }
  std::size_t n_;
  T* p_ = nullptr;
};

template <typename T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The largest |a - b| / (atol + rtol |b|) over the elements: at most 1 passes.
double worst(const Floats& gpu, const Floats& cpu, double rtol, double atol) {
  double w = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    w = std::max(w, std::fabs(double(gpu[i]) - cpu[i]) / (atol + rtol * std::fabs(double(cpu[i]))));
  return w;
}

// The largest |a - b| / (rtol * bound) over the elements, where bound[i] is the sum of the
// magnitudes of the terms that make element i (the product of |x| and |w| for a matrix
// product): a sum of K terms in another order differs by a small multiple of f32's epsilon times
// that, however much the terms cancel. At most 1 passes.
double worstAgainstBound(const Floats& gpu, const Floats& cpu, const Floats& bound, double rtol) {
  double w = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    w = std::max(w, std::fabs(double(gpu[i]) - cpu[i]) / (rtol * bound[i]));
  return w;
}

// The largest |a - b| over rtol times the largest |b|: a normwise bound, for sums whose
// terms cancel (attention's weighted values and gradients). At most 1 passes.
double worstNormwise(const Floats& gpu, const Floats& cpu, double rtol) {
  double largest = 0, w = 0;
  for (const float c : cpu) largest = std::max(largest, std::fabs(double(c)));
  for (std::size_t i = 0; i < cpu.size(); ++i) w = std::max(w, std::fabs(double(gpu[i]) - cpu[i]));
  return w / (rtol * largest);
}

Floats magnitudes(const Floats& v) {
  Floats m(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) m[i] = std::fabs(v[i]);
  return m;
}

}  // namespace

// A worst(...) or worstAgainstBound(...) ratio at most 1, or the failure says how far off it was.
#define VERIFY_WITHIN(ratio, what)                                                  \
  do {                                                                              \
    const double worstRatio = (ratio);                                              \
    QVERIFY2(worstRatio <= 1, (std::string(what) + ": the worst element is " +      \
                               std::to_string(worstRatio) + " times its tolerance") \
                                  .c_str());                                        \
  } while (false)

// The checks that need a device skip with one line without one (REQUIRE_DEVICE); refusesAWideType
// runs anywhere.

class TestCudaKernels : public QObject {
  Q_OBJECT
 private slots:
  void elementwiseKernelsGiveTheCpusBits();
  void layernormMatchesTheCpu();
  void embeddingMatchesTheCpu();
  void crossEntropyMatchesTheCpu();
  void vocabularySplitMatchesTheCpu();
  void adamwGivesTheCpusBits();
  void conversionsAndSumOfSquares();
  void matmulMatchesTheCpu();
  void attentionMatchesTheCpu();
  void attentionIsTheReferencesBits();
  void attentionRefusesAWideHead();
  void refusesAWideType();
  void allocatorCachesDeviceMemory();
  void refusesAMissingDevice();
};

void TestCudaKernels::elementwiseKernelsGiveTheCpusBits() {
  REQUIRE_DEVICE("the kernels are built");
  const long n = 100003;  // not a multiple of any block
  const Floats x = randomFloats(n, 1, 3.0f), d = randomFloats(n, 2), y = randomFloats(n, 3);
  Floats cpu(n);
  DeviceVector<float> dx(x), dd(d), dy(y), out{Floats(n)};

  kernels::geluForward(cpu.data(), x.data(), n);
  cuda::geluForward(out.get(), dx.get(), n, nullptr);
  QVERIFY(sameBits(out.host(), cpu));

  kernels::geluBackward(cpu.data(), x.data(), d.data(), n);
  cuda::geluBackward(out.get(), dx.get(), dd.get(), n, nullptr);
  QVERIFY(sameBits(out.host(), cpu));

  kernels::residualForward(cpu.data(), x.data(), y.data(), n);
  cuda::residualForward(out.get(), dx.get(), dy.get(), n, nullptr);
  QVERIFY(sameBits(out.host(), cpu));

  const int C = 97;
  const long rows = n / C;
  const Floats bias = randomFloats(C, 4);
  DeviceVector<float> dbias(bias);
  Floats cpuBiased(x.begin(), x.begin() + rows * C);
  kernels::biasForward(cpuBiased.data(), bias.data(), rows, static_cast<long>(C));
  DeviceVector<float> biased{Floats(x.begin(), x.begin() + rows * C)};
  cuda::biasForward(biased.get(), dbias.get(), rows, C, nullptr);
  QVERIFY(sameBits(biased.host(), cpuBiased));
  // The bias's gradient, a column sum in the CPU's chunks: rows past several rounds of the
  // kernel's warps, a last chunk short, a last block of columns part empty; onto a start value.
  const long sumRows = 2L * 16 * kernels::kColumnChunkRows + 37;
  const Floats rowsIn = randomFloats(sumRows * C, 5);
  Floats cpuSums(bias);
  kernels::biasBackward(cpuSums.data(), rowsIn.data(), sumRows, static_cast<long>(C));
  DeviceVector<float> drows(rowsIn), gpuSums(bias);
  cuda::biasBackward(gpuSums.get(), drows.get(), sumRows, C, nullptr);
  QVERIFY(sameBits(gpuSums.host(), cpuSums));
}

void TestCudaKernels::layernormMatchesTheCpu() {
  REQUIRE_DEVICE("the kernels are built");
  for (const int C : {768, 37}) {
    const int N = 2100;  // the column sums' 33 chunks: three rounds of the kernel's warps
    const Floats a = randomFloats(N * C, 5, 2.0f), b = randomFloats(N * C, 6, 2.0f),
                 w = randomFloats(C, 7), bias = randomFloats(C, 8), dout = randomFloats(N * C, 9),
                 dres = randomFloats(N * C, 10);
    Floats sum(N * C), out(N * C), mean(N), rstd(N);
    kernels::residualLayernormForward(sum.data(), out.data(), mean.data(), rstd.data(), a.data(),
                                      b.data(), w.data(), bias.data(), N, C);
    DeviceVector<float> da(a), db(b), dw(w), dbias(bias), gsum{Floats(N * C)}, gout{Floats(N * C)},
        gmean{Floats(N)}, grstd{Floats(N)};
    cuda::residualLayernormForward(gsum.get(), gout.get(), gmean.get(), grstd.get(), da.get(),
                                   db.get(), dw.get(), dbias.get(), N, C, nullptr);
    QVERIFY(sameBits(gsum.host(), sum));
    // Mean and variance are warp sums in another order than the CPU's: a few ulp of the row.
    VERIFY_WITHIN(worst(gmean.host(), mean, 1e-5, 1e-6), "mean");
    VERIFY_WITHIN(worst(grstd.host(), rstd, 1e-5, 1e-6), "rstd");
    VERIFY_WITHIN(worst(gout.host(), out, 1e-5, 1e-5), "layernorm output");

    // Backward from the CPU's statistics, so that only the kernels' own sums differ.
    Floats dx(N * C), dwCpu(C, 0.5f), dbCpu(C, 0.25f);
    kernels::layernormBackward(dx.data(), dwCpu.data(), dbCpu.data(), dout.data(), sum.data(),
                               w.data(), mean.data(), rstd.data(), N, C, dres.data());
    DeviceVector<float> ddout(dout), ddres(dres), dsum(sum), dmean(mean), drstd(rstd),
        gdx{Floats(N * C)}, gdw{Floats(C, 0.5f)}, gdb{Floats(C, 0.25f)};
    cuda::layernormBackward(gdx.get(), gdw.get(), gdb.get(), ddout.get(), dsum.get(), dw.get(),
                            dmean.get(), drstd.get(), N, C, ddres.get(), nullptr);
    VERIFY_WITHIN(worst(gdx.host(), dx, 1e-5, 1e-5), "layernorm input gradient");
    // Each column's rows added in the CPU's chunks and order: the same bits.
    QVERIFY(sameBits(gdw.host(), dwCpu));
    QVERIFY(sameBits(gdb.host(), dbCpu));
  }
}

void TestCudaKernels::embeddingMatchesTheCpu() {
  REQUIRE_DEVICE("the kernels are built");
  const int B = 4, T = 64, C = 96, V = 50;
  std::vector<std::int32_t> tokens(B * T);
  std::mt19937 gen(11);
  for (auto& t : tokens) t = static_cast<std::int32_t>(gen() % V);  // repeated tokens
  const Floats wte = randomFloats(V * C, 12), wpe = randomFloats(T * C, 13),
               dout = randomFloats(B * T * C, 14);
  Floats out(B * T * C), dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
  kernels::embeddingForward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  kernels::embeddingBackward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);
  DeviceVector<std::int32_t> dtokens(tokens);
  DeviceVector<float> dwteIn(wte), dwpeIn(wpe), ddout(dout), gout{Floats(B * T * C)},
      gdwte{Floats(V * C, 0.0f)}, gdwpe{Floats(T * C, 0.0f)};
  cuda::embeddingForward(gout.get(), dtokens.get(), dwteIn.get(), dwpeIn.get(), B, T, C, nullptr);
  cuda::embeddingBackward(gdwte.get(), gdwpe.get(), ddout.get(), dtokens.get(), B, T, C, nullptr);
  QVERIFY(sameBits(gout.host(), out));
  QVERIFY(sameBits(gdwte.host(), dwte));
  QVERIFY(sameBits(gdwpe.host(), dwpe));
}

// Tensor parallelism's vocabulary split, rank 1 of 2 (rows [V/2, V) of a 512-row table): the
// embedding's part, the position rows from row 40 on, and the three passes of the split
// cross-entropy (the group's reductions left out: one rank's quantities). Embedding and
// position give the CPU's bits; the cross-entropy's row sums are held to 1e-5.
void TestCudaKernels::vocabularySplitMatchesTheCpu() {
  REQUIRE_DEVICE("the kernels are built");
  const int N = 96, C = 48, V = 256, first = 256, T = 32, row0 = 40;
  std::vector<std::int32_t> tokens(N);
  for (int n = 0; n < N; ++n) tokens[n] = (n * 37) % 512;  // half of them another rank's
  const Floats wte = randomFloats(static_cast<std::size_t>(V) * C, 40),
               wpe = randomFloats(static_cast<std::size_t>(T) * C, 41),
               dout = randomFloats(static_cast<std::size_t>(N) * C, 42);
  DeviceVector<std::int32_t> dtokens(tokens);
  DeviceVector<float> dwte(wte), dwpe(wpe), ddout(dout), out{Floats(N * C)};
  Floats cpu(N * C);
  kernels::embeddingPartForward(cpu.data(), tokens.data(), wte.data(), N, first, V, C);
  cuda::embeddingPartForward(out.get(), dtokens.get(), dwte.get(), N, first, V, C, nullptr);
  QVERIFY(sameBits(out.host(), cpu));
  kernels::positionForward(cpu.data(), wpe.data(), N, row0, T, C);
  cuda::positionForward(out.get(), dwpe.get(), N, row0, T, C, nullptr);
  QVERIFY(sameBits(out.host(), cpu));
  Floats gradTable(wte.size(), 0.5f), gradPositions(wpe.size(), 0.25f);
  DeviceVector<float> dgradTable(gradTable), dgradPositions(gradPositions);
  kernels::embeddingPartBackward(gradTable.data(), dout.data(), tokens.data(), N, first, V, C);
  cuda::embeddingPartBackward(dgradTable.get(), ddout.get(), dtokens.get(), N, first, V, C,
                              nullptr);
  QVERIFY(sameBits(dgradTable.host(), gradTable));
  kernels::positionBackward(gradPositions.data(), dout.data(), N, row0, T, C);
  cuda::positionBackward(dgradPositions.get(), ddout.get(), N, row0, T, C, nullptr);
  QVERIFY(sameBits(dgradPositions.host(), gradPositions));

  const Floats logits = randomFloats(static_cast<std::size_t>(N) * V, 43, 4.0f);
  Floats maxima(N), sums(2 * N), losses(N), probs(logits);
  kernels::crossEntropyPartMax(maxima.data(), logits.data(), N, V);
  kernels::crossEntropyPartExp(sums.data(), probs.data(), probs.data(), maxima.data(),
                               tokens.data(), N, V, first);
  kernels::crossEntropyPartFinish(losses.data(), probs.data(), sums.data(), maxima.data(), N, V);
  DeviceVector<float> dprobs(logits), dmaxima{Floats(N)}, dsums{Floats(2 * N)}, dlosses{Floats(N)};
  cuda::crossEntropyPartMax(dmaxima.get(), dprobs.get(), N, V, nullptr);
  QVERIFY(sameBits(dmaxima.host(), maxima));  // a maximum is exact in any order
  cuda::crossEntropyPartExp(dsums.get(), dprobs.get(), dprobs.get(), dmaxima.get(), dtokens.get(),
                            N, V, first, nullptr);
  VERIFY_WITHIN(worst(dsums.host(), sums, 1e-5, 0), "sums");
  cuda::crossEntropyPartFinish(dlosses.get(), dprobs.get(), dsums.get(), dmaxima.get(), N, V,
                               nullptr);
  VERIFY_WITHIN(worst(dlosses.host(), losses, 1e-5, 1e-6), "losses");
  VERIFY_WITHIN(worst(dprobs.host(), probs, 1e-5, 1e-7), "probabilities");
  kernels::crossEntropyPartBackward(probs.data(), tokens.data(), N, V, first, 0.125f);
  cuda::crossEntropyPartBackward(dprobs.get(), dtokens.get(), N, V, first, 0.125f, nullptr);
  VERIFY_WITHIN(worst(dprobs.host(), probs, 1e-5, 1e-8), "logit gradients");
}

void TestCudaKernels::crossEntropyMatchesTheCpu() {
  REQUIRE_DEVICE("the kernels are built");
  const int N = 64, V = 50304;  // GPT-2's padded vocabulary
  const Floats logits = randomFloats(static_cast<std::size_t>(N) * V, 15, 4.0f);
  std::vector<std::int32_t> targets(N);
  for (int n = 0; n < N; ++n) targets[n] = (n * 7919) % V;
  Floats losses(N), probs(logits.size());
  kernels::crossEntropyForward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
  DeviceVector<std::int32_t> dtargets(targets);
  DeviceVector<float> dlogits(logits), gprobs{Floats(logits.size())}, glosses{Floats(N)};
  cuda::crossEntropyForward(glosses.get(), gprobs.get(), dlogits.get(), dtargets.get(), N, V,
                            nullptr);
  // The exponentials are the CPU's bits (the same fastExp); only their sum differs. The CPU adds
  // each row along a few vector lanes, whose partial sums soon outgrow the tail of tiny terms:
  // with logits of deviation 4 it loses up to 3e-5 of the sum. The GPU's 256 shorter sums lose
  // far less. So both are held to the exponentials' sum in double: the CPU within 1e-4, the GPU
  // within 1e-5 (about 4e-7 is expected).
  Floats expectedProbs(logits.size()), expectedLosses(N);
  for (int n = 0; n < N; ++n) {
    const float* l = logits.data() + static_cast<std::size_t>(n) * V;
    const float maxv = *std::max_element(l, l + V);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += kernels::fastExp(l[v] - maxv);
    for (int v = 0; v < V; ++v)
      expectedProbs[static_cast<std::size_t>(n) * V + v] =
          static_cast<float>(kernels::fastExp(l[v] - maxv) / sum);
    expectedLosses[n] = static_cast<float>(std::log(sum) - (l[targets[n]] - maxv));
  }
  VERIFY_WITHIN(worst(probs, expectedProbs, 1e-4, 0), "the CPU's probabilities");
  VERIFY_WITHIN(worst(glosses.host(), expectedLosses, 0, 1e-5), "losses");
  VERIFY_WITHIN(worst(gprobs.host(), expectedProbs, 1e-5, 0), "probabilities");
  // Backward from the CPU's probabilities, as the one-rank head runs it (the whole vocabulary one
  // part): element-wise, the same bits.
  Floats dlogitsCpu = probs;
  kernels::crossEntropyPartBackward(dlogitsCpu.data(), targets.data(), N, V, 0, 0.125f);
  DeviceVector<float> gd(probs);
  cuda::crossEntropyPartBackward(gd.get(), dtargets.get(), N, V, 0, 0.125f, nullptr);
  QVERIFY(sameBits(gd.host(), dlogitsCpu));
}

void TestCudaKernels::adamwGivesTheCpusBits() {
  REQUIRE_DEVICE("the kernels are built");
  const long n = 65537;
  const kernels::AdamWHyper h{6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
  Floats param = randomFloats(n, 17), grad = randomFloats(n, 18), m = randomFloats(n, 19, 0.1f),
         v = randomFloats(n, 20, 0.1f);
  for (float& x : v) x = std::fabs(x);
  DeviceVector<float> gp(param), gg(grad), gm(m), gv(v);
  for (int step = 1; step <= 3; ++step) {
    kernels::adamwUpdate(param.data(), grad.data(), m.data(), v.data(), n, h, step, 0.5f,
                         kernels::CpuLevel::Baseline);
    cuda::adamwUpdate(gp.get(), gg.get(), gm.get(), gv.get(), n, kernels::adamwConstants(h, step),
                      0.5f, nullptr);
  }
  QVERIFY(sameBits(gp.host(), param));
  QVERIFY(sameBits(gm.host(), m));
  QVERIFY(sameBits(gv.host(), v));

  for (const DType type : {DType::BF16, DType::F16}) {
    Floats master = randomFloats(n, 21), mm(n, 0.0f), vv(n, 0.0f);
    std::vector<std::uint16_t> grad16(n), param16(n);
    kernels::narrow(randomFloats(n, 22).data(), grad16.data(), n, type);
    DeviceVector<float> gmaster(master), gmm(mm), gvv(vv);
    DeviceVector<std::uint16_t> ggrad16(grad16), gparam16(param16);
    kernels::adamwUpdateMixed(master.data(), param16.data(), grad16.data(), mm.data(), vv.data(), n,
                              h, 1, 0.25f, type);
    cuda::adamwUpdateMixed(gmaster.get(), gparam16.get(), ggrad16.get(), gmm.get(), gvv.get(), n,
                           kernels::adamwConstants(h, 1), 0.25f, type, nullptr);
    QVERIFY(sameBits(gmaster.host(), master));
    QVERIFY(sameBits(gparam16.host(), param16));
  }
}

void TestCudaKernels::conversionsAndSumOfSquares() {
  REQUIRE_DEVICE("the kernels are built");
  const long n = 4099;
  Floats x = randomFloats(n, 23, 100.0f);
  x[0] = std::nanf("");
  x[1] = 1e30f;  // past fp16's range: infinity
  x[2] = 1e-7f;  // an fp16 subnormal
  for (const DType type : {DType::BF16, DType::F16}) {
    std::vector<std::uint16_t> cpu(n);
    kernels::narrow(x.data(), cpu.data(), n, type);
    DeviceVector<float> dx(x), wide{Floats(n)};
    DeviceVector<std::uint16_t> narrowed{std::vector<std::uint16_t>(n)};
    cuda::narrow(dx.get(), narrowed.get(), n, type, nullptr);
    QVERIFY(sameBits(narrowed.host(), cpu));
    Floats back(n);
    kernels::widen(cpu.data(), back.data(), n, type);
    cuda::widen(narrowed.get(), wide.get(), n, type, nullptr);
    QVERIFY(sameBits(wide.host(), back));
    // Mixed precision's in-place rounding and rounded accumulation: the CPU's bits.
    Floats rounded = x;
    kernels::roundTo(rounded.data(), n, type);
    DeviceVector<float> dr(x);
    cuda::roundTo(dr.get(), n, type, nullptr);
    QVERIFY(sameBits(dr.host(), rounded));
    const Floats add = randomFloats(n, 25, 3.0f);
    std::vector<std::uint16_t> acc = cpu;
    kernels::accumulateRounded(acc.data(), add.data(), n, type);
    DeviceVector<float> dadd(add);
    cuda::accumulateRounded(narrowed.get(), dadd.get(), n, type, nullptr);
    // But for the NaN at 0: a GPU's addition gives its one canonical NaN, the CPU's keeps the
    // operand's.
    std::vector<std::uint16_t> got = narrowed.host();
    QVERIFY(sameBits(std::vector<std::uint16_t>(got.begin() + 1, got.end()),
                     std::vector<std::uint16_t>(acc.begin() + 1, acc.end())));
    // A 16-bit gradient's sum of squares, each element widened (the NaN and infinity dropped).
    const std::vector<std::uint16_t> finite(acc.begin() + 3, acc.end());
    DeviceVector<std::uint16_t> dlow(finite);
    DeviceVector<double> lowSum(std::vector<double>{0.0});
    cuda::addSumOfSquares(lowSum.get(), dlow.get(), n - 3, type, nullptr);
    const double cpuLow = kernels::sumOfSquaresAny(finite.data(), n - 3, type);
    QVERIFY(std::fabs(lowSum.host()[0] - cpuLow) <= 1e-12 * cpuLow);
  }
  const Floats g = randomFloats(1 << 20, 24);
  DeviceVector<float> dg(g);
  DeviceVector<double> sum(std::vector<double>{1.5});
  cuda::addSumOfSquares(sum.get(), dg.get(), static_cast<long>(g.size()), DType::F32, nullptr);
  const double cpu = 1.5 + kernels::sumOfSquares(g.data(), static_cast<long>(g.size()));
  QVERIFY(std::fabs(sum.host()[0] - cpu) <= 1e-12 * cpu);
}

// GPT-2-small's MLP product shapes. fp32 without TF32: the same sums in another order, each
// element within 2e-6 of the sum of its terms' magnitudes (worstAgainstBound). An element near
// zero is a sum that cancels, and 1.5 million of them are checked, so a relative bound on the
// element itself fails there without a fault; f32 in another order is expected near 1e-7 of the
// bound, while TF32's 10-bit inputs would miss it several times over. bf16: against the CPU's
// f32 product of the bf16-rounded inputs, within bf16's 1.6e-2.
void TestCudaKernels::matmulMatchesTheCpu() {
  REQUIRE_DEVICE("the kernels are built");
  const int N = 512, C = 768, OC = 3072;
  const Floats x = randomFloats(N * C, 30), w = randomFloats(OC * C, 31, 0.02f),
               bias = randomFloats(OC, 32, 0.02f), dout = randomFloats(N * OC, 33, 0.01f);
  Floats out(N * OC), dx(N * C), dw(OC * C, 0.5f), db(OC, 0.25f);
  kernels::matmulForward(out.data(), x.data(), w.data(), bias.data(), N, C, OC);
  kernels::matmulBackward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), N, C,
                          OC);
  cuda::Blas blas(nullptr, cuda::GemmPrecision::F32);
  DeviceVector<float> gx(x), gw(w), gbias(bias), gdout(dout), gout{Floats(N * OC)},
      gdx{Floats(N * C)}, gdw{Floats(OC * C, 0.5f)}, gdb{Floats(OC, 0.25f)};
  blas.matmulForward(gout.get(), gx.get(), gw.get(), gbias.get(), N, C, OC);
  blas.matmulBackward(gdx.get(), gdw.get(), gdout.get(), gx.get(), gw.get(), N, C, OC, false);
  cuda::biasBackward(gdb.get(), gdout.get(), N, OC, nullptr);
  // Overwritten, the weight gradient's NaNs are not read.
  DeviceVector<float> gdwOver{Floats(OC * C, std::numeric_limits<float>::quiet_NaN())};
  blas.matmulBackward(nullptr, gdwOver.get(), gdout.get(), gx.get(), gw.get(), N, C, OC, true);
  // The bounds: the same products of the inputs' magnitudes (the weight gradient's initial 0.5
  // and the bias gradient's 0.25 added as they are).
  Floats outBound(N * OC), dxBound(N * C), dwBound(OC * C, 0.5f), dbBound(OC, 0.25f);
  kernels::matmulForward(outBound.data(), magnitudes(x).data(), magnitudes(w).data(),
                         magnitudes(bias).data(), N, C, OC);
  kernels::matmulBackward(dxBound.data(), dwBound.data(), dbBound.data(), magnitudes(dout).data(),
                          magnitudes(x).data(), magnitudes(w).data(), N, C, OC);
  VERIFY_WITHIN(worstAgainstBound(gout.host(), out, outBound, 2e-6), "forward");
  VERIFY_WITHIN(worstAgainstBound(gdx.host(), dx, dxBound, 2e-6), "input gradient");
  VERIFY_WITHIN(worstAgainstBound(gdw.host(), dw, dwBound, 2e-6), "weight gradient");
  Floats dwOver(OC * C, std::numeric_limits<float>::quiet_NaN()), dwOverBound(OC * C);
  kernels::matmulBackward(static_cast<float*>(nullptr), dwOver.data(), static_cast<float*>(nullptr),
                          dout.data(), x.data(), w.data(), N, C, OC,
                          kernels::WeightGradient::Overwrite);
  kernels::matmulBackward(static_cast<float*>(nullptr), dwOverBound.data(),
                          static_cast<float*>(nullptr), magnitudes(dout).data(),
                          magnitudes(x).data(), magnitudes(w).data(), N, C, OC,
                          kernels::WeightGradient::Overwrite);
  VERIFY_WITHIN(worstAgainstBound(gdwOver.host(), dwOver, dwOverBound, 2e-6),
                "weight gradient, overwritten");
  QVERIFY(sameBits(gdb.host(), db));  // a column sum in the CPU's order

  for (const DType type : {DType::BF16, DType::F16}) {
    auto rounded = [type](const Floats& v) {
      std::vector<std::uint16_t> h(v.size());
      kernels::narrow(v.data(), h.data(), static_cast<long>(v.size()), type);
      return h;
    };
    auto widened = [type](const std::vector<std::uint16_t>& h) {
      Floats v(h.size());
      kernels::widen(h.data(), v.data(), static_cast<long>(h.size()), type);
      return v;
    };
    const std::vector<std::uint16_t> x16 = rounded(x), w16 = rounded(w), b16 = rounded(bias);
    Floats ref(N * OC);
    kernels::matmulForward(ref.data(), widened(x16).data(), widened(w16).data(),
                           widened(b16).data(), N, C, OC);
    cuda::Blas half(nullptr,
                    type == DType::BF16 ? cuda::GemmPrecision::BF16 : cuda::GemmPrecision::F16);
    DeviceVector<std::uint16_t> hx(x16), hw(w16), hb(b16), hout{std::vector<std::uint16_t>(N * OC)};
    half.matmulForward(hout.get(), hx.get(), hw.get(), hb.get(), N, C, OC);
    VERIFY_WITHIN(worst(widened(hout.host()), ref, 1.6e-2, 1e-3), "16-bit forward");

    // Mixed precision's products: f32 storage, the inputs taken as 16-bit on the tensor cores.
    // On inputs that are 16-bit values already the product is the f32 one in another order
    // (1e-5 of the bound allows the tensor cores' accumulation); on f32 inputs each is rounded
    // first, within the 16-bit type's unit roundoff of the bound (2^-8 for bf16, 2^-11 fp16).
    cuda::Blas via(nullptr, type == DType::BF16 ? cuda::GemmPrecision::F32ViaBF16
                                                : cuda::GemmPrecision::F32ViaF16);
    DeviceVector<float> vx(widened(x16)), vw(widened(w16)), vb(widened(b16)), vout{Floats(N * OC)};
    via.matmulForward(vout.get(), vx.get(), vw.get(), vb.get(), N, C, OC);
    VERIFY_WITHIN(worstAgainstBound(vout.host(), ref, outBound, 1e-5), "16-bit inputs, f32 out");
    DeviceVector<float> fx(x), fw(w), fb(bias), fout{Floats(N * OC)};
    via.matmulForward(fout.get(), fx.get(), fw.get(), fb.get(), N, C, OC);
    VERIFY_WITHIN(
        worstAgainstBound(fout.host(), out, outBound, type == DType::BF16 ? 0x1p-8 : 0x1p-11),
        "f32 inputs rounded on the tensor cores");
  }
}

// The fused attention kernels against attention.cpp (BLAS row blocks), fp32: outputs, row
// statistics and gradients each within 1e-5 of the tensor's largest magnitude (normwise: their
// sums cancel, and rounding is absolute); each sums in its own order.
// Backward runs from the CPU's statistics and output, so that only its own sums differ. Head
// sizes 64 (GPT-2's) and 48 (padded to 64), lengths across the kernels' tiles.
void TestCudaKernels::attentionMatchesTheCpu() {
  REQUIRE_DEVICE("the kernels are built");
  struct Shape {
    int B, T, C, NH;
  };
  for (const Shape& sh : {Shape{2, 128, 256, 4}, Shape{3, 75, 96, 2}, Shape{1, 33, 256, 2}}) {
    const int B = sh.B, T = sh.T, C = sh.C, NH = sh.NH;
    const QString shape = QString("B=%1 T=%2 C=%3 NH=%4").arg(B).arg(T).arg(C).arg(NH);
    const Floats qkv = randomFloats(B * T * 3 * C, 34 + T), dout = randomFloats(B * T * C, 35 + T);
    Floats out(B * T * C), stats(B * NH * T * 2), dqkv(B * T * 3 * C);
    Floats scratch(static_cast<std::size_t>(kernels::attentionScratch(T, C / NH, true)));
    kernels::attentionForward(out.data(), stats.data(), scratch.data(), qkv.data(), B, T, C, NH);
    kernels::attentionBackward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), stats.data(),
                               B, T, C, NH);
    DeviceVector<float> gqkv(qkv), gdout(dout), gout{Floats(out.size())},
        gstats{Floats(stats.size())}, gdqkv{Floats(dqkv.size(), 7.0f)};  // dqkv is overwritten
    cuda::attentionForward(gout.get(), gstats.get(), gqkv.get(), B, T, C, NH, nullptr);
    VERIFY_WITHIN(worstNormwise(gout.host(), out, 1e-5), qPrintable("output, " + shape));
    VERIFY_WITHIN(worstNormwise(gstats.host(), stats, 1e-5), qPrintable("statistics, " + shape));
    DeviceVector<float> cpuOut(out), cpuStats(stats);
    cuda::attentionBackward(gdqkv.get(), gdout.get(), gqkv.get(), cpuOut.get(), cpuStats.get(), B,
                            T, C, NH, nullptr);
    VERIFY_WITHIN(worstNormwise(gdqkv.host(), dqkv, 1e-5), qPrintable("qkv gradient, " + shape));
  }
}

// The kernels' threads run core/kernels/flash_attention.h's arithmetic over the tiles that
// tests/flash_attention_reference.h runs on the host, both without multiply-add contraction: the
// same bits, for every element (head sizes 64, 48 padded to 64, 16 padded to 32, and 128).
void TestCudaKernels::attentionIsTheReferencesBits() {
  REQUIRE_DEVICE("the kernels are built");
  struct Shape {
    int B, T, C, NH;
  };
  for (const Shape& sh :
       {Shape{2, 128, 256, 4}, Shape{3, 75, 96, 2}, Shape{2, 33, 48, 3}, Shape{1, 41, 256, 2}}) {
    const int B = sh.B, T = sh.T, C = sh.C, NH = sh.NH;
    const QString shape = QString("B=%1 T=%2 C=%3 NH=%4").arg(B).arg(T).arg(C).arg(NH);
    const Floats qkv = randomFloats(B * T * 3 * C, 44 + T), dout = randomFloats(B * T * C, 45 + T);
    Floats out(B * T * C), stats(B * NH * T * 2), dqkv(B * T * 3 * C);
    flashref::attentionForward(out.data(), stats.data(), qkv.data(), B, T, C, NH);
    flashref::attentionBackward(dqkv.data(), dout.data(), qkv.data(), out.data(), stats.data(), B,
                                T, C, NH);
    DeviceVector<float> gqkv(qkv), gdout(dout), gout{Floats(out.size())},
        gstats{Floats(stats.size())}, gdqkv{Floats(dqkv.size(), 7.0f)};
    cuda::attentionForward(gout.get(), gstats.get(), gqkv.get(), B, T, C, NH, nullptr);
    cuda::attentionBackward(gdqkv.get(), gdout.get(), gqkv.get(), gout.get(), gstats.get(), B, T, C,
                            NH, nullptr);
    QVERIFY2(gout.host() == out, qPrintable("output, " + shape));
    QVERIFY2(gstats.host() == stats, qPrintable("statistics, " + shape));
    QVERIFY2(gdqkv.host() == dqkv, qPrintable("qkv gradient, " + shape));
  }
}

// Heads wider than the kernels take are refused with the reason, before any launch.
void TestCudaKernels::attentionRefusesAWideHead() {
  try {
    cuda::attentionForward(nullptr, nullptr, nullptr, 1, 4, 2 * 136, 2, nullptr);
    QFAIL("a head of 136 was accepted");
  } catch (const cuda::CudaError& e) {
    QCOMPARE(std::string(e.what()), std::string("attention_forward: head size 136 is above 128"));
  }
}

void TestCudaKernels::refusesAWideType() {
  try {
    cuda::narrow(nullptr, nullptr, 0, DType::F32, nullptr);
    QFAIL("narrow to f32 was accepted");
  } catch (const cuda::CudaError& e) {
    QCOMPARE(std::string(e.what()),
             std::string("narrow: 16-bit type must be bf16 or fp16, got f32"));
  }
}

// A step's tensors take device memory once; later steps take none, and the device's free memory
// stays where the first step left it (the gpu suites run one at a time: another process's
// allocations would move it). Zeroing and copies go through the device.
void TestCudaKernels::allocatorCachesDeviceMemory() {
  REQUIRE_DEVICE("the kernels are built");
  Allocator a(cuda::deviceMemory(0));
  auto step = [&] {
    Tensor w = Tensor::zeros({1000}, DType::F32, MemoryCategory::Parameter, a);
    Tensor x = Tensor::empty({3, 1 << 20}, DType::BF16, MemoryCategory::Activation, a);
    Tensor host = Tensor::empty({1000}, DType::F32, MemoryCategory::Workspace);
    host.copyFrom(w);
    QCOMPARE(host.data<float>()[999], 0.0f);
  };
  step();
  const std::int64_t fresh = a.freshBlocks();
  QCOMPARE(fresh, 2);
  std::size_t freeBefore = 0, freeAfter = 0, total = 0;
  check(cudaMemGetInfo(&freeBefore, &total), "cudaMemGetInfo");
  for (int i = 0; i < 10; ++i) step();
  check(cudaMemGetInfo(&freeAfter, &total), "cudaMemGetInfo");
  QCOMPARE(a.freshBlocks(), fresh);
  QCOMPARE(freeAfter, freeBefore);
  QCOMPARE(a.peakBytes(MemoryCategory::Activation), std::int64_t{6} << 20);
  a.releaseCached();
  QCOMPARE(a.cachedBytes(), 0);
}

void TestCudaKernels::refusesAMissingDevice() {
  const int count = cuda::deviceCount();
  try {
    cuda::deviceMemory(count);
    QFAIL("a device past the last was accepted");
  } catch (const UserError& e) {
    QCOMPARE(std::string(e.what()), "device memory: CUDA device " + std::to_string(count) +
                                        " does not exist (" + std::to_string(count) + " visible)");
  }
}

QTEST_GUILESS_MAIN(TestCudaKernels)
#include "test_cuda_kernels.moc"
