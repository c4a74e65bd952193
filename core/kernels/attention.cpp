#include "core/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/kernels/lanes.h"
#include "core/kernels/math.h"
#include "core/kernels/traffic.h"
#include "core/trace/trace.h"

namespace parascope::kernels {

namespace {

// One row block's shape: its rows and the keys they see.
struct RowBlock {
  int r0, rows, cols;
  RowBlock(int first, int Tn)
      : r0(first), rows(std::min(kAttentionRowBlock, Tn - first)), cols(first + rows) {}
};

// The copied operands' rows are padded to a multiple of the widest vector (AVX-512's 16 floats),
// so that a product reads whole vectors past its last column without leaving them.
constexpr int kPad = 16;
int padded(int n) {
  return (n + kPad - 1) / kPad * kPad;
}

// Which terms and outputs of a product the causal mask leaves, with `diag` the block's first row
// in the sequence (row i of the block sees keys 0 .. diag + i): what the mask removes is zero in
// the operands (so leaving it out changes no bit) or is overwritten after the product.
enum class Causal {
  Columns,    // C's row i needs columns up to i + diag (scores, their gradients)
  TermsUpTo,  // C's row i adds terms up to k = i + diag (A's row is zero after it: P V, dS K)
  TermsFrom,  // C's row j, a key, adds terms from k = j - diag (P^T dOut, dS^T Q)
};

// C = alpha A B (M x N, K terms each), or C += alpha A B where `accumulate`, less what `causal`
// leaves out. A's element (i, k) is A[i * ars + k * aks], so a transposed A is read where it
// lies; B's row k starts at B + k * ldb and is whole vectors long (N is, or the row is padded,
// above); C's row i starts at C + i * ldc and only its N columns are written.
template <typename T>
struct Product {
  int M, N, K;
  const T* A;
  long ars, aks;
  const T* B;
  long ldb;
  T* C;
  long ldc;
  T alpha;
  bool accumulate;
  Causal causal;
  int diag;
};

template <typename T, int W>
using Vec = T __attribute__((ext_vector_type(W)));

// A tile of C: rows from m0, columns n0 .. n0 + ncols, terms k0 .. k1.
struct Tile {
  int m0, n0, ncols, k0, k1;
};

// MR rows by NV vectors of W lanes of C, held in registers over the tile's terms: each term loads
// NV vectors of B's row and multiplies them by MR of A's elements. Each element's terms are added
// in k order, one rounding each (kFma) or two.
template <typename T, int W, int MR, int NV, bool kFma>
[[gnu::always_inline]] inline void productTile(const Product<T>& p, const Tile& t) {
  using V = Vec<T, W>;
  V acc[MR][NV] = {};
  const T* a = p.A + t.m0 * p.ars + t.k0 * p.aks;
  const T* b = p.B + t.k0 * p.ldb + t.n0;
  for (int k = t.k0; k < t.k1; ++k, a += p.aks, b += p.ldb) {
    V bv[NV];
    for (int j = 0; j < NV; ++j) std::memcpy(&bv[j], b + j * W, sizeof(V));
    for (int i = 0; i < MR; ++i) {
      const V ai = a[i * p.ars];
      for (int j = 0; j < NV; ++j) {
        if constexpr (kFma) {
          acc[i][j] = __builtin_elementwise_fma(ai, bv[j], acc[i][j]);
        } else {
          acc[i][j] += ai * bv[j];
        }
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    T* c = p.C + (t.m0 + i) * p.ldc + t.n0;
    for (int j = 0; j < NV; ++j, c += W) {
      V v = acc[i][j] * p.alpha;
      const int lanes = std::min(W, t.ncols - j * W);
      if (lanes == W) {
        if (p.accumulate) {
          V old;
          std::memcpy(&old, c, sizeof(V));
          v += old;
        }
        std::memcpy(c, &v, sizeof(V));
      } else {
        T part[W];
        std::memcpy(part, &v, sizeof(V));
        for (int l = 0; l < lanes; ++l) c[l] = p.accumulate ? c[l] + part[l] : part[l];
      }
    }
  }
}

// productTile for the run-time mr (1 .. MR) and nv (1 .. NV) of an edge tile.
template <typename T, int W, int NV, bool kFma, int... Rs>
[[gnu::always_inline]] inline void productTileRows(std::integer_sequence<int, Rs...>,
                                                   const Product<T>& p, const Tile& t, int mr) {
  ((mr == Rs + 1 ? productTile<T, W, Rs + 1, NV, kFma>(p, t) : void()), ...);
}
template <typename T, int W, int MR, bool kFma, int... Vs>
[[gnu::always_inline]] inline void productTileCols(std::integer_sequence<int, Vs...>,
                                                   const Product<T>& p, const Tile& t, int mr,
                                                   int nv) {
  ((nv == Vs + 1
        ? productTileRows<T, W, Vs + 1, kFma>(std::make_integer_sequence<int, MR>{}, p, t, mr)
        : void()),
   ...);
}

// The product by tiles: for each NV-vector strip of C's columns (B's strip stays in L1), every
// MR-row tile down it, less what the causal mask leaves out.
template <typename T, int W, int MR, int NV, bool kFma>
[[gnu::always_inline]] inline void productLoop(const Product<T>& p) {
  for (int n0 = 0; n0 < p.N; n0 += NV * W) {
    for (int m0 = 0; m0 < p.M; m0 += MR) {
      const int mr = std::min(MR, p.M - m0);
      Tile t{m0, n0, std::min(NV * W, p.N - n0), 0, p.K};
      if (p.causal == Causal::Columns) {
        t.ncols = std::min(t.ncols, m0 + mr + p.diag - n0);
        if (t.ncols <= 0) continue;
      } else if (p.causal == Causal::TermsUpTo) {
        t.k1 = std::min(p.K, m0 + mr + p.diag);
      } else {  // Causal::TermsFrom
        t.k0 = std::max(0, m0 - p.diag);
      }
      const int nv = (t.ncols + W - 1) / W;
      if (mr == MR && nv == NV) {
        productTile<T, W, MR, NV, kFma>(p, t);
      } else {
        productTileCols<T, W, MR, kFma>(std::make_integer_sequence<int, NV>{}, p, t, mr, nv);
      }
    }
  }
}

// Each level's tiles: as many accumulators as its registers hold beside B's vectors and A's
// broadcast (32 of AVX-512's, 16 of AVX2's and SSE2's).
void productBaseline(const Product<float>& p) {
  productLoop<float, 4, 6, 2, false>(p);
}
void productBaseline(const Product<double>& p) {
  productLoop<double, 2, 6, 2, false>(p);
}
#if defined(__x86_64__)
PARASCOPE_TARGET_AVX2 void productAvx2(const Product<float>& p) {
  productLoop<float, 8, 6, 2, true>(p);
}
PARASCOPE_TARGET_AVX512 void productAvx512(const Product<float>& p) {
  productLoop<float, 16, 6, 4, true>(p);
}
#endif

// Softmax rows go by blocks of kLanes elements (lanes.h: every CPU level the same bits), the last
// one whole too (its lanes past the row's last key masked: they hold whatever the scratch held, so
// they take the maximum's place before any arithmetic, and are written as zeros): rows here are
// short (64 keys on average in GPT-mini), and a tail taken element by element would cost as much
// as the rest of the row.
template <typename T>
using Lanes = Vec<T, kLanes>;
template <typename T>
[[gnu::always_inline]] inline Lanes<T> laneIndex() {
  static_assert(kLanes == 16);
  return Lanes<T>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
}
constexpr int wholeLanes(int n) {
  return (n + kLanes - 1) / kLanes * kLanes;
}

template <typename T>
[[gnu::always_inline]] inline void softmaxBlockLoop(T* s, long ld, int first, int rows, int cols,
                                                    T* record, const T* given) {
  for (int r = 0; r < rows; ++r) {
    const int t = first + r, n = t + 1, whole = wholeLanes(n);
    T* row = s + r * ld;
    if (given) {
      // Backward: the forward's exponentials times its reciprocal, the forward's bits.
      const T maxv = given[2L * t], inv = given[2L * t + 1];
      for (int j = 0; j < whole; ++j) {
        const T e = fastExp((j < n ? row[j] : maxv) - maxv) * inv;
        row[j] = j < n ? e : T(0);
      }
    } else {
      // The maximum by whole vectors of the lanes (the element-wise loop over a lane array does
      // not vectorise, and cost as much as the exponentials).
      Lanes<T> most = row[0];
      for (int j = 0; j < whole; j += kLanes) {
        Lanes<T> x;
        std::memcpy(&x, row + j, sizeof(x));
        x = laneIndex<T>() + T(j) < T(n) ? x : most;
        most = x > most ? x : most;
      }
      T top[kLanes];
      std::memcpy(top, &most, sizeof(top));
      const T maxv = foldMax(top);
      // The exponentials and their sums in one pass.
      T acc[kLanes] = {};
      for (int j = 0; j < whole; j += kLanes) {
        for (int i = 0; i < kLanes; ++i) {
          const T e = fastExp((j + i < n ? row[j + i] : maxv) - maxv);
          const T kept = j + i < n ? e : T(0);
          row[j + i] = kept;
          acc[i] += kept;
        }
      }
      const T inv = T(1) / foldSum(acc);
      for (int j = 0; j < whole; ++j) row[j] *= inv;
      record[2L * t] = maxv;
      record[2L * t + 1] = inv;
    }
    if (whole < cols) std::fill(row + whole, row + cols, T(0));
  }
}

// Softmax backward in place over a block's dP (leading dimension ld, beside the probabilities p):
// dS = P * (dP - rowsum(P * dP)), zero where masked.
template <typename T>
[[gnu::always_inline]] inline void softmaxBackwardLoop(T* ds, const T* p, long ld, int first,
                                                       int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const int n = first + r + 1, whole = wholeLanes(n);
    const T* __restrict prow = p + r * ld;  // a separate block of the scratch
    T* __restrict row = ds + r * ld;
    T acc[kLanes] = {};
    for (int j = 0; j < whole; j += kLanes) {
      for (int i = 0; i < kLanes; ++i) {
        const T x = prow[j + i] * row[j + i];
        acc[i] += j + i < n ? x : T(0);
      }
    }
    const T dot = foldSum(acc);
    for (int j = 0; j < whole; ++j) {
      const T x = prow[j] * (row[j] - dot);
      row[j] = j < n ? x : T(0);
    }
    if (whole < cols) std::fill(row + whole, row + cols, T(0));
  }
}

void softmaxBackwardBaseline(float* ds, const float* p, long ld, int first, int rows, int cols) {
  softmaxBackwardLoop(ds, p, ld, first, rows, cols);
}
void softmaxBackwardBaseline(double* ds, const double* p, long ld, int first, int rows, int cols) {
  softmaxBackwardLoop(ds, p, ld, first, rows, cols);
}
void softmaxBlockBaseline(float* s, long ld, int first, int rows, int cols, float* record,
                          const float* given) {
  softmaxBlockLoop(s, ld, first, rows, cols, record, given);
}
void softmaxBlockBaseline(double* s, long ld, int first, int rows, int cols, double* record,
                          const double* given) {
  softmaxBlockLoop(s, ld, first, rows, cols, record, given);
}
#if defined(__x86_64__)
PARASCOPE_TARGET_AVX2 void softmaxBlockAvx2(float* s, long ld, int first, int rows, int cols,
                                            float* record, const float* given) {
  softmaxBlockLoop(s, ld, first, rows, cols, record, given);
}
PARASCOPE_TARGET_AVX512 void softmaxBlockAvx512(float* s, long ld, int first, int rows, int cols,
                                                float* record, const float* given) {
  softmaxBlockLoop(s, ld, first, rows, cols, record, given);
}
PARASCOPE_TARGET_AVX2 void softmaxBackwardAvx2(float* ds, const float* p, long ld, int first,
                                               int rows, int cols) {
  softmaxBackwardLoop(ds, p, ld, first, rows, cols);
}
PARASCOPE_TARGET_AVX512 void softmaxBackwardAvx512(float* ds, const float* p, long ld, int first,
                                                   int rows, int cols) {
  softmaxBackwardLoop(ds, p, ld, first, rows, cols);
}
#endif

// What a pass runs at: its products' tiles and its softmax rows, forward and backward.
template <typename T>
struct Level {
  void (*product)(const Product<T>&);
  void (*softmax)(T* s, long ld, int first, int rows, int cols, T* record, const T* given);
  void (*softmaxBackward)(T* ds, const T* p, long ld, int first, int rows, int cols);
};

Level<float> levelOf(CpuLevel level) {
#if defined(__x86_64__)
  if (level == CpuLevel::Avx512) return {productAvx512, softmaxBlockAvx512, softmaxBackwardAvx512};
  if (level == CpuLevel::Avx2) return {productAvx2, softmaxBlockAvx2, softmaxBackwardAvx2};
#endif
  return {productBaseline, softmaxBlockBaseline, softmaxBackwardBaseline};
}
template <typename T>
Level<T> cpusLevel() {
  if constexpr (std::is_same_v<T, float>) {
    static const Level<float> level = levelOf(cpuLevel());
    return level;
  } else {
    return {productBaseline, softmaxBlockBaseline, softmaxBackwardBaseline};
  }
}

// One head's rows (Tn of hs elements, src's row i at src + i * ld) for a product's B operand:
// where they lie when whole vectors cover them (*ld unchanged), else copied to buf's padded rows
// with zeros after them (*ld the padded width).
template <typename T>
const T* rowsOperand(T* buf, const T* src, long* ld, int Tn, int hs) {
  if (hs % kPad == 0) return src;
  const int hsp = padded(hs);
  for (int i = 0; i < Tn; ++i) {
    T* d = buf + static_cast<long>(i) * hsp;
    std::copy(src + i * *ld, src + i * *ld + hs, d);
    std::fill(d + hs, d + hsp, T(0));
  }
  *ld = hsp;
  return buf;
}

// The same rows transposed into dst's hs rows of padded(Tn), the padding zero. Four rows at a
// time go by 4 x 4 blocks in registers: gathering single elements costs three times as much.
template <typename T>
void copyTransposed(T* dst, const T* src, long ld, int Tn, int hs) {
  const long Tnp = padded(Tn);
  int i = 0;
  if constexpr (std::is_same_v<T, float>) {
    using V4 = Vec<float, 4>;
    for (; i + 4 <= Tn; i += 4) {
      const float* s = src + i * ld;
      int d = 0;
      for (; d + 4 <= hs; d += 4) {
        V4 r0, r1, r2, r3;
        std::memcpy(&r0, s + d, sizeof(V4));
        std::memcpy(&r1, s + ld + d, sizeof(V4));
        std::memcpy(&r2, s + 2 * ld + d, sizeof(V4));
        std::memcpy(&r3, s + 3 * ld + d, sizeof(V4));
        const V4 t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5);
        const V4 t1 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7);
        const V4 t2 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5);
        const V4 t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
        const V4 c0 = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
        const V4 c1 = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
        const V4 c2 = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
        const V4 c3 = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
        float* o = dst + d * Tnp + i;
        std::memcpy(o, &c0, sizeof(V4));
        std::memcpy(o + Tnp, &c1, sizeof(V4));
        std::memcpy(o + 2 * Tnp, &c2, sizeof(V4));
        std::memcpy(o + 3 * Tnp, &c3, sizeof(V4));
      }
      for (; d < hs; ++d)
        for (int r = 0; r < 4; ++r) dst[d * Tnp + i + r] = s[r * ld + d];
    }
  }
  for (; i < Tn; ++i)
    for (int d = 0; d < hs; ++d) dst[d * Tnp + i] = src[i * ld + d];
  for (int d = 0; d < hs; ++d) std::fill(dst + d * Tnp + Tn, dst + (d + 1) * Tnp, T(0));
}

