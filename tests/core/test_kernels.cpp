// Every kernel's backward against central finite differences in double precision, plus the
// float fast paths (exp, tanh) against the standard library and the optimizer against
// hand-computed steps; and that the products run the library PARASCOPE_SGEMM asks for, with the
// kernels OPENBLAS_CORETYPE or DNNL_MAX_CPU_ISA ask for.
#include <QtTest>

#include <cblas.h>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "core/kernels/adamw.h"
#include "core/kernels/attention.h"
#include "core/kernels/blas.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/grad_clip.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/math.h"
#include "core/kernels/matmul.h"
#include "core/kernels/residual.h"
#include "core/kernels/sgemm_library.h"
#include "gradcheck.h"
#include "tests/flash_attention_reference.h"

using namespace parascope::kernels;
using parascope::testing::dot;
using parascope::testing::expectGradient;
using parascope::testing::randomVector;
using Vec = std::vector<double>;

class TestKernels : public QObject {
  Q_OBJECT
 private slots:
  void matmulGradients();
  void weightGradientOfWideOutputsAddsEveryRow();
  void weightGradientOverwritesWhatItHeld();
  void embeddingGradients();
  void layernormGradients();
  void residualLayernormIsBothKernelsToTheBit();
  void geluGradients();
  void attentionGradients();
  void attentionIsCausal();
  void attentionBlocksMatchNaiveReference();
  void fusedAttentionMathMatchesTheBlocks();
  void attentionEveryLevelMatchesTheNaiveReference();
  void attentionIgnoresWhatItsScratchHeld();
  void residualGradients();
  void crossEntropyGradients();
  void crossEntropyValue();
  void fastMathMatchesLibrary();
  void everyCpuLevelComputesTheBaselinesBits();
  void productWithBiasMatchesDouble();
  void adamwMatchesHandComputedStep();
  void clipFactorFollowsTorch();
  void openblasRunsForcedCoreType();
  void productsRunTheForcedLibraryAndKernels();
  void productsHoldSignalsBack();
  void sgemmLibraryNamesAreCheckedAgainstTheBuild();
};

void TestKernels::matmulGradients() {
  const int N = 5, C = 4, OC = 3;
  Vec x = randomVector(N * C, 1), w = randomVector(OC * C, 2), b = randomVector(OC, 3);
  const Vec R = randomVector(N * OC, 4);
  auto loss = [&] {
    Vec out(N * OC);
    matmulForward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
    return dot(out, R);
  };
  Vec dx(N * C), dw(OC * C, 0.0), db(OC, 0.0);
  matmulBackward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(), N, C, OC);
  expectGradient("matmul dinp", x, dx, loss);
  expectGradient("matmul dweight", w, dw, loss);
  expectGradient("matmul dbias", b, db, loss);
  // Parameter gradients accumulate: a second backward doubles them.
  matmulBackward<double>(nullptr, dw.data(), db.data(), R.data(), x.data(), w.data(), N, C, OC);
  Vec dw1(OC * C, 0.0), db1(OC, 0.0);
  matmulBackward<double>(nullptr, dw1.data(), db1.data(), R.data(), x.data(), w.data(), N, C, OC);
  for (int i = 0; i < OC; ++i) QCOMPARE(db[i], 2 * db1[i]);
}

// Outputs a multiple of 128 wide take the weight gradient through spaced copies of 256 rows at a
// time (matmul.cpp): rows across and past those blocks (N = 600), added to the gradient there
// already, in float against the sum in double within 1e-5 of the largest magnitude; 1000 takes the
// direct product. The bias gradient, summed block by block there, has the bits of one pass over
// all rows.
void TestKernels::weightGradientOfWideOutputsAddsEveryRow() {
  const int N = 600, C = 24;
  for (const int OC : {1024, 2048, 384, 1000}) {
    const Vec dout = randomVector(static_cast<std::size_t>(N) * OC, 40 + OC);
    const Vec inp = randomVector(static_cast<std::size_t>(N) * C, 41);
    const Vec before = randomVector(static_cast<std::size_t>(OC) * C, 42);
    const std::vector<float> fdout(dout.begin(), dout.end()), finp(inp.begin(), inp.end());
    std::vector<float> dw(before.begin(), before.end()), db(OC, 0.5f), onePass(OC, 0.5f);
    matmulBackward(static_cast<float*>(nullptr), dw.data(), db.data(), fdout.data(), finp.data(),
                   static_cast<const float*>(nullptr), N, C, OC);
    addColumnSums(onePass.data(), fdout.data(), N, OC);
    QVERIFY2(std::memcmp(db.data(), onePass.data(), OC * sizeof(float)) == 0,
             qPrintable(QString("OC=%1: the bias gradient").arg(OC)));
    Vec want = before;
    double largest = 0;
    for (int o = 0; o < OC; ++o) {
      for (int c = 0; c < C; ++c) {
        double sum = 0;
        for (int n = 0; n < N; ++n)
          sum += dout[static_cast<std::size_t>(n) * OC + o] * inp[n * C + c];
        want[static_cast<std::size_t>(o) * C + c] += sum;
        largest = std::max(largest, std::fabs(want[static_cast<std::size_t>(o) * C + c]));
      }
    }
    for (std::size_t i = 0; i < want.size(); ++i) {
      QVERIFY2(std::fabs(dw[i] - want[i]) <= 1e-5 * largest,
               qPrintable(QString("OC=%1: element %2 is %3, in double %4")
                              .arg(OC)
                              .arg(i)
                              .arg(dw[i])
                              .arg(want[i])));
    }
  }
}

