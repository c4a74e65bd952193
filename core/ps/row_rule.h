// The per-row update rules of the parameter-server tables (Paddle's sparse accessors): SGD,
// Adagrad and Adam over a run of values with their state. A sparse row is [values | state], a
// dense slice keeps its state in an array of its own; both go through applyRule, so a row
// updated on a server, on a geo worker or by the collective run changes by the same bits.
#pragma once

#include <cstdint>

#include "core/config/ps_config.h"

namespace parascope::ps {

// Updates n values `w` by gradient `g` under `t`. state: t.stateFloats(n) floats laid out as
// [accumulator n] (adagrad) or [m n | v n | beta1^k | beta2^k] (adam, the powers starting at 1).
void applyRule(const TableSpec& t, int n, float* w, float* state, const float* g);

// Sets a fresh state of t.stateFloats(n) floats.
void initRuleState(const TableSpec& t, int n, float* state);

}  // namespace parascope::ps
