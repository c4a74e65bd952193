#include "core/ps/skip_gram.h"

#include <algorithm>
#include <cmath>

namespace parascope::ps {

namespace {

// -log sigmoid(x), without overflow for large |x|.
double softplusNeg(double x) {
  return x > 0 ? std::log1p(std::exp(-x)) : -x + std::log1p(std::exp(x));
}

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

float dot(const float* a, const float* b, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// One pass over the batch; with dIn null only the loss is computed.
double pass(const Word2VecSpec& m, const Word2VecBatch& b, const RowSet& rows, const float* in,
            const float* out, float* dIn, float* dOut, float scale) {
  const int dim = m.dim, slots = 2 * m.window, negatives = m.negatives;
  std::vector<float> h(static_cast<std::size_t>(dim)), dh(static_cast<std::size_t>(dim));
  double loss = 0;
  for (int c = 0; c < b.centres; ++c) {
    const float* word = in + static_cast<std::size_t>(rows.index[2 * c]) * dim;
    const float* pair = in + static_cast<std::size_t>(rows.index[2 * c + 1]) * dim;
    for (int i = 0; i < dim; ++i) h[i] = 0.5f * (word[i] + pair[i]);
    std::fill(dh.begin(), dh.end(), 0.0f);
    for (int j = 0; j < slots; ++j) {
      const std::size_t slot = static_cast<std::size_t>(c) * slots + j;
      const std::int32_t context = b.contexts[slot];
      if (context < 0) continue;
      for (int k = -1; k < negatives; ++k) {
        const std::int32_t target = k < 0 ? context : b.negatives[slot * negatives + k];
        const float* u = out + static_cast<std::size_t>(target) * dim;
        const float x = dot(h.data(), u, dim);
        loss += softplusNeg(k < 0 ? x : -x);
        if (dIn == nullptr) continue;
        const float g = scale * (sigmoid(x) - (k < 0 ? 1.0f : 0.0f));
        float* du = dOut + static_cast<std::size_t>(target) * dim;
        for (int i = 0; i < dim; ++i) {
          dh[i] += g * u[i];
          du[i] += g * h[i];
        }
      }
    }
    if (dIn == nullptr) continue;
    float* dWord = dIn + static_cast<std::size_t>(rows.index[2 * c]) * dim;
    float* dPair = dIn + static_cast<std::size_t>(rows.index[2 * c + 1]) * dim;
    for (int i = 0; i < dim; ++i) {
      dWord[i] += 0.5f * dh[i];
      dPair[i] += 0.5f * dh[i];
    }
  }
  return loss;
}

}  // namespace

void distinctRows(std::span<const std::int64_t> rows, RowSet& out) {
  out.rows.assign(rows.begin(), rows.end());
  std::sort(out.rows.begin(), out.rows.end());
  out.rows.erase(std::unique(out.rows.begin(), out.rows.end()), out.rows.end());
  out.index.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out.index[i] = static_cast<std::int32_t>(
        std::lower_bound(out.rows.begin(), out.rows.end(), rows[i]) - out.rows.begin());
  }
}

double skipGramForwardBackward(const Word2VecSpec& m, const Word2VecBatch& batch,
                               const RowSet& rows, const float* in, const float* out, float* dIn,
                               float* dOut, float scale) {
  return pass(m, batch, rows, in, out, dIn, dOut, scale);
}

double skipGramLoss(const Word2VecSpec& m, const Word2VecBatch& batch, const RowSet& rows,
                    const float* in, const float* out) {
  return pass(m, batch, rows, in, out, nullptr, nullptr, 0);
}

}  // namespace parascope::ps