// A step's first weight gradient overwrites memory nobody zeroed: into NaNs it has the bits of
// adding into zeros, by the direct product (OC 1000) and by the spaced copies (OC 384), with the
// bias gradient still added to what it held; with no rows it is zero.
void TestKernels::weightGradientOverwritesWhatItHeld() {
  const int C = 24;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const int OC : {1000, 384}) {
    for (const int N : {600, 0}) {
      const Vec dout = randomVector(static_cast<std::size_t>(N) * OC, 50 + OC);
      const Vec inp = randomVector(static_cast<std::size_t>(N) * C, 51);
      const std::vector<float> fdout(dout.begin(), dout.end()), finp(inp.begin(), inp.end());
      const auto n = static_cast<std::size_t>(OC) * C;
      std::vector<float> added(n, 0.0f), addedBias(OC, 0.5f);
      std::vector<float> written(n, nan), writtenBias(OC, 0.5f);
      matmulBackward(static_cast<float*>(nullptr), added.data(), addedBias.data(), fdout.data(),
                     finp.data(), static_cast<const float*>(nullptr), N, C, OC);
      matmulBackward(static_cast<float*>(nullptr), written.data(), writtenBias.data(), fdout.data(),
                     finp.data(), static_cast<const float*>(nullptr), N, C, OC,
                     WeightGradient::Overwrite);
      const QString where = QString("OC=%1 N=%2").arg(OC).arg(N);
      QVERIFY2(std::memcmp(written.data(), added.data(), n * sizeof(float)) == 0,
               qPrintable(where + ": the weight gradient"));
      QVERIFY2(std::memcmp(writtenBias.data(), addedBias.data(), OC * sizeof(float)) == 0,
               qPrintable(where + ": the bias gradient"));
      if (N == 0) QVERIFY2(written[n - 1] == 0.0f, qPrintable(where));
    }
  }
}

// The float forward with a bias (oneDNN's matmul adding it in its epilogue, or the fill and sgemm
// on OpenBLAS), at shapes with no multiple of a vector width, at GPT-mini's and with no rows
// (oneDNN's matmul would divide by zero), against double within 1e-5 of the largest magnitude;
// without a bias, the product alone.
void TestKernels::productWithBiasMatchesDouble() {
  struct Shape {
    int N, C, OC;
  };
  for (const Shape& sh :
       {Shape{37, 23, 19}, Shape{1024, 256, 768}, Shape{5, 1024, 256}, Shape{0, 23, 19}}) {
    const auto count = [](int a, int b) { return static_cast<std::size_t>(a) * b; };
    const Vec x = randomVector(count(sh.N, sh.C), 50), w = randomVector(count(sh.OC, sh.C), 51),
              b = randomVector(sh.OC, 52, 4.0);
    const std::vector<float> fx(x.begin(), x.end()), fw(w.begin(), w.end()), fb(b.begin(), b.end());
    for (const bool biased : {true, false}) {
      std::vector<float> out(count(sh.N, sh.OC), std::nanf(""));
      matmulForward(out.data(), fx.data(), fw.data(), biased ? fb.data() : nullptr, sh.N, sh.C,
                    sh.OC);
      Vec want(out.size());
      double largest = 0;
      for (int n = 0; n < sh.N; ++n) {
        for (int o = 0; o < sh.OC; ++o) {
          double sum = biased ? double(fb[o]) : 0.0;
          for (int c = 0; c < sh.C; ++c)
            sum += double(fx[count(n, sh.C) + c]) * double(fw[count(o, sh.C) + c]);
          want[count(n, sh.OC) + o] = sum;
          largest = std::max(largest, std::fabs(sum));
        }
      }
      for (std::size_t i = 0; i < want.size(); ++i) {
        QVERIFY2(std::fabs(out[i] - want[i]) <= 1e-5 * largest,
                 qPrintable(QString("%1 x %2 x %3%4: element %5 is %6, in double %7")
                                .arg(sh.N)
                                .arg(sh.C)
                                .arg(sh.OC)
                                .arg(biased ? " with a bias" : "")
                                .arg(i)
                                .arg(out[i])
                                .arg(want[i])));
      }
    }
  }
}

void TestKernels::embeddingGradients() {
  const int B = 2, T = 3, C = 4, V = 5;
  const std::vector<std::int32_t> tokens = {1, 4, 1, 0, 2, 2};  // repeats accumulate
  Vec wte = randomVector(V * C, 5), wpe = randomVector(T * C, 6);
  const Vec R = randomVector(B * T * C, 7);
  auto loss = [&] {
    Vec out(B * T * C);
    embeddingForward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return dot(out, R);
  };
  Vec dwte(V * C, 0.0), dwpe(T * C, 0.0);
  embeddingBackward(dwte.data(), dwpe.data(), R.data(), tokens.data(), B, T, C);
  expectGradient("embedding dwte", wte, dwte, loss);
  expectGradient("embedding dwpe", wpe, dwpe, loss);
}

void TestKernels::layernormGradients() {
  const int N = 4, C = 7;
  Vec x = randomVector(N * C, 8, 2.0), w = randomVector(C, 9), b = randomVector(C, 10);
  const Vec R = randomVector(N * C, 11);
  auto loss = [&] {
    Vec out(N * C), mean(N), rstd(N);
    layernormForward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    return dot(out, R);
  };
  Vec out(N * C), mean(N), rstd(N);
  layernormForward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  Vec dx(N * C), dw(C, 0.0), db(C, 0.0);
  layernormBackward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(), mean.data(),
                    rstd.data(), N, C);
  expectGradient("layernorm dinp", x, dx, loss);
  expectGradient("layernorm dweight", w, dw, loss);
  expectGradient("layernorm dbias", b, db, loss);
}

