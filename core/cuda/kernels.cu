#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>

#include "core/cuda/check.h"
#include "core/cuda/kernels.h"
#include "core/kernels/element_math.h"
#include "core/kernels/flash_attention.h"

namespace parascope::cuda {

namespace k = parascope::kernels;

namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;

// Enough blocks to fill any current GPU; the element-wise kernels stride over the rest.
unsigned blocksFor(long n) {
  const long blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp(blocks, 1L, 65535L));
}

void checkLaunch(const char* kernel) {
  check(cudaGetLastError(), (std::string("launching ") + kernel).c_str());
}

__device__ long globalIndex() {
  return static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ long gridStride() {
  return static_cast<long>(gridDim.x) * blockDim.x;
}

// The row of a kernel that gives each warp one row (rowBlocks below); every lane of a warp has
// the same, so a warp past the last row leaves whole.
__device__ int warpRow() {
  return static_cast<int>(blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp);
}

__device__ float warpSum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ float warpMax(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// A block's sum or maximum (blockDim.x a multiple of 32), returned to every thread.
template <bool Max>
__device__ float blockReduce(float v) {
  __shared__ float partial[kThreads / kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = Max ? warpMax(v) : warpSum(v);
  __syncthreads();  // partial[] may still be read by a previous call's threads
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarp;
  v = lane < warps ? partial[lane] : (Max ? -INFINITY : 0.0f);
  return Max ? warpMax(v) : warpSum(v);
}

// A block's row of exponentials p[v] = exp(x[v] - maxv) (the CPU's fastExp; p may alias x) and
// their sum, returned to every thread.
__device__ float rowExponentials(float* p, const float* x, float maxv, int V) {
  float sum = 0.0f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float e = k::fastExp(x[v] - maxv);
    p[v] = e;
    sum += e;
  }
  return blockReduce<false>(sum);
}

__global__ void geluForwardKernel(float* out, const float* inp, long n) {
  for (long i = globalIndex(); i < n; i += gridStride()) out[i] = k::geluValue(inp[i]);
}

__global__ void geluBackwardKernel(float* dinp, const float* inp, const float* dout, long n) {
  for (long i = globalIndex(); i < n; i += gridStride())
    dinp[i] = k::geluDerivative(inp[i]) * dout[i];
}

__global__ void fillKernel(float* p, float value, long n) {
  for (long i = globalIndex(); i < n; i += gridStride()) p[i] = value;
}

__global__ void residualKernel(float* out, const float* a, const float* b, long n) {
  for (long i = globalIndex(); i < n; i += gridStride()) out[i] = a[i] + b[i];
}

__global__ void biasKernel(float* out, const float* bias, long n, long C) {
  for (long i = globalIndex(); i < n; i += gridStride()) out[i] = out[i] + bias[i % C];
}

// Column sums in the CPU's order (element_math.h: kColumnChunkRows), in parallel. A block takes
// 32 columns, one per lane, so that each row's 32 values are one 128-byte load; its kSumWarps
// warps each add up one chunk of rows from zero, and warp 0 adds those chunks' sums to the
// columns' totals in chunk order, kSumWarps chunks a round. `addRow(part, n, c)` adds row n's
// terms of column c to part[0..K). The totals start from `sums`, as the CPU's += does.
constexpr int kSumWarps = 16;

unsigned columnBlocks(long C) {
  return static_cast<unsigned>((C + kWarp - 1) / kWarp);
}

template <int K>
struct ColumnSums {
  float* sums[K];
};

template <int K, typename AddRow>
__device__ void chunkedColumnSums(ColumnSums<K> out, long rows, long C, const AddRow& addRow) {
  __shared__ float partial[K][kSumWarps][kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const long c = static_cast<long>(blockIdx.x) * kWarp + lane;
  const bool inside = c < C;
  float total[K];
  for (int k = 0; k < K; ++k) total[k] = inside && warp == 0 ? out.sums[k][c] : 0.0f;
  const long chunkRows = k::kColumnChunkRows;
  const long chunks = (rows + chunkRows - 1) / chunkRows;
  for (long round = 0; round < chunks; round += kSumWarps) {
    const long chunk = round + warp;
    float part[K];
    for (int k = 0; k < K; ++k) part[k] = 0.0f;
    if (inside && chunk < chunks) {
      const long end = min(rows, (chunk + 1) * chunkRows);
      for (long n = chunk * chunkRows; n < end; ++n) addRow(part, n, c);
    }
    for (int k = 0; k < K; ++k) partial[k][warp][lane] = part[k];
    __syncthreads();
    if (warp == 0 && inside) {
      const long here = min(static_cast<long>(kSumWarps), chunks - round);
      for (long w = 0; w < here; ++w) {
        for (int k = 0; k < K; ++k) total[k] = total[k] + partial[k][w][lane];
      }
    }
    __syncthreads();  // partial[] is written again next round
  }
  if (warp == 0 && inside) {
    for (int k = 0; k < K; ++k) out.sums[k][c] = total[k];
  }
}

// residual.cpp's addColumnSums: each row's value.
struct BiasRows {
  const float* dout;
  long C;
  __device__ void operator()(float* part, long n, long c) const {
    part[0] = part[0] + dout[n * C + c];
  }
};

__global__ void biasBackwardKernel(float* dbias, const float* dout, long rows, long C) {
  chunkedColumnSums<1>(ColumnSums<1>{{dbias}}, rows, C, BiasRows{dout, C});
}

// Memory-efficient causal attention, fused (kernels::attentionForward's contract; FlashAttention's
// scheme in f32 on the CUDA cores): a thread per query row (forward, dQ) or key row (dK, dV), a
// block's kFlashRows rows zero-padded from hs to HS in shared memory, the other side streamed
// through it in tiles of flashTile(HS) rows. Each thread's arithmetic is
// core/kernels/flash_attention.h's, which the CPU tests run over the same tiles.
using k::flashTile;
using k::kFlashRows;

// Rows [r0, r0 + rows) of one of q, k, v (part 0, 1, 2) of head h, or of a (B, T, C) tensor
// (stride C, part 0), into dst[rows][ld], zeros past hs or T.
template <int HS>
__device__ void loadAttentionRows(float* dst, int ld, const float* src, long stride, int part,
                                  int C, int r0, int rows, int T, int hs) {
  for (int e = threadIdx.x; e < rows * HS; e += blockDim.x) {
    const int r = e / HS, d = e % HS, t = r0 + r;
    dst[r * ld + d] = t < T && d < hs ? src[t * stride + part * C + d] : 0.0f;
  }
}

template <int HS>
__global__ void attentionForwardKernel(float* out, float* stats, const float* qkv, int T, int C,
                                       int NH, float scale) {
  constexpr int kTile = flashTile(HS);
  __shared__ float own[kFlashRows][HS + 1];  // padded: a thread's row in its own banks
  __shared__ float kt[kTile * HS];
  __shared__ float vt[kTile * HS];
  const int hs = C / NH, h = blockIdx.y, b = blockIdx.z;
  const int r0 = blockIdx.x * kFlashRows, i = threadIdx.x, t = r0 + i;
  const long C3 = 3L * C;
  const float* head = qkv + static_cast<long>(b) * T * C3 + h * hs;
  loadAttentionRows<HS>(&own[0][0], HS + 1, head, C3, 0, C, r0, kFlashRows, T, hs);
  float o[HS];
#pragma unroll
  for (int d = 0; d < HS; ++d) o[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const int last = min(r0 + kFlashRows, T) - 1;  // the block's last row sees keys to it
  for (int j0 = 0; j0 <= last; j0 += kTile) {
    __syncthreads();  // the rows are in, the last tile used
    loadAttentionRows<HS>(kt, HS, head, C3, 1, C, j0, kTile, T, hs);
    loadAttentionRows<HS>(vt, HS, head, C3, 2, C, j0, kTile, T, hs);
    __syncthreads();
    if (t < T && j0 <= t)
      k::flashForwardTile<HS>(own[i], kt, vt, min(kTile, t - j0 + 1), scale, m, l, o);
  }
  if (t >= T) return;
  const float inv = 1.0f / l;
  float* row = out + (static_cast<long>(b) * T + t) * C + h * hs;
#pragma unroll
  for (int d = 0; d < HS; ++d)
    if (d < hs) row[d] = o[d] * inv;
  float* st = stats + ((static_cast<long>(b) * NH + h) * T + t) * 2;
  st[0] = m;
  st[1] = inv;
}

// dQ: a thread per query row, over the key tiles it sees.
template <int HS>
__global__ void attentionBackwardQueryKernel(float* dqkv, const float* dout, const float* qkv,
                                             const float* out, const float* stats, int T, int C,
                                             int NH, float scale) {
  constexpr int kTile = flashTile(HS);
  __shared__ float q[kFlashRows][HS + 1];
  __shared__ float dO[kFlashRows][HS + 1];
  __shared__ float kt[kTile * HS];
  __shared__ float vt[kTile * HS];
  const int hs = C / NH, h = blockIdx.y, b = blockIdx.z;
  const int r0 = blockIdx.x * kFlashRows, i = threadIdx.x, t = r0 + i;
  const long C3 = 3L * C, rowB = static_cast<long>(b) * T;
  const float* head = qkv + rowB * C3 + h * hs;
  const float* doutHead = dout + rowB * C + h * hs;
  loadAttentionRows<HS>(&q[0][0], HS + 1, head, C3, 0, C, r0, kFlashRows, T, hs);
  loadAttentionRows<HS>(&dO[0][0], HS + 1, doutHead, C, 0, 0, r0, kFlashRows, T, hs);
  float m = 0.0f, inv = 0.0f, D = 0.0f;
  if (t < T) {
    const float* st = stats + ((static_cast<long>(b) * NH + h) * T + t) * 2;
    m = st[0];
    inv = st[1];
    D = k::flashRowDot(doutHead + static_cast<long>(t) * C, out + (rowB + t) * C + h * hs, hs);
  }
  float dq[HS];
#pragma unroll
  for (int d = 0; d < HS; ++d) dq[d] = 0.0f;
  const int last = min(r0 + kFlashRows, T) - 1;
  for (int j0 = 0; j0 <= last; j0 += kTile) {
    __syncthreads();
    loadAttentionRows<HS>(kt, HS, head, C3, 1, C, j0, kTile, T, hs);
    loadAttentionRows<HS>(vt, HS, head, C3, 2, C, j0, kTile, T, hs);
    __syncthreads();
    if (t < T && j0 <= t)
      k::flashQueryGradTile<HS>(q[i], dO[i], kt, vt, min(kTile, t - j0 + 1), scale, m, inv, D, dq);
  }
  if (t >= T) return;
  float* row = dqkv + (rowB + t) * C3 + h * hs;
#pragma unroll
  for (int d = 0; d < HS; ++d)
    if (d < hs) row[d] = scale * dq[d];
}

// dK and dV: a thread per key row, over the query tiles that see it.
template <int HS>
__global__ void attentionBackwardKeyKernel(float* dqkv, const float* dout, const float* qkv,
                                           const float* out, const float* stats, int T, int C,
                                           int NH, float scale) {
  constexpr int kTile = flashTile(HS);
  __shared__ float kr[kFlashRows][HS + 1];
  __shared__ float vr[kFlashRows][HS + 1];
  __shared__ float qt[kTile * HS];
  __shared__ float dt[kTile * HS];
  __shared__ float mt[kTile], invt[kTile], Dt[kTile];
  const int hs = C / NH, h = blockIdx.y, b = blockIdx.z;
  const int j0 = blockIdx.x * kFlashRows, i = threadIdx.x, j = j0 + i;
  const long C3 = 3L * C, rowB = static_cast<long>(b) * T;
  const float* head = qkv + rowB * C3 + h * hs;
  const float* doutHead = dout + rowB * C + h * hs;
  const float* headStats = stats + (static_cast<long>(b) * NH + h) * T * 2;
  loadAttentionRows<HS>(&kr[0][0], HS + 1, head, C3, 1, C, j0, kFlashRows, T, hs);
  loadAttentionRows<HS>(&vr[0][0], HS + 1, head, C3, 2, C, j0, kFlashRows, T, hs);
  float dk[HS], dv[HS];
#pragma unroll
  for (int d = 0; d < HS; ++d) dk[d] = dv[d] = 0.0f;
  for (int r0 = j0; r0 < T; r0 += kTile) {  // query rows before j0 see none of these keys
    __syncthreads();
    loadAttentionRows<HS>(qt, HS, head, C3, 0, C, r0, kTile, T, hs);
    loadAttentionRows<HS>(dt, HS, doutHead, C, 0, 0, r0, kTile, T, hs);
    if (i < kTile && r0 + i < T) {
      const long t = r0 + i;
      mt[i] = headStats[2 * t];
      invt[i] = headStats[2 * t + 1];
      Dt[i] = k::flashRowDot(doutHead + t * C, out + (rowB + t) * C + h * hs, hs);
    }
    __syncthreads();
    if (j < T) {
      k::flashKeyGradTile<HS>(kr[i], vr[i], qt, dt, mt, invt, Dt, max(0, j - r0),
                              min(kTile, T - r0), scale, dk, dv);
    }
  }
  if (j >= T) return;
  float* row = dqkv + (rowB + j) * C3 + h * hs;
#pragma unroll
  for (int d = 0; d < HS; ++d) {
    if (d < hs) {
      row[C + d] = scale * dk[d];
      row[2 * C + d] = dv[d];
    }
  }
}

// One warp per row: the row's mean and variance by warp sums, then the normalised row. With a
// residual, the warp writes the row's sum first and normalises what it wrote.
__global__ void layernormForwardKernel(float* out, float* mean, float* rstd, float* sum,
                                       const float* a, const float* b, const float* weight,
                                       const float* bias, int N, int C) {
  const int row = warpRow();
  const int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const long base = static_cast<long>(row) * C;
  const float* x = b + base;
  if (sum != nullptr) {
    for (int i = lane; i < C; i += kWarp) sum[base + i] = a[base + i] + b[base + i];
    __syncwarp();
    x = sum + base;
  }
  float s = 0.0f;
  for (int i = lane; i < C; i += kWarp) s += x[i];
  const float m = warpSum(s) / C;
  float var = 0.0f;
  for (int i = lane; i < C; i += kWarp) var += (x[i] - m) * (x[i] - m);
  const float r = 1.0f / sqrtf(warpSum(var) / C + 1e-5f);
  float* o = out + base;
  for (int i = lane; i < C; i += kWarp) o[i] = (x[i] - m) * r * weight[i] + bias[i];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// The input gradient, one warp per row (as layernorm.cpp: dnorm = dout * weight,
// dx = s (dnorm - mean(dnorm) - xhat mean(dnorm xhat)) [+ dresidual]).
__global__ void layernormInputGradKernel(float* dinp, const float* dout, const float* inp,
                                         const float* weight, const float* mean, const float* rstd,
                                         const float* dresidual, int N, int C) {
  const int row = warpRow();
  const int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const long base = static_cast<long>(row) * C;
  const float* x = inp + base;
  const float* d = dout + base;
  const float m = mean[row], s = rstd[row];
  float dnormSum = 0.0f, dnormXhatSum = 0.0f;
  for (int i = lane; i < C; i += kWarp) {
    const float xhat = (x[i] - m) * s;
    const float dnorm = d[i] * weight[i];
    dnormSum += dnorm;
    dnormXhatSum += dnorm * xhat;
  }
  const float dnormMean = warpSum(dnormSum) / C;
  const float dnormXhatMean = warpSum(dnormXhatSum) / C;
  for (int i = lane; i < C; i += kWarp) {
    const float xhat = (x[i] - m) * s;
    float dx = s * (d[i] * weight[i] - dnormMean - xhat * dnormXhatMean);
    if (dresidual != nullptr) dx = dx + dresidual[base + i];
    dinp[base + i] = dx;
  }
}

// The weight and bias gradients: one thread per column adds the rows in order, the CPU's sums.
// layernorm.cpp's column sums: the bias's term dout, the weight's dout * xhat.
struct LayernormWeightRows {
  const float* dout;
  const float* inp;
  const float* mean;
  const float* rstd;
  long C;
  __device__ void operator()(float* part, long n, long c) const {
    const long at = n * C + c;
    const float xhat = (inp[at] - mean[n]) * rstd[n];
    part[0] += dout[at];
    part[1] += dout[at] * xhat;
  }
};

__global__ void layernormWeightGradKernel(float* dweight, float* dbias, const float* dout,
                                          const float* inp, const float* mean, const float* rstd,
                                          int N, int C) {
  chunkedColumnSums<2>(ColumnSums<2>{{dbias, dweight}}, N, C,
                       LayernormWeightRows{dout, inp, mean, rstd, C});
}

__global__ void embeddingForwardKernel(float* out, const std::int32_t* tokens, const float* wte,
                                       const float* wpe, int T, int C, long n) {
  for (long i = globalIndex(); i < n; i += gridStride()) {
    const long token = i / C;
    const int c = static_cast<int>(i % C), t = static_cast<int>(token % T);
    out[i] = wte[static_cast<long>(tokens[token]) * C + c] + wpe[static_cast<long>(t) * C + c];
  }
}

// The token rows' gradients: row `tokens[n] - first` of dwte gets dout's row n, for the tokens in
// [first, first + part), each row's additions in n's order as on the CPU. Tokens are split into
// kTokenGroups groups by value; a warp takes 32 columns of one group and scans every position,
// adding only its group's, so no two threads write one element and no atomics reorder the sums.
// (The positions' tokens are the same load for every lane.)
constexpr int kTokenGroups = 64;

__global__ void tokenGradKernel(float* dwte, const float* dout, const std::int32_t* tokens, long N,
                                int C, int first, int part) {
  const long warp = static_cast<long>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int group = static_cast<int>(warp % kTokenGroups);
  const long c = (warp / kTokenGroups) * kWarp + threadIdx.x % kWarp;
  if (c >= C) return;
  for (long n = 0; n < N; ++n) {
    const int local = tokens[n] - first;
    if (local < 0 || local >= part || local % kTokenGroups != group) continue;
    float* row = dwte + static_cast<long>(local) * C;
    row[c] = row[c] + dout[n * C + c];
  }
}

unsigned tokenGradBlocks(int C) {
  const long warps = (C + kWarp - 1) / kWarp * kTokenGroups;
  return static_cast<unsigned>((warps * kWarp + kThreads - 1) / kThreads);
}

// The positions' gradients: dwpe's row (row0 + i) % T gets dout's row i. One thread per
// position and column adds its rows i = p, p + T, ... in order, as the CPU does.
__global__ void positionGradKernel(float* dwpe, const float* dout, long rows, int row0, int T,
                                   int C) {
  const long positions = min(rows, static_cast<long>(T));
  for (long j = globalIndex(); j < positions * C; j += gridStride()) {
    const long p = j / C, c = j % C;
    float* at = dwpe + ((row0 + p) % T) * C + c;
    float sum = *at;
    for (long i = p; i < rows; i += T) sum = sum + dout[i * C + c];
    *at = sum;
  }
}

__global__ void embeddingPartForwardKernel(float* out, const std::int32_t* tokens,
                                           const float* wtePart, int first, int part, int C,
                                           long n) {
  for (long i = globalIndex(); i < n; i += gridStride()) {
    const long token = i / C;
    const int local = tokens[token] - first;
    out[i] = local >= 0 && local < part ? wtePart[static_cast<long>(local) * C + i % C] : 0.0f;
  }
}

__global__ void positionForwardKernel(float* out, const float* wpe, int row0, int T, int C,
                                      long n) {
  for (long i = globalIndex(); i < n; i += gridStride()) {
    const long row = i / C;
    out[i] = out[i] + wpe[((row0 + row) % T) * C + i % C];
  }
}

// The vocabulary-split cross-entropy, one block per row for the reductions.
__global__ void crossEntropyPartMaxKernel(float* maxima, const float* logits, int V) {
  const float* x = logits + static_cast<long>(blockIdx.x) * V;
  float m = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, x[v]);
  m = blockReduce<true>(m);
  if (threadIdx.x == 0) maxima[blockIdx.x] = m;
}

__global__ void crossEntropyPartExpKernel(float* sums, float* probs, const float* logits,
                                          const float* maxima, const std::int32_t* targets, int N,
                                          int V, int first) {
  const long base = static_cast<long>(blockIdx.x) * V;
  const float* x = logits + base;
  float* p = probs + base;
  const int local = targets[blockIdx.x] - first;
  const float target = local >= 0 && local < V ? x[local] : 0.0f;
  __syncthreads();  // the target's logit read before probs overwrite it
  const float sum = rowExponentials(p, x, maxima[blockIdx.x], V);
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = sum;
    sums[N + blockIdx.x] = target;
  }
}

__global__ void crossEntropyPartFinishKernel(float* losses, float* probs, const float* sums,
                                             const float* maxima, int N, int V) {
  float* p = probs + static_cast<long>(blockIdx.x) * V;
  const float sum = sums[blockIdx.x];
  const float inv = 1.0f / sum;
  for (int v = threadIdx.x; v < V; v += blockDim.x) p[v] *= inv;
  if (threadIdx.x == 0)
    losses[blockIdx.x] = logf(sum) - (sums[N + blockIdx.x] - maxima[blockIdx.x]);
}

__global__ void crossEntropyPartBackwardKernel(float* dlogits, const std::int32_t* targets, int V,
                                               int first, float weight, long n) {
  for (long i = globalIndex(); i < n; i += gridStride()) {
    const long row = i / V;
    float d = dlogits[i] * weight;
    if (i % V == targets[row] - first) d = d - weight;
    dlogits[i] = d;
  }
}

// One block per row: maximum, then the exponentials (the CPU's fastExp) and their sum.
__global__ void crossEntropyForwardKernel(float* losses, float* probs, const float* logits,
                                          const std::int32_t* targets, int V) {
  const long base = static_cast<long>(blockIdx.x) * V;
  const float* x = logits + base;
  float* p = probs + base;
  float maxv = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) maxv = fmaxf(maxv, x[v]);
  maxv = blockReduce<true>(maxv);
  const float target = x[targets[blockIdx.x]];
  __syncthreads();  // every thread has read its logits and the target before probs overwrite them
  const float sum = rowExponentials(p, x, maxv, V);
  const float inv = 1.0f / sum;
  for (int v = threadIdx.x; v < V; v += blockDim.x) p[v] *= inv;
  if (threadIdx.x == 0) losses[blockIdx.x] = logf(sum) - (target - maxv);
}

__global__ void adamwKernel(float* param, const float* grad, float* m, float* v, long n,
                            k::AdamWConstants<float> c, float gradScale) {
  for (long i = globalIndex(); i < n; i += gridStride())
    k::adamwElement(param[i], grad[i] * gradScale, m[i], v[i], c);
}

// fp16 NaNs as the CPU's conversions give them (core/tensor/dtype.h), the sign kept; the
// hardware's conversions give one canonical NaN instead.
__device__ float widenOne(std::uint16_t h, bool bf16) {
  if (bf16) return k::floatOfBits(static_cast<std::uint32_t>(h) << 16);
  if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0)  // NaN: sign and payload kept
    return k::floatOfBits(static_cast<std::uint32_t>(h & 0x8000u) << 16 | 0x7f800000u |
                          static_cast<std::uint32_t>(h & 0x3ffu) << 13);
  return __half2float(__ushort_as_half(h));
}
__device__ std::uint16_t narrowOne(float f, bool bf16) {
  if (bf16) return static_cast<std::uint16_t>(k::bf16Upper(f) >> 16);
  const std::uint32_t u = k::bitsOf(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN: quiet, sign kept
    return static_cast<std::uint16_t>((u >> 16 & 0x8000u) | 0x7e00u);
  return __half_as_ushort(__float2half_rn(f));
}

__global__ void adamwMixedKernel(float* master, std::uint16_t* param, const std::uint16_t* grad,
                                 float* m, float* v, long n, k::AdamWConstants<float> c,
                                 float gradScale, bool bf16) {
  for (long i = globalIndex(); i < n; i += gridStride()) {
    k::adamwElement(master[i], widenOne(grad[i], bf16) * gradScale, m[i], v[i], c);
    param[i] = narrowOne(master[i], bf16);
  }
}

// grad as floats, or 16-bit values widened (`low`, bf16 or fp16).
__global__ void sumOfSquaresKernel(double* sum, const void* grad, long n, bool low, bool bf16) {
  double s = 0.0;
  for (long i = globalIndex(); i < n; i += gridStride()) {
    const float g = low ? widenOne(static_cast<const std::uint16_t*>(grad)[i], bf16)
                        : static_cast<const float*>(grad)[i];
    s += static_cast<double>(g) * static_cast<double>(g);
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    s += __shfl_xor_sync(0xffffffffu, s, offset);
  if (threadIdx.x % kWarp == 0) atomicAdd(sum, s);
}

__global__ void widenKernel(const std::uint16_t* in, float* out, long n, bool bf16) {
  for (long i = globalIndex(); i < n; i += gridStride()) out[i] = widenOne(in[i], bf16);
}
__global__ void narrowKernel(const float* in, std::uint16_t* out, long n, bool bf16) {
  for (long i = globalIndex(); i < n; i += gridStride()) out[i] = narrowOne(in[i], bf16);
}
__global__ void roundToKernel(float* x, long n, bool bf16) {
  for (long i = globalIndex(); i < n; i += gridStride())
    x[i] = widenOne(narrowOne(x[i], bf16), bf16);
}
__global__ void accumulateLowKernel(std::uint16_t* acc, const std::uint16_t* add, long n,
                                    bool bf16) {
  for (long i = globalIndex(); i < n; i += gridStride())
    acc[i] = narrowOne(widenOne(acc[i], bf16) + widenOne(add[i], bf16), bf16);
}
__global__ void accumulateRoundedKernel(std::uint16_t* acc, const float* add, long n, bool bf16) {
  for (long i = globalIndex(); i < n; i += gridStride())
    acc[i] = narrowOne(widenOne(acc[i], bf16) + add[i], bf16);
}

bool isBf16(DType t, const char* what) {
  if (t != DType::BF16 && t != DType::F16)
    throw CudaError(std::string(what) + ": 16-bit type must be bf16 or fp16, got " +
                    std::string(dtypeName(t)));
  return t == DType::BF16;
}

struct ReduceTargets {
  const void* src[kMaxReduceBuffers];
  void* dst[kMaxReduceBuffers];
  int nsrc = 0, ndst = 0;
};

// Storage type S, accumulated as A: f32, i32 and i64 as themselves, bf16 / fp16 (stored as
// 16-bit words) in f32.
template <typename S, typename A>
__device__ A loadAs(const void* p, long i, bool bf16) {
  if constexpr (sizeof(S) == 2 && sizeof(A) == 4) {
    return widenOne(static_cast<const std::uint16_t*>(p)[i], bf16);
  } else {
    return static_cast<const S*>(p)[i];
  }
}
template <typename S, typename A>
__device__ void storeAs(void* p, long i, A v, bool bf16) {
  if constexpr (sizeof(S) == 2 && sizeof(A) == 4) {
    static_cast<std::uint16_t*>(p)[i] = narrowOne(v, bf16);
  } else {
    static_cast<S*>(p)[i] = v;
  }
}
template <typename A>
__device__ A addAs(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

// reduce_kernels.cpp's fold per element: every source read before any destination is written.
template <typename S, typename A>
__global__ void reduceKernel(ReduceTargets t, long n, ReduceOp op, int divisor, bool bf16) {
  for (long i = globalIndex(); i < n; i += gridStride()) {
    A acc = loadAs<S, A>(t.src[0], i, bf16);
    for (int s = 1; s < t.nsrc; ++s) {
      const A x = loadAs<S, A>(t.src[s], i, bf16);
      if (op == ReduceOp::Max) {
        acc = x > acc ? x : acc;
      } else if (op == ReduceOp::Min) {
        acc = x < acc ? x : acc;
      } else {
        acc = addAs(acc, x);
      }
    }
    if (op == ReduceOp::Avg) acc = acc / static_cast<A>(divisor);
    for (int d = 0; d < t.ndst; ++d) storeAs<S, A>(t.dst[d], i, acc, bf16);
  }
}

unsigned rowBlocks(int rows) {
  constexpr int rowsPerBlock = kThreads / kWarp;
  return static_cast<unsigned>((rows + rowsPerBlock - 1) / rowsPerBlock);
}

}  // namespace

void geluForward(float* out, const float* inp, long n, cudaStream_t stream) {
  geluForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(out, inp, n);
  checkLaunch("gelu_forward");
}

void geluBackward(float* dinp, const float* inp, const float* dout, long n, cudaStream_t stream) {
  geluBackwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(dinp, inp, dout, n);
  checkLaunch("gelu_backward");
}

void fill(float* p, float value, long n, cudaStream_t stream) {
  fillKernel<<<blocksFor(n), kThreads, 0, stream>>>(p, value, n);
  checkLaunch("fill");
}

void residualForward(float* out, const float* a, const float* b, long n, cudaStream_t stream) {
  residualKernel<<<blocksFor(n), kThreads, 0, stream>>>(out, a, b, n);
  checkLaunch("residual_forward");
}

void biasForward(float* out, const float* bias, long rows, long C, cudaStream_t stream) {
  biasKernel<<<blocksFor(rows * C), kThreads, 0, stream>>>(out, bias, rows * C, C);
  checkLaunch("bias_forward");
}

void biasBackward(float* dbias, const float* dout, long rows, long C, cudaStream_t stream) {
  biasBackwardKernel<<<columnBlocks(C), kSumWarps * kWarp, 0, stream>>>(dbias, dout, rows, C);
  checkLaunch("bias_backward");
}

namespace {

CudaError wideHead(const char* kernel, int hs) {
  return CudaError(std::string(kernel) + ": head size " + std::to_string(hs) + " is above " +
                   std::to_string(k::kFlashMaxHeadSize));
}

dim3 attentionGrid(int B, int T, int NH) {
  return {static_cast<unsigned>((T + kFlashRows - 1) / kFlashRows), static_cast<unsigned>(NH),
          static_cast<unsigned>(B)};
}

}  // namespace

void attentionForward(float* out, float* stats, const float* qkv, int B, int T, int C, int NH,
                      cudaStream_t stream) {
  const int hs = C / NH;
  const float scale = k::flashScale(hs);
  const bool launched = k::withFlashHeadSize(hs, [&](auto HS) {
    attentionForwardKernel<decltype(HS)::value>
        <<<attentionGrid(B, T, NH), kFlashRows, 0, stream>>>(out, stats, qkv, T, C, NH, scale);
  });
  if (!launched) throw wideHead("attention_forward", hs);
  checkLaunch("attention_forward");
}

void attentionBackward(float* dqkv, const float* dout, const float* qkv, const float* out,
                       const float* stats, int B, int T, int C, int NH, cudaStream_t stream) {
  const int hs = C / NH;
  const float scale = k::flashScale(hs);
  const bool launched = k::withFlashHeadSize(hs, [&](auto HS) {
    const dim3 grid = attentionGrid(B, T, NH);
    attentionBackwardQueryKernel<decltype(HS)::value>
        <<<grid, kFlashRows, 0, stream>>>(dqkv, dout, qkv, out, stats, T, C, NH, scale);
    attentionBackwardKeyKernel<decltype(HS)::value>
        <<<grid, kFlashRows, 0, stream>>>(dqkv, dout, qkv, out, stats, T, C, NH, scale);
  });
  if (!launched) throw wideHead("attention_backward", hs);
  checkLaunch("attention_backward");
}

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int N, int C, cudaStream_t stream) {
  layernormForwardKernel<<<rowBlocks(N), kThreads, 0, stream>>>(out, mean, rstd, nullptr, nullptr,
                                                                inp, weight, bias, N, C);
  checkLaunch("layernorm_forward");
}

void residualLayernormForward(float* sum, float* out, float* mean, float* rstd, const float* a,
                              const float* b, const float* weight, const float* bias, int N, int C,
                              cudaStream_t stream) {
  layernormForwardKernel<<<rowBlocks(N), kThreads, 0, stream>>>(out, mean, rstd, sum, a, b, weight,
                                                                bias, N, C);
  checkLaunch("residual_layernorm_forward");
}

void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int N, int C, const float* dresidual, cudaStream_t stream) {
  if (dinp != nullptr) {
    layernormInputGradKernel<<<rowBlocks(N), kThreads, 0, stream>>>(dinp, dout, inp, weight, mean,
                                                                    rstd, dresidual, N, C);
    checkLaunch("layernorm_backward");
  }
  layernormWeightGradKernel<<<columnBlocks(C), kSumWarps * kWarp, 0, stream>>>(
      dweight, dbias, dout, inp, mean, rstd, N, C);
  checkLaunch("layernorm_backward");
}

void embeddingForward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe,
                      int B, int T, int C, cudaStream_t stream) {
  const long n = static_cast<long>(B) * T * C;
  embeddingForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(out, tokens, wte, wpe, T, C, n);
  checkLaunch("embedding_forward");
}

