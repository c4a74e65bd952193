#include "dp_harness.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/common/random.h"
#include "core/model/gpt_layers.h"
#include "core/session/rank_hooks.h"
#include "core/session/session.h"

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
      {"optimizer", {{"params", {{"lr", 1e-2}, {"eps", 1e-2}}}}},
      {"gradient_clipping", 1.0},
      {"seed", 99}};
  for (const auto& o : overrides) applyOverride(doc, o);
  return parseTrainConfig(doc, worldSize);
}

namespace {

// n elements of type `type` (f32, bf16 or fp16) at `src`, as f32.
std::vector<float> widen(const void* src, DType type, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  if (type == DType::F32) {
    std::memcpy(out.data(), src, out.size() * sizeof(float));
  } else {
    convertToFloat(static_cast<const std::uint16_t*>(src), out, type);
  }
  return out;
}

}  // namespace

Values reducedGradients(Trainer& t) {
  Model& model = t.model();
  const DType type = model.computeType();
  const GradientReducer* reducer = t.gradientReducer();
  // The flat gradient space of this rank's model (flat_layout.h), whole: the trainer's layout.
  std::vector<float> flat;
  FlatLayout layout;
  if (reducer) {
    Communicator& dp = t.mesh().data();
    layout = makeFlatLayout(model, dp.size(), t.config().parallel);
    const Tensor& g = reducer->gradients();
    flat = widen(g.raw(), type, g.numel());
    if (reducer->sharded()) {
      // Rank d holds part d of every bucket; all-gathering the parts rebuilds each bucket.
      const std::vector<float> shard = flat;
      flat.assign(static_cast<std::size_t>(layout.total), 0.0f);
      for (const FlatBucket& b : layout.buckets) {
        dp.allGather(shard.data() + b.shardOffset, flat.data() + b.begin,
                     static_cast<std::size_t>(layout.partSize(b)), DType::F32);
      }
    }
  }
  const double scale = t.lossScaler().scale();  // a power of two: dividing is exact
  Values out;
  const auto& params = model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    std::vector<float> local = reducer
                                   ? std::vector<float>(flat.begin() + layout.offset[i],
                                                        flat.begin() + layout.offset[i] + p.numel())
                                   : widen(p.storedGrad().raw(), p.storage, p.numel());
    for (float& v : local) v = static_cast<float>(v / scale);
    if (p.split.whole()) {
      out[p.name] = std::move(local);
      continue;
    }
    Communicator& tp = t.mesh().tensor();
    std::vector<float> parts(local.size() * static_cast<std::size_t>(tp.size()));
    tp.allGather(local.data(), parts.data(), local.size(), DType::F32);
    std::vector<float>& full = out[p.name];
    full.assign(static_cast<std::size_t>(shapeNumel(p.fullShape)), 0.0f);
    for (int r = 0; r < tp.size(); ++r) {
      TensorSplit s = p.split;
      s.index = r;
      placeSplitPart(parts.data() + static_cast<std::size_t>(r) * local.size(), full.data(),
                     p.fullShape, s);
    }
  }
  return out;
}

RunRecord train(const TrainConfig& config, int steps, const RunOptions& run) {
  RunRecord r;
  SessionOptions options;
  options.world = run.world;
  options.allocator = run.allocator;
  options.evaluate = run.evaluate;
  RankHooks hooks;
  hooks.built = run.built;
  hooks.stepped = run.stepped;
  hooks.gradients = [&r](Trainer& t) { r.gradients.push_back(reducedGradients(t)); };
  hooks.finished = [&](Trainer& t) {
    if (run.finished) run.finished(t);
    t.gatherParameters();
    // Logical values: tensor-parallel parts assembled over the tensor group.
    for (const auto& [name, value] : gatherParameterValues(t.model(), t.mesh().tensor())) {
      const float* v = value.data<float>();
      r.parameters[name].assign(v, v + value.numel());
    }
  };
  options.rankHooks = std::make_shared<RankHooks>(std::move(hooks));
  Session session(config, std::move(options));
  // Stops the run after `steps` steps, whatever train_iters says.
  struct Recorder : SessionObserver {
    Session& session;
    RunRecord& record;
    int steps;
    Recorder(Session& s, RunRecord& r, int n) : session(s), record(r), steps(n) {}
    void onRankStep(const StepReport& report) override {
      record.reports.push_back(report);
      record.losses.push_back(report.loss);
      if (static_cast<int>(record.reports.size()) == steps) session.stop();
    }
    void onEval(const EvalReport& report) override { record.evals.push_back(report); }
  } recorder(session, r, steps);
  session.addObserver(recorder);
  if (steps == 0) session.stop();
  session.run();
  if (const std::optional<ErrorReport> error = session.error()) {
    if (error->userError) throw UserError(error->reason);
    throw std::runtime_error(error->reason);
  }
  return r;
}

std::vector<EvalReport> evaluateAfterOneStep(const TrainConfig& config) {
  std::vector<RunRecord> ranks(static_cast<std::size_t>(config.parallel.worldSize()));
  runInProcess(config.parallel.worldSize(), [&](Communicator& world) {
    ranks[static_cast<std::size_t>(world.rank())] =
        train(config, 1, RunOptions{.world = world, .evaluate = true});
  });
  std::vector<EvalReport> out;
  for (const RunRecord& r : ranks) {
    if (r.evals.size() != 1) {
      throw std::runtime_error(std::to_string(r.evals.size()) + " evaluations after one step");
    }
    out.push_back(r.evals[0]);
  }
  return out;
}

