#include "core/ps/row_rule.h"

#include <cmath>

namespace parascope::ps {

namespace {
// Keeps adagrad's first step finite for a value whose gradient is exactly zero.
constexpr float kAdagradEpsilon = 1e-8f;
}  // namespace

void applyRule(const TableSpec& t, int n, float* w, float* state, const float* g) {
  const auto lr = static_cast<float>(t.learningRate);
  switch (t.rule) {
    case RowRule::Sgd:
      for (int i = 0; i < n; ++i) w[i] -= lr * g[i];
      return;
    case RowRule::Adagrad:
      for (int i = 0; i < n; ++i) {
        state[i] += g[i] * g[i];
        w[i] -= lr * g[i] / (std::sqrt(state[i]) + kAdagradEpsilon);
      }
      return;
    case RowRule::Adam: {
      const auto b1 = static_cast<float>(t.beta1), b2 = static_cast<float>(t.beta2);
      const auto eps = static_cast<float>(t.epsilon);
      float* m = state;
      float* v = state + n;
      float* powers = state + 2 * n;
      powers[0] *= b1;
      powers[1] *= b2;
      const float c1 = 1.0f - powers[0], c2 = 1.0f - powers[1];
      for (int i = 0; i < n; ++i) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        w[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps);
      }
      return;
    }
  }
}

void initRuleState(const TableSpec& t, int n, float* state) {
  const int floats = t.stateFloats(n);
  for (int i = 0; i < floats; ++i) state[i] = 0;
  if (t.rule == RowRule::Adagrad) {
    for (int i = 0; i < n; ++i) state[i] = static_cast<float>(t.initialG2sum);
  }
  if (t.rule == RowRule::Adam) state[2 * n] = state[2 * n + 1] = 1.0f;
}

}  // namespace parascope::ps
