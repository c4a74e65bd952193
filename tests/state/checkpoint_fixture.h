// Fake training state for the checkpoint tests: a few logical tensors whose every element has a
// value fixed by (step, tensor, field, index), held by N fake ranks as uneven slices, two per
// rank per (tensor, field), so a reader's slicing never lines up with the writer's.
#pragma once

#include <bit>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/state/checkpoint.h"

namespace parascope::test {

// n scales the sizes: 4 n^2 + 51 n elements per field.
inline std::vector<LogicalTensor> fakeTensors(std::int64_t n) {
  return {{"h.0.attn.c_attn.weight", {3 * n, n}},
          {"h.0.ln_1.bias", {n}},
          {"wte.weight", {50, n}},
          {"h.0.mlp.c_fc.weight", {n, n}}};
}

inline std::int64_t elementCount(const LogicalTensor& t) {
  std::int64_t count = 1;
  for (std::int64_t d : t.shape) count *= d;
  return count;
}

// Finite floats of both signs with all 23 mantissa bits used, so bf16 / fp16 rounding is
// exercised (ties included, one in 2^16 for bf16).
inline float stateValue(int step, std::size_t tensor, StateField field, std::int64_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(step) << 48) ^
                    (static_cast<std::uint64_t>(tensor) << 40) ^
                    (static_cast<std::uint64_t>(field) << 36) ^ static_cast<std::uint64_t>(i);
  x *= 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  const auto bits =
      static_cast<std::uint32_t>((x & 0x807fffffull) | ((125ull + ((x >> 40) & 3)) << 23));
  return std::bit_cast<float>(bits);
}

struct FakeRanks {
  std::deque<std::vector<float>> memory;        // stable addresses for the slices' data
  std::vector<std::vector<StateSlice>> slices;  // per rank
};

inline FakeRanks makeFakeRanks(const std::vector<LogicalTensor>& tensors, int step, int ranks) {
  FakeRanks out;
  out.slices.resize(static_cast<std::size_t>(ranks));
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const std::int64_t n = elementCount(tensors[t]);
    for (int f = 0; f < kStateFieldCount; ++f) {
      const auto field = static_cast<StateField>(f);
      // Uneven cut points: rank r's share grows with r.
      const auto cut = [&](std::int64_t r) { return n * r * (r + 2) / (ranks * (ranks + 2)); };
      for (int r = 0; r < ranks; ++r) {
        const std::int64_t begin = cut(r), end = cut(r + 1);
        const std::int64_t mid = begin + (end - begin) / 3;
        for (auto [b, e] : {std::pair{begin, mid}, std::pair{mid, end}}) {
          if (e == b) continue;
          std::vector<float>& data = out.memory.emplace_back(static_cast<std::size_t>(e - b));
          for (std::int64_t i = b; i < e; ++i) data[i - b] = stateValue(step, t, field, i);
          out.slices[r].push_back({tensors[t].name, field, b, e - b, data.data(), DType::F32});
        }
      }
    }
  }
  return out;
}

inline TrainingCounters fakeCounters(int step) {
  TrainingCounters c;
  c.step = step;
  c.skipped = step / 3;
  c.nextSample = std::int64_t{8} * step;
  c.lossScale = 32768.0;
  c.hysteresis = 2;
  c.scalerIteration = step;
  c.lastOverflow = step > 2 ? step - 2 : -1;
  return c;
}

// What a run's ranks do to save: prepare, every rank's shard, commit. Returns the step directory.
inline std::string saveFakeCheckpoint(const std::string& dir, int step,
                                      const std::vector<LogicalTensor>& tensors, int ranks,
                                      int keep) {
  prepareCheckpoint(dir, step);
  const FakeRanks state = makeFakeRanks(tensors, step, ranks);
  CheckpointManifest manifest;
  manifest.config = {{"model", {{"type", "gpt"}, {"num_layers", 1}}}, {"seed", 1234}};
  manifest.counters = fakeCounters(step);
  manifest.tensors = tensors;
  for (int r = 0; r < ranks; ++r) {
    addShard(manifest, writeShard(stagingDirectory(dir, step), r, state.slices[r]));
  }
  return commitCheckpoint(dir, step, manifest, keep);
}

}  // namespace parascope::test