// The fused residual + layernorm, forward and backward, against the two kernels run one after
// the other: the same bits in float, on a width that vectorises and on one that leaves a tail.
void TestKernels::residualLayernormIsBothKernelsToTheBit() {
  for (const int C : {256, 37}) {
    const int N = 9;
    auto floats = [](const Vec& v) { return std::vector<float>(v.begin(), v.end()); };
    const std::vector<float> a = floats(randomVector(N * C, 20, 2.0)),
                             b = floats(randomVector(N * C, 21, 2.0)),
                             w = floats(randomVector(C, 22)), bias = floats(randomVector(C, 23)),
                             dout = floats(randomVector(N * C, 24)),
                             dres = floats(randomVector(N * C, 25));
    std::vector<float> sum(N * C), out(N * C), mean(N), rstd(N);
    residualForward(sum.data(), a.data(), b.data(), static_cast<long>(N) * C);
    layernormForward(out.data(), mean.data(), rstd.data(), sum.data(), w.data(), bias.data(), N, C);
    std::vector<float> fusedSum(b), fusedOut(N * C), fusedMean(N), fusedRstd(N);
    // The sum written over b, as the model's block does.
    residualLayernormForward(fusedSum.data(), fusedOut.data(), fusedMean.data(), fusedRstd.data(),
                             a.data(), fusedSum.data(), w.data(), bias.data(), N, C);
    QCOMPARE(std::memcmp(fusedSum.data(), sum.data(), sum.size() * sizeof(float)), 0);
    QCOMPARE(std::memcmp(fusedOut.data(), out.data(), out.size() * sizeof(float)), 0);
    QCOMPARE(std::memcmp(fusedMean.data(), mean.data(), N * sizeof(float)), 0);
    QCOMPARE(std::memcmp(fusedRstd.data(), rstd.data(), N * sizeof(float)), 0);

    std::vector<float> dx(N * C), dw(C, 0.0f), db(C, 0.0f);
    layernormBackward(dx.data(), dw.data(), db.data(), dout.data(), sum.data(), w.data(),
                      mean.data(), rstd.data(), N, C);
    residualForward(dx.data(), dx.data(), dres.data(), static_cast<long>(N) * C);
    std::vector<float> fusedDx(N * C), fusedDw(C, 0.0f), fusedDb(C, 0.0f);
    layernormBackward(fusedDx.data(), fusedDw.data(), fusedDb.data(), dout.data(), sum.data(),
                      w.data(), mean.data(), rstd.data(), N, C, dres.data());
    QCOMPARE(std::memcmp(fusedDx.data(), dx.data(), dx.size() * sizeof(float)), 0);
    QCOMPARE(std::memcmp(fusedDw.data(), dw.data(), C * sizeof(float)), 0);
    QCOMPARE(std::memcmp(fusedDb.data(), db.data(), C * sizeof(float)), 0);
    QVERIFY(dx != std::vector<float>(N * C, 0.0f));
  }
}

void TestKernels::geluGradients() {
  const int N = 33;
  Vec x = randomVector(N, 12, 3.0);
  const Vec R = randomVector(N, 13);
  auto loss = [&] {
    Vec out(N);
    geluForward(out.data(), x.data(), N);
    return dot(out, R);
  };
  Vec dx(N);
  geluBackward(dx.data(), x.data(), R.data(), N);
  expectGradient("gelu", x, dx, loss);
}

void TestKernels::attentionGradients() {
  const int B = 2, T = 5, C = 6, NH = 2;
  Vec qkv = randomVector(B * T * 3 * C, 14);
  const Vec R = randomVector(B * T * C, 15);
  auto loss = [&] {
    Vec out(B * T * C), stats(B * NH * T * 2),
        scratch(static_cast<std::size_t>(attentionScratch(T, C / NH, false)));
    attentionForward(out.data(), stats.data(), scratch.data(), qkv.data(), B, T, C, NH);
    return dot(out, R);
  };
  Vec out(B * T * C), stats(B * NH * T * 2),
      scratch(static_cast<std::size_t>(attentionScratch(T, C / NH, true))), dqkv(qkv.size());
  attentionForward(out.data(), stats.data(), scratch.data(), qkv.data(), B, T, C, NH);
  attentionBackward(dqkv.data(), scratch.data(), R.data(), qkv.data(), stats.data(), B, T, C, NH);
  expectGradient("attention dqkv", qkv, dqkv, loss);
}

void TestKernels::attentionIsCausal() {
  // Changing a later position's key or value never changes an earlier position's output.
  const int B = 1, T = 4, C = 4, NH = 2;
  Vec qkv = randomVector(T * 3 * C, 16);
  Vec out1(T * C), out2(T * C), stats1(NH * T * 2), stats2(NH * T * 2),
      scratch(static_cast<std::size_t>(attentionScratch(T, C / NH, false)));
  attentionForward(out1.data(), stats1.data(), scratch.data(), qkv.data(), B, T, C, NH);
  for (int i = C; i < 3 * C; ++i) qkv[3 * 3 * C + i] += 1.0;  // k, v of position 3
  attentionForward(out2.data(), stats2.data(), scratch.data(), qkv.data(), B, T, C, NH);
  for (int i = 0; i < 3 * C; ++i) QCOMPARE(out1[i], out2[i]);
  QVERIFY(out1[3 * C] != out2[3 * C]);
  // Row 0 sees only itself: its maximum is its own score and its one exponential is 1.
  for (int h = 0; h < NH; ++h) QCOMPARE(stats1[static_cast<std::size_t>(h * T * 2 + 1)], 1.0);
  for (int i = 0; i < 3 * 2 * NH; ++i) {
    const std::size_t r = static_cast<std::size_t>(i / 6 * T * 2 + i % 6);  // rows 0-2 per head
    QCOMPARE(stats1[r], stats2[r]);
  }
}

// Straightforward causal attention in double, no BLAS, no blocking: out and dqkv for dout.
void naiveAttention(const Vec& qkv, const Vec& dout, int B, int T, int C, int NH, Vec& out,
                    Vec& dqkv) {
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  out.assign(static_cast<std::size_t>(B * T * C), 0.0);
  dqkv.assign(qkv.size(), 0.0);
  auto at = [&](int b, int t, int part, int h, int i) {
    return static_cast<std::size_t>((b * T + t) * 3 * C + part * C + h * hs + i);
  };
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        std::vector<double> p(static_cast<std::size_t>(t + 1));
        double maxv = -1e300, sum = 0;
        for (int j = 0; j <= t; ++j) {
          double s = 0;
          for (int i = 0; i < hs; ++i) s += qkv[at(b, t, 0, h, i)] * qkv[at(b, j, 1, h, i)];
          p[static_cast<std::size_t>(j)] = s * scale;
          maxv = std::max(maxv, s * scale);
        }
        for (double& x : p) sum += (x = std::exp(x - maxv));
        for (double& x : p) x /= sum;
        const double* d = &dout[static_cast<std::size_t>((b * T + t) * C + h * hs)];
        std::vector<double> dp(p.size(), 0.0);
        double dot = 0;
        for (int j = 0; j <= t; ++j) {
          for (int i = 0; i < hs; ++i) {
            out[static_cast<std::size_t>((b * T + t) * C + h * hs + i)] +=
                p[static_cast<std::size_t>(j)] * qkv[at(b, j, 2, h, i)];
            dp[static_cast<std::size_t>(j)] += d[i] * qkv[at(b, j, 2, h, i)];
            dqkv[at(b, j, 2, h, i)] += p[static_cast<std::size_t>(j)] * d[i];
          }
          dot += p[static_cast<std::size_t>(j)] * dp[static_cast<std::size_t>(j)];
        }
        for (int j = 0; j <= t; ++j) {
          const double ds =
              p[static_cast<std::size_t>(j)] * (dp[static_cast<std::size_t>(j)] - dot);
          for (int i = 0; i < hs; ++i) {
            dqkv[at(b, t, 0, h, i)] += scale * ds * qkv[at(b, j, 1, h, i)];
            dqkv[at(b, j, 1, h, i)] += scale * ds * qkv[at(b, t, 0, h, i)];
          }
        }
      }
    }
  }
}