ModelState measureModelState(const TrainConfig& config) {
  const int n = config.parallel.worldSize();
  ModelState m;
  m.ranks.resize(static_cast<std::size_t>(n));
  runInProcess(n, [&](Communicator& world) {
    Allocator a;
    StateBytes& bytes = m.ranks[static_cast<std::size_t>(world.rank())];
    RunOptions run{.world = world, .allocator = &a};
    // The session resets the peaks before each step: the construction's are read here, the
    // steps' from their reports.
    run.built = [&](Trainer&) {
      bytes.gradPeak = a.peakBytes(MemoryCategory::Gradient);
      bytes.paramPeak = a.peakBytes(MemoryCategory::Parameter);
    };
    run.finished = [&](Trainer& t) {
      if (world.rank() == 0) {
        m.parameters = t.model().parameterCount();
        m.tensors = static_cast<std::int64_t>(t.model().parameters().size());
      }
      bytes.param = a.liveBytes(MemoryCategory::Parameter);
      bytes.grad = a.liveBytes(MemoryCategory::Gradient);
      bytes.optim = a.liveBytes(MemoryCategory::OptimizerState);
      bytes.work = a.liveBytes(MemoryCategory::Workspace);
    };
    for (const StepReport& r : train(config, 2, run).reports) {
      const auto peak = [&r](MemoryCategory c) { return r.peakBytes[static_cast<std::size_t>(c)]; };
      bytes.gradPeak = std::max(bytes.gradPeak, peak(MemoryCategory::Gradient));
      bytes.paramPeak = std::max(bytes.paramPeak, peak(MemoryCategory::Parameter));
    }
  });
  return m;
}

namespace {

// Empty if every value `got` holds matches `want`'s within atol + rtol |want| + tensorRtol x
// (the largest |want| of its tensor), else the first difference, named with `what`.
std::string compareValues(const Values& want, const Values& got, double rtol, double atol,
                          Held held, const std::string& what, double tensorRtol = 0) {
  if (held == Held::Some && got.empty()) return "the rank holds no parameters";
  for (const auto& [name, g] : got)
    if (!want.count(name)) return "unexpected parameter " + name;
  char buf[320];
  for (const auto& [name, w] : want) {
    const auto it = got.find(name);
    if (it == got.end()) {
      if (held == Held::Some) continue;
      return "missing parameter " + name;
    }
    const std::vector<float>& g = it->second;
    if (g.size() != w.size()) return "size of " + name;
    float largest = 0;
    for (float v : w) largest = std::max(largest, std::fabs(v));
    const double tensorAtol = atol + tensorRtol * largest;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (!(std::fabs(g[i] - w[i]) <= tensorAtol + rtol * std::fabs(w[i]))) {
        std::snprintf(buf, sizeof buf, "%s %s[%zu]: %.9g, one rank %.9g", what.c_str(),
                      name.c_str(), i, g[i], w[i]);
        return buf;
      }
    }
  }
  return {};
}

}  // namespace

std::string compare(const RunRecord& want, const RunRecord& got, double rtol, double atol,
                    Held held) {
  if (want.losses.size() != got.losses.size() || want.gradients.size() != got.gradients.size())
    return "different step counts";
  char buf[256];
  for (std::size_t i = 0; i < want.losses.size(); ++i) {
    if (!(std::fabs(got.losses[i] - want.losses[i]) <= atol + rtol * std::fabs(want.losses[i]))) {
      std::snprintf(buf, sizeof buf, "loss of step %zu: %.9g, one rank %.9g", i + 1, got.losses[i],
                    want.losses[i]);
      return buf;
    }
    const std::string diff = compareValues(want.gradients[i], got.gradients[i], rtol, atol, held,
                                           "step " + std::to_string(i + 1) + " gradient");
    if (!diff.empty()) return diff;
  }
  return compareValues(want.parameters, got.parameters, rtol, atol, held, "parameter");
}

std::string compareLowPrecision(const RunRecord& want, const RunRecord& got, double paramAtol,
                                Held held) {
  if (want.losses.size() != got.losses.size() || want.gradients.size() != got.gradients.size())
    return "different step counts";
  const double lossRtol = std::ldexp(1.0, -8), gradTensorRtol = std::ldexp(1.0, -5);
  char buf[256];
  for (std::size_t i = 0; i < want.losses.size(); ++i) {
    if (!(std::fabs(got.losses[i] - want.losses[i]) <= lossRtol * std::fabs(want.losses[i]))) {
      std::snprintf(buf, sizeof buf, "loss of step %zu: %.9g, fp32 %.9g", i + 1, got.losses[i],
                    want.losses[i]);
      return buf;
    }
    const std::string diff =
        compareValues(want.gradients[i], got.gradients[i], 0, 0, held,
                      "step " + std::to_string(i + 1) + " gradient", gradTensorRtol);
    if (!diff.empty()) return diff;
  }
  return compareValues(want.parameters, got.parameters, std::ldexp(1.0, -7), paramAtol, held,
                       "parameter");
}

}  // namespace dptest