// Asks for rows [r0, r0 + rows) of a head's part of a tensor (hs elements each, ld apart) to come
// into the cache. A head's part of each row is 64 elements of a row thousands long: the hardware's
// prefetchers do not follow that, and reading them as each product or copy first needs them waits
// on memory each time (the backward's operands were written long before it runs; the forward's
// just before, most of them out of the core's caches by then). Each pass asks for the next head's
// rows block by block while it works on this head's: GPT-mini's backward takes 0.3 ms less per
// step, its forward 0.05-0.1 ms.
template <typename T>
void prefetchRows(const T* src, long ld, int r0, int rows, int hs) {
  constexpr int kLine = 64 / sizeof(T);
  for (int i = r0; i < r0 + rows; ++i) {
    const T* row = src + i * ld;
    for (int d = 0; d < hs; d += kLine) __builtin_prefetch(row + d);
    __builtin_prefetch(row + hs - 1);
  }
}

// Where the head after head h of sequence b starts in a tensor of B sequences (each `sequence`
// elements) whose heads lie hs elements apart within a row; null after the last.
template <typename T>
const T* nextHead(const T* t, long sequence, int b, int h, int B, int NH, int hs) {
  if (h + 1 < NH) return t + b * sequence + (h + 1) * hs;
  return b + 1 < B ? t + (b + 1) * sequence : nullptr;
}