void TestKernels::attentionBlocksMatchNaiveReference() {
  // Lengths around and across the kernel's row blocks, including a partial last block.
  for (int T : {1, 31, 32, 33, 75}) {
    const int B = 2, C = 8, NH = 2;
    const Vec qkv = randomVector(static_cast<std::size_t>(B * T * 3 * C), 30 + T);
    const Vec dout = randomVector(static_cast<std::size_t>(B * T * C), 60 + T);
    Vec out(static_cast<std::size_t>(B * T * C)), stats(static_cast<std::size_t>(B * NH * T * 2));
    Vec scratch(static_cast<std::size_t>(attentionScratch(T, C / NH, true)));
    Vec dqkv(qkv.size(), 123.0);  // overwritten
    attentionForward(out.data(), stats.data(), scratch.data(), qkv.data(), B, T, C, NH);
    attentionBackward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), stats.data(), B, T, C,
                      NH);
    Vec refOut, refDqkv;
    naiveAttention(qkv, dout, B, T, C, NH, refOut, refDqkv);
    for (std::size_t i = 0; i < out.size(); ++i) QVERIFY(std::fabs(out[i] - refOut[i]) < 1e-12);
    for (std::size_t i = 0; i < dqkv.size(); ++i) {
      QVERIFY2(std::fabs(dqkv[i] - refDqkv[i]) < 1e-12,
               qPrintable(QString("T=%1 i=%2").arg(T).arg(i)));
    }
  }
}

// The GPU's fused attention, its rows and tiles run here (tests/flash_attention_reference.h),
// against the CPU's row blocks in f32: output, statistics and the qkv gradient (from the blocks'
// own output and statistics) each within 1e-5 of the tensor's largest magnitude. Elementwise
// bounds would fail without a fault: an output is a weighted sum of values that can cancel, and
// both sides' rounding (about 6e-7 of the values' magnitude here against a double run) is
// absolute. Head sizes 64, 48 and 16 (padded to 64 and 32) and 128 (tiles of 8), lengths across
// the tiles and the 32-row blocks.
void TestKernels::fusedAttentionMathMatchesTheBlocks() {
  struct Shape {
    int B, T, C, NH;
  };
  for (const Shape& sh :
       {Shape{2, 70, 128, 2}, Shape{1, 75, 96, 2}, Shape{2, 33, 48, 3}, Shape{1, 41, 256, 2}}) {
    const int B = sh.B, T = sh.T, C = sh.C, NH = sh.NH;
    auto floats = [](const Vec& v) { return std::vector<float>(v.begin(), v.end()); };
    const std::vector<float> qkv = floats(randomVector(B * T * 3 * C, 70 + T, 2.0));
    const std::vector<float> dout = floats(randomVector(B * T * C, 80 + T));
    std::vector<float> out(B * T * C), stats(B * NH * T * 2), dqkv(qkv.size());
    std::vector<float> scratch(static_cast<std::size_t>(attentionScratch(T, C / NH, true)));
    attentionForward(out.data(), stats.data(), scratch.data(), qkv.data(), B, T, C, NH);
    attentionBackward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), stats.data(), B, T, C,
                      NH);
    std::vector<float> fout(out.size()), fstats(stats.size()), fdqkv(dqkv.size(), 7.0f);
    parascope::flashref::attentionForward(fout.data(), fstats.data(), qkv.data(), B, T, C, NH);
    parascope::flashref::attentionBackward(fdqkv.data(), dout.data(), qkv.data(), out.data(),
                                           stats.data(), B, T, C, NH);
    auto within = [&](const std::vector<float>& got, const std::vector<float>& want,
                      const char* what) {
      double largest = 0;
      for (const float w : want) largest = std::max(largest, std::fabs(double(w)));
      for (std::size_t i = 0; i < want.size(); ++i) {
        QVERIFY2(std::fabs(double(got[i]) - want[i]) <= 1e-5 * largest,
                 qPrintable(QString("%1, T=%2 C=%3: element %4 is %5, the blocks' %6")
                                .arg(what)
                                .arg(T)
                                .arg(C)
                                .arg(i)
                                .arg(got[i])
                                .arg(want[i])));
      }
    };
    within(fout, out, "output");
    within(fstats, stats, "statistics");
    within(fdqkv, dqkv, "qkv gradient");
  }
}

// The float kernel at every level this CPU runs against straightforward attention in double:
// output and qkv gradient each within 1e-5 of the tensor's largest magnitude (the bound
// fusedAttentionMathMatchesTheBlocks explains). Head sizes 64 (read where they lie) and 24 and 5
// (copied, padded to 32 and 16; tiles past the last column), lengths across the 32-row blocks and
// the product tiles' rows. AVX2 and AVX-512 run one multiply-add per term in the same order: the
// same bits.
void TestKernels::attentionEveryLevelMatchesTheNaiveReference() {
  struct Shape {
    int B, T, C, NH;
  };
  for (const Shape& sh : {Shape{2, 70, 128, 2}, Shape{1, 130, 48, 2}, Shape{2, 33, 10, 2},
                          Shape{1, 1, 64, 1}, Shape{2, 7, 72, 3}}) {
    const int B = sh.B, T = sh.T, C = sh.C, NH = sh.NH;
    const Vec qkv = randomVector(B * T * 3 * C, 90 + T, 2.0);
    const Vec dout = randomVector(B * T * C, 91 + T);
    Vec refOut, refDqkv;
    naiveAttention(qkv, dout, B, T, C, NH, refOut, refDqkv);
    const std::vector<float> fqkv(qkv.begin(), qkv.end()), fdout(dout.begin(), dout.end());
    std::vector<std::vector<float>> fma;  // the levels with multiply-adds: out, then dqkv
    for (const CpuLevel level : supportedCpuLevels()) {
      std::vector<float> out(B * T * C), stats(B * NH * T * 2), dqkv(qkv.size(), 7.0f);
      std::vector<float> scratch(static_cast<std::size_t>(attentionScratch(T, C / NH, true)));
      attentionForward(out.data(), stats.data(), scratch.data(), fqkv.data(), B, T, C, NH, level);
      attentionBackward(dqkv.data(), scratch.data(), fdout.data(), fqkv.data(), stats.data(), B, T,
                        C, NH, level);
      const QString where =
          QString("%1, B=%2 T=%3 C=%4 NH=%5").arg(cpuLevelName(level)).arg(B).arg(T).arg(C).arg(NH);
      auto within = [&](const std::vector<float>& got, const Vec& want, const char* what) {
        double largest = 0;
        for (const double w : want) largest = std::max(largest, std::fabs(w));
        for (std::size_t i = 0; i < want.size(); ++i) {
          QVERIFY2(std::fabs(got[i] - want[i]) <= 1e-5 * largest,
                   qPrintable(QString("%1, %2: element %3 is %4, in double %5")
                                  .arg(where, what)
                                  .arg(i)
                                  .arg(got[i])
                                  .arg(want[i])));
        }
      };
      within(out, refOut, "output");
      within(dqkv, refDqkv, "qkv gradient");
      if (level == CpuLevel::Baseline) continue;
      if (fma.empty()) {
        fma = {out, dqkv};
      } else {
        QVERIFY2(out == fma[0] && dqkv == fma[1], qPrintable(where + ": not AVX2's bits"));
      }
    }
  }
}