void embeddingBackward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                       int B, int T, int C, cudaStream_t stream) {
  const long n = static_cast<long>(B) * T;
  tokenGradKernel<<<tokenGradBlocks(C), kThreads, 0, stream>>>(dwte, dout, tokens, n, C, 0,
                                                               INT_MAX);
  positionGradKernel<<<blocksFor(static_cast<long>(T) * C), kThreads, 0, stream>>>(dwpe, dout, n, 0,
                                                                                   T, C);
  checkLaunch("embedding_backward");
}

void embeddingPartForward(float* out, const std::int32_t* tokens, const float* wtePart, int N,
                          int first, int part, int C, cudaStream_t stream) {
  const long n = static_cast<long>(N) * C;
  embeddingPartForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(out, tokens, wtePart, first,
                                                                    part, C, n);
  checkLaunch("embedding_forward");
}

void embeddingPartBackward(float* dwtePart, const float* dout, const std::int32_t* tokens, int N,
                           int first, int part, int C, cudaStream_t stream) {
  tokenGradKernel<<<tokenGradBlocks(C), kThreads, 0, stream>>>(dwtePart, dout, tokens, N, C, first,
                                                               part);
  checkLaunch("embedding_backward");
}

void positionForward(float* out, const float* wpe, int rows, int row0, int T, int C,
                     cudaStream_t stream) {
  const long n = static_cast<long>(rows) * C;
  positionForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(out, wpe, row0, T, C, n);
  checkLaunch("position_embedding_forward");
}