template <typename T>
void forwardAt(T* out, T* stats, T* scratch, const T* qkv, int B, int Tn, int C, int NH,
               const Level<T>& level) {
  const int hs = C / NH, C3 = 3 * C, Tnp = padded(Tn);
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  T* s = scratch;                                                         // a block's scores
  T* kt = s + static_cast<long>(std::min(kAttentionRowBlock, Tn)) * Tnp;  // K^T
  T* vrows = kt + static_cast<long>(hs) * Tnp;                            // V's rows, where copied
  for (int b = 0; b < B; ++b) {
    const T* base = qkv + static_cast<long>(b) * Tn * C3;
    for (int h = 0; h < NH; ++h) {
      const T* q = base + h * hs;
      copyTransposed(kt, base + C + h * hs, C3, Tn, hs);
      long ldv = C3;
      const T* v = rowsOperand(vrows, base + 2 * C + h * hs, &ldv, Tn, hs);
      T* rowStats = stats + (static_cast<long>(b) * NH + h) * Tn * 2;
      T* out_h = out + static_cast<long>(b) * Tn * C + h * hs;
      const T* next = nextHead(qkv, static_cast<long>(Tn) * C3, b, h, B, NH, hs);
      for (int r0 = 0; r0 < Tn; r0 += kAttentionRowBlock) {
        const RowBlock blk(r0, Tn);
        if (next != nullptr) {
          for (int part = 0; part < 3; ++part) prefetchRows(next + part * C, C3, r0, blk.rows, hs);
        }
        // S = scale Q_blk K^T over the keys the block sees; then P V.
        level.product({blk.rows, blk.cols, hs, q + static_cast<long>(r0) * C3, C3, 1, kt, Tnp, s,
                       Tnp, scale, false, Causal::Columns, r0});
        level.softmax(s, Tnp, r0, blk.rows, blk.cols, rowStats, nullptr);
        level.product({blk.rows, hs, blk.cols, s, Tnp, 1, v, ldv, out_h + static_cast<long>(r0) * C,
                       C, T(1), false, Causal::TermsUpTo, r0});
      }
    }
  }
}