// The scratch comes from the allocator holding anything, NaNs included (the lanes past a row's
// last key are read whole and masked): at every level the output, statistics and qkv gradient
// are the bits of a run on zeroed scratch. Under UBSan an exponential taken of such a NaN stops
// the test (a NaN cast to an integer).
void TestKernels::attentionIgnoresWhatItsScratchHeld() {
  const int B = 2, T = 45, C = 40, NH = 2;  // heads of 20: copied, padded to 32
  const Vec qkv = randomVector(B * T * 3 * C, 95, 2.0);
  const Vec dout = randomVector(B * T * C, 96);
  const std::vector<float> fqkv(qkv.begin(), qkv.end()), fdout(dout.begin(), dout.end());
  for (const CpuLevel level : supportedCpuLevels()) {
    auto run = [&](float fill) {
      std::vector<float> scratch(static_cast<std::size_t>(attentionScratch(T, C / NH, true)), fill);
      std::vector<float> out(B * T * C), stats(B * NH * T * 2), dqkv(qkv.size());
      attentionForward(out.data(), stats.data(), scratch.data(), fqkv.data(), B, T, C, NH, level);
      std::fill(scratch.begin(), scratch.end(), fill);
      attentionBackward(dqkv.data(), scratch.data(), fdout.data(), fqkv.data(), stats.data(), B, T,
                        C, NH, level);
      out.insert(out.end(), stats.begin(), stats.end());
      out.insert(out.end(), dqkv.begin(), dqkv.end());
      return out;
    };
    const std::vector<float> clean = run(0.0f), dirty = run(std::nanf(""));
    QVERIFY2(std::memcmp(clean.data(), dirty.data(), clean.size() * sizeof(float)) == 0,
             cpuLevelName(level));
  }
}

void TestKernels::residualGradients() {
  const int N = 6;
  Vec a = randomVector(N, 17), b = randomVector(N, 18);
  const Vec R = randomVector(N, 19);
  auto loss = [&] {
    Vec out(N);
    residualForward(out.data(), a.data(), b.data(), N);
    return dot(out, R);
  };
  Vec da(N, 0.0), db(N, 0.0);
  residualBackward(da.data(), db.data(), R.data(), N);
  expectGradient("residual da", a, da, loss);
  expectGradient("residual db", b, db, loss);
}

void TestKernels::crossEntropyGradients() {
  const int N = 4, V = 6;
  Vec logits = randomVector(N * V, 20, 2.0);
  const std::vector<std::int32_t> targets = {0, 5, 2, 2};
  const Vec R = randomVector(N, 21);
  auto loss = [&] {
    Vec losses(N), probs(N * V);
    crossEntropyForward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
    return dot(losses, R);
  };
  Vec losses(N), probs(N * V), dlogits(N * V);
  crossEntropyForward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
  crossEntropyBackward(dlogits.data(), probs.data(), targets.data(), R.data(), N, V);
  expectGradient("cross-entropy dlogits", logits, dlogits, loss);
}

void TestKernels::crossEntropyValue() {
  // Uniform logits: loss is ln V exactly; probabilities alias the logits in place.
  std::vector<float> logits(2 * 8, 3.0f);
  const std::vector<std::int32_t> targets = {1, 7};
  std::vector<float> losses(2);
  crossEntropyForward(losses.data(), logits.data(), logits.data(), targets.data(), 2, 8);
  QVERIFY(std::fabs(losses[0] - std::log(8.0f)) < 1e-6f);
  QVERIFY(std::fabs(logits[5] - 0.125f) < 1e-7f);
}

void TestKernels::fastMathMatchesLibrary() {
  double maxExpRel = 0, maxTanhAbs = 0;
  for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
    const double ref = std::exp(static_cast<double>(x));
    maxExpRel = std::max(maxExpRel, std::fabs(fastExp(x) - ref) / ref);
  }
  for (float u = -12.0f; u < 12.0f; u += 0.00091f) {
    maxTanhAbs = std::max(maxTanhAbs, std::fabs(fastTanh(u) - std::tanh(static_cast<double>(u))));
  }
  QVERIFY2(maxExpRel < 4e-7, qPrintable(QString::number(maxExpRel)));  // ~3 ulp
  QVERIFY2(maxTanhAbs < 3e-7, qPrintable(QString::number(maxTanhAbs)));
  QCOMPARE(fastExp(-200.0f), 0.0f);
  QCOMPARE(fastTanh(0.0f), 0.0f);
}

