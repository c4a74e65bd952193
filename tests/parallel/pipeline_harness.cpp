#include "pipeline_harness.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/common/random.h"
#include "core/model/gpt_tensor_parallel.h"

namespace pptest {

using namespace parascope;

std::string textFixture() {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parascope-pp-text-" + std::to_string(getpid()) + ".txt"))
                               .string();
  if (std::filesystem::exists(path)) return path;
  static const char* words[] = {"each ", "stage ", "sends ", "its ",     "output ",   "to ",
                                "the ",  "next ",  "while ", "bubbles ", "shrink.\n", "micro "};
  Rng rng(11);
  std::string text;
  while (text.size() < 64 * 1024) text += words[static_cast<int>(rng.uniform() * 12) % 12];
  const std::string tmp = path + ".part";
  std::ofstream(tmp, std::ios::binary) << text;
  std::filesystem::rename(tmp, path);
  return path;
}

TrainConfig tinyConfig(const std::vector<std::string>& overrides, int worldSize) {
  nlohmann::json doc = {
      {"model",
       {{"type", "gpt"},
        {"vocab_size", 256},
        {"context_length", 16},
        {"hidden_size", 32},
        {"num_attention_heads", 2},
        {"num_layers", 4}}},
      {"data", {{"type", "text"}, {"path", textFixture()}, {"validation_fraction", 0.1}}},
      {"train_batch_size", 16},
      {"optimizer", {{"params", {{"lr", 1e-2}, {"eps", 1e-6}}}}},
      {"gradient_clipping", 1.0},
      {"eval_iters", 2},
      {"seed", 5}};
  for (const auto& o : overrides) applyOverride(doc, o);
  return parseTrainConfig(doc, worldSize);
}

RunRecord train(const TrainConfig& config, int steps, const Communicator& world,
                Allocator* allocator) {
  Trainer t(config, allocator ? *allocator : defaultAllocator(), world);
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

std::string compare(const RunRecord& want, const RunRecord& got, double rtol, double atol) {
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
  if (got.parameters.empty()) return "the rank holds no parameters";
  for (const auto& [name, g] : got.parameters) {
    const auto it = want.parameters.find(name);
    if (it == want.parameters.end()) return "unexpected parameter " + name;
    const std::vector<float>& w = it->second;
    if (w.size() != g.size()) return "size of " + name;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (!close(w[i], g[i])) {
        std::snprintf(buf, sizeof buf, "%s[%zu]: %.9g, one rank %.9g", name.c_str(), i, g[i], w[i]);
        return buf;
      }
    }
  }
  return {};
}

}  // namespace pptest
