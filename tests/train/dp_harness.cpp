#include "dp_harness.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/comm/launch.h"
#include "core/common/random.h"
#include "core/model/gpt_tensor_parallel.h"

namespace dptest {

using namespace parascope;

std::string writeTextFixture(const std::string& tag, std::uint64_t seed, std::size_t bytes,
                             const std::vector<const char*>& words) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parascope-" + tag + "-text-" + std::to_string(getpid()) + ".txt"))
                               .string();
  if (std::filesystem::exists(path)) return path;
  Rng rng(seed);
  const auto n = static_cast<double>(words.size());
  std::string text;
  while (text.size() < bytes)
    text += words[static_cast<std::size_t>(rng.uniform() * n) % words.size()];
  const std::string tmp = path + ".part";
  std::ofstream(tmp, std::ios::binary) << text;
  std::filesystem::rename(tmp, path);
  return path;
}

std::string textFixture() {
  return writeTextFixture("dp", 7, 96 * 1024,
                          {"the ", "rank ", "sums ", "a ", "bucket ", "of ", "gradients ", "while ",
                           "backward ", "runs.\n", "every ", "shard "});
}

TrainConfig tinyConfig(const std::vector<std::string>& overrides, int worldSize) {
  nlohmann::json doc = {
      {"model",
       {{"type", "gpt"},
        {"vocab_size", 256},
        {"context_length", 16},
        {"hidden_size", 32},
        {"num_attention_heads", 2},
        {"num_layers", 2}}},
      {"data", {{"type", "text"}, {"path", textFixture()}, {"validation_fraction", 0.1}}},
      {"train_batch_size", 16},
      {"optimizer", {{"params", {{"lr", 1e-2}}}}},
      {"gradient_clipping", 1.0},
      {"seed", 99}};
  for (const auto& o : overrides) applyOverride(doc, o);
  return parseTrainConfig(doc, worldSize);
}

RunRecord train(const TrainConfig& config, int steps, const Communicator& world,
                Allocator* allocator, const std::function<void(Trainer&)>& setup) {
  Trainer t(config, allocator ? *allocator : defaultAllocator(), world);
  if (setup) setup(t);
  RunRecord r;
  for (int i = 0; i < steps; ++i) {
    r.reports.push_back(t.step());
    r.losses.push_back(r.reports.back().loss);
  }
  t.gatherParameters();
  // Logical values: tensor-parallel parts assembled over the tensor group.
  for (const auto& [name, value] : gatherParameterValues(t.model(), t.mesh().tensor())) {
    const float* v = value.data<float>();
    r.parameters[name].assign(v, v + value.numel());
  }
  return r;
}

ModelState measureModelState(const TrainConfig& config) {
  const int n = config.parallel.worldSize();
  ModelState m;
  m.ranks.resize(static_cast<std::size_t>(n));
  runInProcess(n, [&](Communicator& world) {
    Allocator a;
    Trainer t(config, a, world);
    t.step();
    a.resetPeaks();
    t.step();
    if (world.rank() == 0) {
      m.parameters = t.model().parameterCount();
      m.tensors = static_cast<std::int64_t>(t.model().parameters().size());
    }
    m.ranks[static_cast<std::size_t>(world.rank())] = {
        a.liveBytes(MemoryCategory::Parameter),      a.liveBytes(MemoryCategory::Gradient),
        a.liveBytes(MemoryCategory::OptimizerState), a.liveBytes(MemoryCategory::Workspace),
        a.peakBytes(MemoryCategory::Gradient),       a.peakBytes(MemoryCategory::Parameter)};
  });
  return m;
}

std::string compare(const RunRecord& want, const RunRecord& got, double rtol, double atol,
                    Held held) {
  auto close = [&](double w, double g) { return std::fabs(g - w) <= atol + rtol * std::fabs(w); };
  char buf[256];
  if (want.losses.size() != got.losses.size()) return "different step counts";
  for (std::size_t i = 0; i < want.losses.size(); ++i) {
    if (!close(want.losses[i], got.losses[i])) {
      std::snprintf(buf, sizeof buf, "loss of step %zu: %.9g, one rank %.9g", i + 1, got.losses[i],
                    want.losses[i]);
      return buf;
    }
  }
  if (held == Held::Some && got.parameters.empty()) return "the rank holds no parameters";
  for (const auto& [name, g] : got.parameters)
    if (!want.parameters.count(name)) return "unexpected parameter " + name;
  for (const auto& [name, w] : want.parameters) {
    const auto it = got.parameters.find(name);
    if (it == got.parameters.end()) {
      if (held == Held::Some) continue;
      return "missing parameter " + name;
    }
    const std::vector<float>& g = it->second;
    if (g.size() != w.size()) return "size of " + name;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (!close(w[i], g[i])) {
        std::snprintf(buf, sizeof buf, "%s[%zu]: %.9g, one rank %.9g", name.c_str(), i, g[i], w[i]);
        return buf;
      }
    }
  }
  return {};
}

}  // namespace dptest