template <typename T>
void backwardAt(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* stats, int B, int Tn,
                int C, int NH, const Level<T>& level) {
  const int hs = C / NH, C3 = 3 * C, Tnp = padded(Tn);
  const T scale = T(1) / std::sqrt(static_cast<T>(hs));
  const long block = static_cast<long>(std::min(kAttentionRowBlock, Tn)) * Tnp;
  const long transposed = static_cast<long>(hs) * Tnp;
  const long rows = static_cast<long>(Tn) * padded(hs);
  T* p = scratch;              // a block's probabilities
  T* ds = p + block;           // and their gradients
  T* kt = ds + block;          // K^T
  T* vt = kt + transposed;     // V^T
  T* krows = vt + transposed;  // K's, Q's and dOut's rows, where copied
  T* qrows = krows + rows;
  T* drows = qrows + rows;
  for (int b = 0; b < B; ++b) {
    const T* base = qkv + static_cast<long>(b) * Tn * C3;
    T* dbase = dqkv + static_cast<long>(b) * Tn * C3;
    for (int h = 0; h < NH; ++h) {
      const T* q = base + h * hs;
      T* dq = dbase + h * hs;
      T* dk = dbase + C + h * hs;
      T* dv = dbase + 2 * C + h * hs;
      const T* rowStats = stats + (static_cast<long>(b) * NH + h) * Tn * 2;
      const T* dout_h = dout + static_cast<long>(b) * Tn * C + h * hs;
      copyTransposed(kt, base + C + h * hs, C3, Tn, hs);
      copyTransposed(vt, base + 2 * C + h * hs, C3, Tn, hs);
      long ldk = C3, ldq = C3, ldo = C;
      const T* k = rowsOperand(krows, base + C + h * hs, &ldk, Tn, hs);
      const T* qr = rowsOperand(qrows, q, &ldq, Tn, hs);
      const T* dor = rowsOperand(drows, dout_h, &ldo, Tn, hs);
      // The last row block first: it sees every key, so it writes dK and dV (nothing to zero
      // first) and the blocks above it add theirs.
      const int last = (Tn - 1) / kAttentionRowBlock * kAttentionRowBlock;
      const T* next = nextHead(qkv, static_cast<long>(Tn) * C3, b, h, B, NH, hs);
      const T* nextDout = nextHead(dout, static_cast<long>(Tn) * C, b, h, B, NH, hs);
      for (int r0 = last; r0 >= 0; r0 -= kAttentionRowBlock) {
        const RowBlock blk(r0, Tn);
        const int rows = blk.rows, cols = blk.cols;
        const bool add = r0 != last;
        if (next != nullptr) {
          for (int part = 0; part < 3; ++part) prefetchRows(next + part * C, C3, r0, rows, hs);
          prefetchRows(nextDout, C, r0, rows, hs);
        }
        // The forward's probabilities again: its product, then its exponentials and reciprocal.
        level.product({rows, cols, hs, q + static_cast<long>(r0) * C3, C3, 1, kt, Tnp, p, Tnp,
                       scale, false, Causal::Columns, r0});
        level.softmax(p, Tnp, r0, rows, cols, nullptr, rowStats);
        // dP = dOut V^T ; dV += P^T dOut
        level.product({rows, cols, hs, dout_h + static_cast<long>(r0) * C, C, 1, vt, Tnp, ds, Tnp,
                       T(1), false, Causal::Columns, r0});
        level.product({cols, hs, rows, p, 1, Tnp, dor + r0 * ldo, ldo, dv, C3, T(1), add,
                       Causal::TermsFrom, r0});
        level.softmaxBackward(ds, p, Tnp, r0, rows, cols);
        // dQ = scale dS K ; dK += scale dS^T Q
        level.product({rows, hs, cols, ds, Tnp, 1, k, ldk, dq + static_cast<long>(r0) * C3, C3,
                       scale, false, Causal::TermsUpTo, r0});
        level.product({cols, hs, rows, ds, 1, Tnp, qr + r0 * ldq, ldq, dk, C3, scale, add,
                       Causal::TermsFrom, r0});
      }
    }
  }
}

}  // namespace

