// Shared by the data-parallel, tensor- and pipeline-parallel tests on both backends: a tiny GPT
// config over a generated text file, a recorded run (per step the loss and every reduced
// gradient, then the final parameters) of one rank or of one rank of a parallel world, and the
// equivalence check at rtol 1e-5 / atol 4e-5 (looser for mixed precision).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/session/rank_hooks.h"
#include "core/session/session.h"

namespace dptest {

using Values = std::map<std::string, std::vector<float>>;  // logical f32 values by parameter

struct RunRecord {
  std::vector<double> losses;
  std::vector<parascope::StepReport> reports;  // this rank's (Session's onRankStep)
  std::vector<parascope::EvalReport> evals;    // with RunOptions::evaluate
  // Per step, the logical gradients of the parameters this rank holds once they are reduced,
  // before clipping and the optimizer (f32, unscaled; under mixed precision the 16-bit values
  // widened).
  std::vector<Values> gradients;
  // Logical values after the last step, of the parameters this rank's pipeline stage holds (all
  // of them without pipeline parallelism; f32, under mixed precision the 16-bit values widened).
  Values parameters;
};

// The logical gradients `t` holds right now (Trainer::setGradientObserver): this rank's reduced
// gradients (a ZeRO-2/3 shard all-gathered over the data-parallel group), tensor-parallel parts
// assembled over the tensor group, divided by the loss scale. Collective.
Values reducedGradients(parascope::Trainer& t);

// Writes (once per process and tag) `bytes` of text drawn from `words` with a seeded generator
// into the temporary directory and returns its path.
std::string writeTextFixture(const std::string& tag, std::uint64_t seed, std::size_t bytes,
                             const std::vector<const char*>& words);
// The data-parallel tests' 96 KiB fixture.
std::string textFixture();

// The tiny GPT (2 layers, width 32, context 16) with global batch 16, lr 1e-2, clipping 1.0,
// plus "key=value" overrides. AdamW's eps is 1e-2, not 1e-8: an element's update
// lr m / (sqrt(v) + eps) then changes by at most about 2 lr / eps = 2 times any change of its
// gradient, so rounding noise in a gradient (a different summation order across ranks or BLAS
// kernels, ~1e-7 relative) stays noise in the parameters. With eps 1e-8 an element whose
// gradient is noise around zero takes an update of +-lr of random sign, and every later loss,
// gradient and parameter can differ far beyond rounding.
parascope::TrainConfig tinyConfig(const std::vector<std::string>& overrides, int worldSize = 0);

// How train() runs its rank.
struct RunOptions {
  parascope::Communicator world{};            // the rank's world; default: the single rank
  parascope::Allocator* allocator = nullptr;  // the rank's tracked memory; null: the session's
  bool evaluate = false;  // the evaluations the config asks for (eval_interval, the last step)
  // On the rank's trainer (SessionOptions::RankHooks): `built` before the first step (e.g. to
  // inject a fault), `stepped` after each step's update, `finished` after the last step, before
  // the record's parameters are gathered.
  std::function<void(parascope::Trainer&)> built{}, stepped{}, finished{};
};

// `steps` optimizer steps of one rank, run by a session of that rank (train_iters only sets the
// learning-rate schedule). Throws the rank's failure: UserError for a user's error, else
// runtime_error.
RunRecord train(const parascope::TrainConfig& config, int steps, const RunOptions& options);
inline RunRecord train(const parascope::TrainConfig& config, int steps,
                       const parascope::Communicator& world = parascope::Communicator(),
                       parascope::Allocator* allocator = nullptr) {
  return train(config, steps, RunOptions{.world = world, .allocator = allocator});
}

// Every rank's evaluation after one step of `config` (which evaluates then: eval_interval 1) on
// its world of in-process ranks, in rank order; runtime_error unless each evaluated once.
std::vector<parascope::EvalReport> evaluateAfterOneStep(const parascope::TrainConfig& config);

// Model-state bytes of one rank, live after its second step and peaks over the run, from the
// trainer's construction on.
struct StateBytes {
  std::int64_t param = 0, grad = 0, optim = 0, work = 0, gradPeak = 0, paramPeak = 0;
};
struct ModelState {
  std::int64_t parameters = 0;  // P, of the logical model
  std::int64_t tensors = 0;     // parameter tensors (each may pad its buckets)
  std::vector<StateBytes> ranks;
};
// Two steps of `config` on its world of in-process ranks, each with its own Allocator.
ModelState measureModelState(const parascope::TrainConfig& config);

// Which parameters compare() checks: all of `want`'s (a rank that holds the whole model), or
// those `got` holds (a pipeline stage; it must hold some).
enum class Held { All, Some };

// Empty if `got` matches `want` within rtol / atol everywhere (fp32 default: 1e-5 / 4e-5): every
// step's loss and gradients, then the final parameters; else the first difference.
std::string compare(const RunRecord& want, const RunRecord& got, double rtol = 1e-5,
                    double atol = 4e-5, Held held = Held::All);

// A run that rounds to bf16 / fp16 (mixed precision, or gradients communicated in 16 bits)
// against one fp32 rank: each step's loss within rtol 2^-8; each gradient element within 2^-5 of
// the largest |value| of its tensor (an element summed from rounded terms that cancel has no
// relative accuracy, its tensor's scale does, and fp32 rounding differences are 1e5 times
// smaller); the final parameters within rtol 2^-7 (their last rounding) plus paramAtol (the
// steps' update differences: at most 2 lr / eps times the gradient differences each).
std::string compareLowPrecision(const RunRecord& want, const RunRecord& got, double paramAtol,
                                Held held = Held::All);

}  // namespace dptest