void positionBackward(float* dwpe, const float* dout, int rows, int row0, int T, int C,
                      cudaStream_t stream) {
  positionGradKernel<<<blocksFor(static_cast<long>(std::min(rows, T)) * C), kThreads, 0, stream>>>(
      dwpe, dout, rows, row0, T, C);
  checkLaunch("position_embedding_backward");
}

void crossEntropyPartMax(float* maxima, const float* logits, int N, int V, cudaStream_t stream) {
  crossEntropyPartMaxKernel<<<static_cast<unsigned>(N), kThreads, 0, stream>>>(maxima, logits, V);
  checkLaunch("cross_entropy_forward");
}

void crossEntropyPartExp(float* sums, float* probs, const float* logits, const float* maxima,
                         const std::int32_t* targets, int N, int V, int first,
                         cudaStream_t stream) {
  crossEntropyPartExpKernel<<<static_cast<unsigned>(N), kThreads, 0, stream>>>(
      sums, probs, logits, maxima, targets, N, V, first);
  checkLaunch("cross_entropy_forward");
}

void crossEntropyPartFinish(float* losses, float* probs, const float* sums, const float* maxima,
                            int N, int V, cudaStream_t stream) {
  crossEntropyPartFinishKernel<<<static_cast<unsigned>(N), kThreads, 0, stream>>>(
      losses, probs, sums, maxima, N, V);
  checkLaunch("cross_entropy_forward");
}