void softmaxBlock(float* s, long ld, int first, int rows, int cols, float* record,
                  const float* given, CpuLevel level) {
  levelOf(level).softmax(s, ld, first, rows, cols, record, given);
}

long attentionScratch(int Tn, int hs, bool backward) {
  const long block = static_cast<long>(std::min(kAttentionRowBlock, Tn)) * padded(Tn);
  const long transposed = static_cast<long>(hs) * padded(Tn);
  const long rows = static_cast<long>(Tn) * padded(hs);
  return backward ? 2 * block + 2 * transposed + 3 * rows : block + transposed + rows;
}

template <typename T>
void attentionForward(T* out, T* stats, T* scratch, const T* qkv, int B, int Tn, int C, int NH) {
  // Reads qkv; writes out and the row statistics (the head's copies and scores stay in cache).
  trace::Span span("attention_forward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(static_cast<long>(B) * Tn * (4L * C + 2L * NH)));
  forwardAt(out, stats, scratch, qkv, B, Tn, C, NH, cpusLevel<T>());
}

template <typename T>
void attentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* stats, int B,
                       int Tn, int C, int NH) {
  // Reads dout, qkv and the statistics; writes dqkv (the head's copies and scores stay in cache).
  trace::Span span("attention_backward", trace::Category::Compute);
  span.bytes(arrayBytes<T>(static_cast<long>(B) * Tn * (7L * C + 2L * NH)));
  backwardAt(dqkv, scratch, dout, qkv, stats, B, Tn, C, NH, cpusLevel<T>());
}

void attentionForward(float* out, float* stats, float* scratch, const float* qkv, int B, int Tn,
                      int C, int NH, CpuLevel level) {
  forwardAt(out, stats, scratch, qkv, B, Tn, C, NH, levelOf(level));
}

void attentionBackward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                       const float* stats, int B, int Tn, int C, int NH, CpuLevel level) {
  backwardAt(dqkv, scratch, dout, qkv, stats, B, Tn, C, NH, levelOf(level));
}

template void attentionForward<float>(float*, float*, float*, const float*, int, int, int, int);
template void attentionForward<double>(double*, double*, double*, const double*, int, int, int,
                                       int);
template void attentionBackward<float>(float*, float*, const float*, const float*, const float*,
                                       int, int, int, int);
template void attentionBackward<double>(double*, double*, const double*, const double*,
                                        const double*, int, int, int, int);

}  // namespace parascope::kernels
