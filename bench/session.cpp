// runBenchSession: an observer that files every rank's step figures and switches the tracer
// on between the last measured step and the first traced one.
#include "bench/session.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "core/common/error.h"
#include "core/common/statistics.h"
#include "core/session/session.h"

namespace parascope::bench {

namespace {

class Collector final : public SessionObserver {
 public:
  Collector(BenchRun& run, int warmup, int steps, profiler::Tracer* tracer)
      : run_(run), warmup_(warmup), steps_(steps), tracer_(tracer) {}

  // Each rank writes only its own RankFigures, so the rank threads never share a slot.
  void onRankStep(const StepReport& r) override {
    RankFigures& f = run_.ranks[static_cast<std::size_t>(r.rank)];
    f.pipelineRank = r.pipelineRank;
    if (r.step > warmup_ && r.step <= warmup_ + steps_) {
      f.times.push_back(r.seconds);
      f.exposed += r.exposedCommSeconds;
      f.busy += r.pipelineBusySeconds;
      f.idle += r.pipelineIdleSeconds;
      f.skipped += r.skipped ? 1 : 0;
      for (std::size_t c = 0; c < f.peak.size(); ++c)
        f.peak[c] = std::max(f.peak[c], r.peakBytes[c]);
      if (r.rank == 0) run_.tokensPerStep = r.tokens;
    }
    // Rank 0 decides the next step boundary only after this returns, so every rank's next
    // step is recorded.
    if (tracer_ && r.rank == 0 && r.step == warmup_ + steps_) tracer_->install();
  }

 private:
  BenchRun& run_;
  int warmup_, steps_;
  profiler::Tracer* tracer_;
};

}  // namespace

BenchRun runBenchSession(const TrainConfig& config, int warmup, int steps, int traced,
                         profiler::Tracer* tracer, std::shared_ptr<RunRecorder> recorder) {
  TrainConfig c = config;
  c.trainIters = warmup + steps + traced;
  BenchRun run;
  run.ranks.resize(static_cast<std::size_t>(c.parallel.worldSize()));
  Collector collector(run, warmup, steps, tracer);
  SessionOptions options;
  options.evaluate = false;  // steps only
  options.recorder = std::move(recorder);
  Session session(c, std::move(options));
  session.addObserver(collector);
  session.run();
  if (tracer) tracer->uninstall();
  if (const auto failure = session.error()) {
    if (failure->userError) throw UserError(failure->reason);
    throw std::runtime_error(failure->reason);
  }
  run.medianSeconds = median(run.ranks[0].times);
  return run;
}

}  // namespace parascope::bench