void crossEntropyPartBackward(float* dlogits, const std::int32_t* targets, int N, int V, int first,
                              float weight, cudaStream_t stream) {
  const long n = static_cast<long>(N) * V;
  crossEntropyPartBackwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(dlogits, targets, V, first,
                                                                        weight, n);
  checkLaunch("cross_entropy_backward");
}

void crossEntropyForward(float* losses, float* probs, const float* logits,
                         const std::int32_t* targets, int N, int V, cudaStream_t stream) {
  crossEntropyForwardKernel<<<static_cast<unsigned>(N), kThreads, 0, stream>>>(losses, probs,
                                                                               logits, targets, V);
  checkLaunch("cross_entropy_forward");
}

void adamwUpdate(float* param, const float* grad, float* m, float* v, long n,
                 const kernels::AdamWConstants<float>& k, float gradScale, cudaStream_t stream) {
  adamwKernel<<<blocksFor(n), kThreads, 0, stream>>>(param, grad, m, v, n, k, gradScale);
  checkLaunch("adamw");
}

void adamwUpdateMixed(float* master, std::uint16_t* param, const std::uint16_t* grad, float* m,
                      float* v, long n, const kernels::AdamWConstants<float>& k, float gradScale,
                      DType type, cudaStream_t stream) {
  const bool bf16 = isBf16(type, "adamw");
  adamwMixedKernel<<<blocksFor(n), kThreads, 0, stream>>>(master, param, grad, m, v, n, k,
                                                          gradScale, bf16);
  checkLaunch("adamw");
}