// GELU, AdamW, attention's softmax, the cross-entropy and the gradient norm run at the CPU's level
// (AVX2, AVX-512) in every build; each level's code must compute the baseline's bits, for every
// element, tails of a vector included, and in place.
void TestKernels::everyCpuLevelComputesTheBaselinesBits() {
  const long N = 4099;  // no multiple of any vector width
  std::vector<float> x(N), dout(N);
  std::uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1 << 24);
  };
  for (long i = 0; i < N; ++i) {
    // Mostly the activations' range, with zeros, tiny and saturating values among them.
    x[i] = i % 97 == 0   ? 0.0f
           : i % 89 == 0 ? 1e-30f
           : i % 83 == 0 ? 60.0f * (next() - 0.5f)
                         : 8.0f * (next() - 0.5f);
    dout[i] = 2.0f * next() - 1.0f;
  }
  std::vector<float> forward(N), backward(N);
  geluForward(forward.data(), x.data(), N, CpuLevel::Baseline);
  geluBackward(backward.data(), x.data(), dout.data(), N, CpuLevel::Baseline);
  QString levels;
  for (const CpuLevel level : supportedCpuLevels()) {
    levels += QString(levels.isEmpty() ? "" : ", ") + cpuLevelName(level);
    std::vector<float> f(N), b = dout;
    geluForward(f.data(), x.data(), N, level);
    geluBackward(b.data(), x.data(), b.data(), N, level);  // in place, as the model calls it
    QVERIFY2(std::memcmp(f.data(), forward.data(), N * sizeof(float)) == 0, cpuLevelName(level));
    QVERIFY2(std::memcmp(b.data(), backward.data(), N * sizeof(float)) == 0, cpuLevelName(level));
  }
  std::vector<float> dispatched(N);
  geluForward(dispatched.data(), x.data(), N);
  QVERIFY(std::memcmp(dispatched.data(), forward.data(), N * sizeof(float)) == 0);

  // Column sums (a bias gradient) over 4099 = 241 x 17 values: columns past a vector's width,
  // rows past whole chunks; and the dispatched kernel.
  const long rows = 241, cols = 17;
  std::vector<float> sums(cols, 0.25f);
  addColumnSums(sums.data(), dout.data(), rows, cols, CpuLevel::Baseline);
  for (long c = 0; c < cols; ++c) {
    double want = 0.25;
    for (long r = 0; r < rows; ++r) want += dout[r * cols + c];
    QVERIFY(std::fabs(sums[c] - want) <= 1e-5 * rows);
  }
  for (const CpuLevel level : supportedCpuLevels()) {
    std::vector<float> got(cols, 0.25f);
    addColumnSums(got.data(), dout.data(), rows, cols, level);
    QVERIFY2(std::memcmp(got.data(), sums.data(), cols * sizeof(float)) == 0, cpuLevelName(level));
  }
  std::vector<float> dispatchedSums(cols, 0.25f);
  addColumnSums(dispatchedSums.data(), dout.data(), rows, cols);
  QVERIFY(std::memcmp(dispatchedSums.data(), sums.data(), cols * sizeof(float)) == 0);

  // Layernorm forward, with the residual before it, and backward (with a residual's gradient, and
  // the weight half alone) over the same 241 rows of 17 (a width past one vector, not two), each
  // level against the baseline's bits; the baseline's forward against double.
  std::vector<float> lnWeight(cols), lnBias(cols);
  for (long c = 0; c < cols; ++c) {
    lnWeight[c] = 0.5f + dout[c];
    lnBias[c] = x[c];
  }
  struct Layernorm {
    std::vector<float> out, mean, rstd, sum, sumOut, sumMean, sumRstd, dinp, dweight, dbias,
        dweightAlone, dbiasAlone;
  };
  const int lnRows = static_cast<int>(rows), lnCols = static_cast<int>(cols);
  auto layernorm = [&](CpuLevel level) {
    const std::size_t n = static_cast<std::size_t>(rows * cols);
    Layernorm r{std::vector<float>(n),          std::vector<float>(rows),
                std::vector<float>(rows),       std::vector<float>(n),
                std::vector<float>(n),          std::vector<float>(rows),
                std::vector<float>(rows),       std::vector<float>(n),
                std::vector<float>(cols, 0.5f), std::vector<float>(cols, 0.5f),
                std::vector<float>(cols, 0.5f), std::vector<float>(cols, 0.5f)};
    layernormForward(r.out.data(), r.mean.data(), r.rstd.data(), x.data(), lnWeight.data(),
                     lnBias.data(), lnRows, lnCols, level);
    residualLayernormForward(r.sum.data(), r.sumOut.data(), r.sumMean.data(), r.sumRstd.data(),
                             x.data(), dout.data(), lnWeight.data(), lnBias.data(), lnRows, lnCols,
                             level);
    layernormBackward(r.dinp.data(), r.dweight.data(), r.dbias.data(), dout.data(), x.data(),
                      lnWeight.data(), r.mean.data(), r.rstd.data(), lnRows, lnCols,
                      r.sumOut.data(), level);
    layernormBackward(nullptr, r.dweightAlone.data(), r.dbiasAlone.data(), dout.data(), x.data(),
                      lnWeight.data(), r.mean.data(), r.rstd.data(), lnRows, lnCols, nullptr,
                      level);
    return r;
  };
  const Layernorm baseline = layernorm(CpuLevel::Baseline);
  QVERIFY(std::memcmp(baseline.dweight.data(), baseline.dweightAlone.data(),
                      cols * sizeof(float)) == 0);
  for (long r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (long c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= cols;
    for (long c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    const double rstd = 1 / std::sqrt(var / cols + 1e-5);
    for (long c = 0; c < cols; ++c) {
      const double want = (x[r * cols + c] - mean) * rstd * lnWeight[c] + lnBias[c];
      QVERIFY(std::fabs(baseline.out[r * cols + c] - want) <= 1e-5 * (1 + std::fabs(want)));
    }
  }
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (const CpuLevel level : supportedCpuLevels()) {
    const Layernorm got = layernorm(level);
    QVERIFY2(same(got.out, baseline.out) && same(got.mean, baseline.mean) &&
                 same(got.rstd, baseline.rstd),
             qPrintable(QString("%1, layernorm forward").arg(cpuLevelName(level))));
    QVERIFY2(same(got.sum, baseline.sum) && same(got.sumOut, baseline.sumOut) &&
                 same(got.sumMean, baseline.sumMean) && same(got.sumRstd, baseline.sumRstd),
             qPrintable(QString("%1, residual and layernorm forward").arg(cpuLevelName(level))));
    QVERIFY2(same(got.dinp, baseline.dinp) && same(got.dweight, baseline.dweight) &&
                 same(got.dbias, baseline.dbias) && same(got.dweightAlone, baseline.dweightAlone) &&
                 same(got.dbiasAlone, baseline.dbiasAlone),
             qPrintable(QString("%1, layernorm backward").arg(cpuLevelName(level))));
  }

  // AdamW's third step from moments already there, the gradient scaled (clipping).
  AdamWHyper h;
  h.lr = 3e-3f;
  h.weightDecay = 0.1f;
  std::vector<float> m0(N), v0(N);
  for (long i = 0; i < N; ++i) {
    m0[i] = 0.1f * dout[i];
    v0[i] = 1e-3f * x[i] * x[i];
  }
  auto adamw = [&](CpuLevel level) {
    std::vector<float> p = x, m = m0, v = v0;
    adamwUpdate(p.data(), dout.data(), m.data(), v.data(), N, h, 3, 0.75f, level);
    p.insert(p.end(), m.begin(), m.end());
    p.insert(p.end(), v.begin(), v.end());
    return p;
  };
  const std::vector<float> updated = adamw(CpuLevel::Baseline);
  for (const CpuLevel level : supportedCpuLevels()) {
    QVERIFY2(std::memcmp(adamw(level).data(), updated.data(), updated.size() * sizeof(float)) == 0,
             cpuLevelName(level));
  }

  // Attention's softmax over row blocks: rows shorter than, equal to and past the sixteen partial
  // sums, with tails, leading dimensions wider than the block, forward (recording each row's
  // maximum and reciprocal) and backward (given them). Each row sums to one and matches softmax in
  // double.
  struct Block {
    int first, rows, cols;
  };
  for (const Block& blk : {Block{0, 18, 18}, Block{99, 31, 130}, Block{4098, 1, 4099}}) {
    const long ld = (blk.cols + 15) / 16 * 16 + 16;
    const int n = blk.first + blk.rows;
    std::vector<float> scores(static_cast<std::size_t>(blk.rows * ld));
    for (int i = 0; i < blk.rows; ++i)
      std::copy(x.begin() + i, x.begin() + i + blk.cols, scores.begin() + i * ld);
    auto run = [&](CpuLevel level, std::vector<float>* record, const std::vector<float>* given) {
      std::vector<float> s = scores;
      softmaxBlock(s.data(), ld, blk.first, blk.rows, blk.cols, record ? record->data() : nullptr,
                   given ? given->data() : nullptr, level);
      return s;
    };
    std::vector<float> stats(2 * n);
    const std::vector<float> want = run(CpuLevel::Baseline, &stats, nullptr);
    const QString where = QString("rows %1 to %2").arg(blk.first).arg(n - 1);
    for (const CpuLevel level : supportedCpuLevels()) {
      std::vector<float> levelStats(2 * n);
      const std::vector<float> got = run(level, &levelStats, nullptr);
      const std::vector<float> again = run(level, nullptr, &stats);
      QVERIFY2(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0 &&
                   std::memcmp(levelStats.data(), stats.data(), stats.size() * sizeof(float)) == 0,
               qPrintable(QString("%1, forward, %2").arg(cpuLevelName(level), where)));
      QVERIFY2(std::memcmp(again.data(), want.data(), want.size() * sizeof(float)) == 0,
               qPrintable(QString("%1, backward, %2").arg(cpuLevelName(level), where)));
    }
    for (int i = 0; i < blk.rows; ++i) {
      const int t = blk.first + i;
      const float* row = want.data() + i * ld;
      double maxv = -1e300, sum = 0, total = 0;
      for (int j = 0; j <= t; ++j) maxv = std::max(maxv, double(scores[i * ld + j]));
      for (int j = 0; j <= t; ++j) sum += std::exp(scores[i * ld + j] - maxv);
      for (int j = 0; j <= t; ++j) {
        QVERIFY(std::fabs(row[j] - std::exp(scores[i * ld + j] - maxv) / sum) <= 1e-6);
        total += row[j];
      }
      for (int j = t + 1; j < blk.cols; ++j) QCOMPARE(row[j], 0.0f);
      QVERIFY2(std::fabs(total - 1) <= 1e-5, qPrintable(where));
    }
  }
  // The gradient norm's sum of squares, lengths around the sixteen lanes.
  for (const long n : {1L, 15L, 16L, 17L, N}) {
    const double want = sumOfSquares(x.data(), n, CpuLevel::Baseline);
    for (const CpuLevel level : supportedCpuLevels()) {
      const double got = sumOfSquares(x.data(), n, level);
      QVERIFY2(std::memcmp(&got, &want, sizeof want) == 0,
               qPrintable(QString("%1, sum of %2 squares").arg(cpuLevelName(level)).arg(n)));
    }
    double exact = 0;
    for (long i = 0; i < n; ++i) exact += double(x[i]) * double(x[i]);
    QVERIFY(std::fabs(want - exact) <= 1e-12 * exact);
  }
  // The cross-entropy's rows, vocabularies shorter than, equal to and past the sixteen lanes,
  // into their own probabilities and in place over the logits, as the model calls it.
  for (const int V : {7, 16, 33, 256}) {
    const int rows = 5;
    std::vector<float> logits(x.begin(), x.begin() + rows * V);
    std::vector<std::int32_t> targets(rows);
    for (int n = 0; n < rows; ++n) targets[n] = (n * 7 + 3) % V;
    std::vector<float> wantLoss(rows), wantProbs(logits.size());
    crossEntropyForward(wantLoss.data(), wantProbs.data(), logits.data(), targets.data(), rows, V,
                        CpuLevel::Baseline);
    for (const CpuLevel level : supportedCpuLevels()) {
      std::vector<float> loss(rows), inPlace = logits;
      crossEntropyForward(loss.data(), inPlace.data(), inPlace.data(), targets.data(), rows, V,
                          level);
      QVERIFY2(
          std::memcmp(loss.data(), wantLoss.data(), rows * sizeof(float)) == 0 &&
              std::memcmp(inPlace.data(), wantProbs.data(), inPlace.size() * sizeof(float)) == 0,
          qPrintable(QString("%1, cross-entropy over %2").arg(cpuLevelName(level)).arg(V)));
    }
    for (int n = 0; n < rows; ++n) {
      double maxv = -1e300, sum = 0;
      for (int v = 0; v < V; ++v) maxv = std::max(maxv, double(logits[n * V + v]));
      for (int v = 0; v < V; ++v) sum += std::exp(logits[n * V + v] - maxv);
      const double loss = std::log(sum) - (logits[n * V + targets[n]] - maxv);
      QVERIFY(std::fabs(wantLoss[n] - loss) <= 1e-5 * std::max(1.0, std::fabs(loss)));
    }
  }
  qInfo("levels checked: %s; the kernels run at %s", qPrintable(levels), cpuLevelName(cpuLevel()));
}

void TestKernels::adamwMatchesHandComputedStep() {
  // One step from zero moments: m = 0.1 g, v = 0.001 g^2, corrections 0.1 and sqrt(0.001),
  // so the update is lr * g / (|g| + eps') after decoupled decay.
  AdamWHyper h;
  h.lr = 0.1f;
  h.weightDecay = 0.5f;
  double p = 2.0, g = -3.0, m = 0.0, v = 0.0;
  adamwUpdate(&p, &g, &m, &v, 1, h, 1, 1.0);
  const double decayed = 2.0 * (1 - 0.1 * 0.5);
  const double expected =
      decayed - 0.1 / 0.1 * (0.1 * -3.0) / (std::sqrt(0.001 * 9.0) / std::sqrt(1 - 0.999) + 1e-8);
  QVERIFY(std::fabs(p - expected) < 1e-7);
  QCOMPARE(m, (1.0 - static_cast<double>(0.9f)) * -3.0);  // hyper-parameters are floats
  // gradScale multiplies the gradient before everything else.
  double p2 = 2.0, g2 = -6.0, m2 = 0.0, v2 = 0.0;
  adamwUpdate(&p2, &g2, &m2, &v2, 1, h, 1, 0.5);
  QVERIFY(std::fabs(p2 - p) < 1e-12);
}

void TestKernels::clipFactorFollowsTorch() {
  const std::vector<float> g = {3.0f, 4.0f};
  QCOMPARE(sumOfSquares(g.data(), 2), 25.0);
  QCOMPARE(clipFactor(5.0, 10.0), 1.0);
  QCOMPARE(clipFactor(5.0, 1.0), 1.0 / (5.0 + 1e-6));
  QCOMPARE(clipFactor(5.0, 0.0), 1.0);
}

// scripts/test.sh reruns the numeric suites with OPENBLAS_CORETYPE set; OpenBLAS silently falls
// back to another family for a name it does not know, which would make that rerun test nothing.
void TestKernels::openblasRunsForcedCoreType() {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if (forced == nullptr || *forced == '\0') QSKIP("OPENBLAS_CORETYPE is not set");
  QCOMPARE(QString(openblas_get_corename()).toLower(), QString(forced).toLower());
}

// scripts/test.sh reruns the numeric suites with each library for the products, and oneDNN with
// each instruction set it may use (DNNL_MAX_CPU_ISA): each rerun must run what it asked for.
void TestKernels::productsRunTheForcedLibraryAndKernels() {
  const char* library = std::getenv("PARASCOPE_SGEMM");
  if (library != nullptr && *library != '\0') {
    QCOMPARE(QString(sgemmLibraryName(sgemmLibrary())), QString(library));
  }
  const char* isa = std::getenv("DNNL_MAX_CPU_ISA");
  if (sgemmLibrary() == SgemmLibrary::OneDnn && isa != nullptr && *isa != '\0') {
    QCOMPARE(QString::fromStdString(sgemmKernels()), "oneDNN " + QString(isa).toLower());
  }
  if (sgemmLibrary() == SgemmLibrary::OpenBlas) {
    QCOMPARE(QString::fromStdString(sgemmKernels()),
             QString("OpenBLAS ") + openblas_get_corename());
  }
}

namespace {
std::atomic<int> signalsHandled{0};
extern "C" void countSignal(int) {
  signalsHandled.fetch_add(1);
}
}  // namespace

// oneDNN's products hold this thread's signals back until the outermost hold ends (blas.h); on
// OpenBLAS a signal is handled at once.
void TestKernels::productsHoldSignalsBack() {
  struct sigaction count {};
  struct sigaction previous {};
  count.sa_handler = countSignal;
  sigemptyset(&count.sa_mask);
  QCOMPARE(sigaction(SIGUSR1, &count, &previous), 0);
  signalsHandled = 0;
  {
    const ProductSignals outer(SgemmLibrary::OneDnn);
    {
      const ProductSignals inner(SgemmLibrary::OneDnn);
      pthread_kill(pthread_self(), SIGUSR1);
      QCOMPARE(signalsHandled.load(), 0);
    }
    QCOMPARE(signalsHandled.load(), 0);
  }
  QCOMPARE(signalsHandled.load(), 1);
  {
    const ProductSignals openblas(SgemmLibrary::OpenBlas);
    pthread_kill(pthread_self(), SIGUSR1);
    QCOMPARE(signalsHandled.load(), 2);
  }
  sigaction(SIGUSR1, &previous, nullptr);
}

void TestKernels::sgemmLibraryNamesAreCheckedAgainstTheBuild() {
  const SgemmLibrary preferred = haveOneDnn() ? SgemmLibrary::OneDnn : SgemmLibrary::OpenBlas;
  std::string complaint;
  QCOMPARE(sgemmLibraryFor(nullptr, &complaint), preferred);
  QCOMPARE(sgemmLibraryFor("", &complaint), preferred);
  QCOMPARE(sgemmLibraryFor("openblas", &complaint), SgemmLibrary::OpenBlas);
  QCOMPARE(complaint, std::string());
  QCOMPARE(sgemmLibraryFor("onednn", &complaint), preferred);
  QCOMPARE(complaint, haveOneDnn() ? std::string()
                                   : std::string("parascope: PARASCOPE_SGEMM=onednn is not a "
                                                 "library of this build (allowed: openblas); "
                                                 "using openblas"));
  complaint.clear();
  QCOMPARE(sgemmLibraryFor("mkl", &complaint), preferred);
  QCOMPARE(complaint, haveOneDnn() ? std::string("parascope: PARASCOPE_SGEMM=mkl is not a library "
                                                 "of this build (allowed: onednn, openblas); "
                                                 "using onednn")
                                   : std::string("parascope: PARASCOPE_SGEMM=mkl is not a library "
                                                 "of this build (allowed: openblas); using "
                                                 "openblas"));
}

QTEST_GUILESS_MAIN(TestKernels)
#include "test_kernels.moc"