void addSumOfSquares(double* sum, const void* grad, long n, DType type, cudaStream_t stream) {
  const bool low = type != DType::F32;
  const bool bf16 = low && isBf16(type, "grad_norm");
  sumOfSquaresKernel<<<blocksFor(n), kThreads, 0, stream>>>(sum, grad, n, low, bf16);
  checkLaunch("grad_norm");
}

void widen(const std::uint16_t* in, float* out, long n, DType from, cudaStream_t stream) {
  const bool bf16 = isBf16(from, "widen");
  widenKernel<<<blocksFor(n), kThreads, 0, stream>>>(in, out, n, bf16);
  checkLaunch("widen");
}

void narrow(const float* in, std::uint16_t* out, long n, DType to, cudaStream_t stream) {
  const bool bf16 = isBf16(to, "narrow");
  narrowKernel<<<blocksFor(n), kThreads, 0, stream>>>(in, out, n, bf16);
  checkLaunch("narrow");
}

void reduceBuffers(void* const* dsts, int ndst, const void* const* srcs, int nsrc, long count,
                   DType type, ReduceOp op, int divisor, cudaStream_t stream) {
  if (nsrc < 1 || nsrc > kMaxReduceBuffers || ndst < 1 || ndst > kMaxReduceBuffers) {
    throw CudaError("reduce: " + std::to_string(nsrc) + " sources and " + std::to_string(ndst) +
                    " destinations; a GPU's in-process ranks reduce 1 to " +
                    std::to_string(kMaxReduceBuffers) + " of each");
  }
  if (count == 0) return;
  ReduceTargets t;
  std::copy(srcs, srcs + nsrc, t.src);
  std::copy(dsts, dsts + ndst, t.dst);
  t.nsrc = nsrc;
  t.ndst = ndst;
  const unsigned blocks = blocksFor(count);
  switch (type) {
    case DType::F32:
      reduceKernel<float, float><<<blocks, kThreads, 0, stream>>>(t, count, op, divisor, false);
      break;
    case DType::BF16:
    case DType::F16:
      reduceKernel<std::uint16_t, float>
          <<<blocks, kThreads, 0, stream>>>(t, count, op, divisor, type == DType::BF16);
      break;
    case DType::I32:
      reduceKernel<std::int32_t, std::int32_t>
          <<<blocks, kThreads, 0, stream>>>(t, count, op, divisor, false);
      break;
    case DType::I64:
      reduceKernel<std::int64_t, std::int64_t>
          <<<blocks, kThreads, 0, stream>>>(t, count, op, divisor, false);
      break;
  }
  checkLaunch("reduce");
}

void roundTo(float* x, long n, DType type, cudaStream_t stream) {
  if (type == DType::F32) return;
  const bool bf16 = isBf16(type, "roundTo");
  roundToKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, n, bf16);
  checkLaunch("roundTo");
}

void accumulate(void* acc, const void* add, long n, DType type, cudaStream_t stream) {
  if (type == DType::F32) {
    auto* a = static_cast<float*>(acc);
    residualKernel<<<blocksFor(n), kThreads, 0, stream>>>(a, a, static_cast<const float*>(add), n);
  } else {
    accumulateLowKernel<<<blocksFor(n), kThreads, 0, stream>>>(
        static_cast<std::uint16_t*>(acc), static_cast<const std::uint16_t*>(add), n,
        isBf16(type, "accumulate"));
  }
  checkLaunch("accumulate");
}

void accumulateRounded(std::uint16_t* acc, const float* add, long n, DType type,
                       cudaStream_t stream) {
  const bool bf16 = isBf16(type, "accumulateRounded");
  accumulateRoundedKernel<<<blocksFor(n), kThreads, 0, stream>>>(acc, add, n, bf16);
  checkLaunch("accumulateRounded");
}

}  // namespace parascope::cuda
