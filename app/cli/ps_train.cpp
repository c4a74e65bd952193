// parascope-cli train for a config with parameter servers (model.type "word2vec", or a GPT with a
// parameter_server block): the parameter-server run (core/ps/ps_run.h) and
// its printing: plain lines, or JSON lines with --json. Under mpirun the first server_num ranks
// serve and worker 0 (rank server_num) prints.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/common/printable.h"
#include "core/config/ps_config.h"
#include "core/plan/memory_estimate.h"
#include "core/ps/ps_model.h"
#include "core/ps/ps_run.h"
#include "profiler/run_trace.h"

namespace parascope::cli {

namespace {

// What a step trains on: centre words (word2vec) or tokens (gpt); the JSON fields' stem.
const char* unit(const PsConfig& c) {
  return c.isGpt() ? "tokens" : "words";
}

void printStart(const PsConfig& c, bool json) {
  const ParameterServerSpec& p = c.ps;
  const PsTables t = c.tables();
  if (json) {
    std::printf("%s\n", nlohmann::json{{"event", "start"},
                                       {"model", c.modelName()},
                                       {"mode", psModeName(p.mode)},
                                       {"servers", p.servers},
                                       {"workers", p.workers},
                                       {"k_steps", p.kSteps},
                                       {"sparse_rows", t.sparseRows},
                                       {"dense_rows", t.denseRows},
                                       {"embedding_dim", t.dim},
                                       {"sparse_optimizer", rowRuleName(p.sparse.rule)},
                                       {"dense_optimizer", rowRuleName(p.dense.rule)},
                                       {"micro_batch", c.microBatch},
                                       {std::string(unit(c)) + "_per_worker_step",
                                        c.targetsPerWorkerStep()},
                                       {"train_iters", c.trainIters}}
                            .dump()
                            .c_str());
  } else if (c.isGpt()) {
    std::printf(
        "gpt: token embedding %lld x %d as the sparse table, %s; the other %lld parameters as "
        "the dense table (%d rows of %d), %s\n",
        static_cast<long long>(t.sparseRows), t.dim, rowRuleName(p.sparse.rule),
        static_cast<long long>(t.denseValues), t.denseRows, t.dim, rowRuleName(p.dense.rule));
  } else {
    std::printf(
        "word2vec: %lld input rows (%d words + %lld hashed pairs) x %d, %s; output %d x %d, %s\n",
        static_cast<long long>(c.model.rows()), c.model.vocabSize,
        static_cast<long long>(c.model.pairRows), c.model.dim, rowRuleName(p.sparse.rule),
        c.model.vocabSize, c.model.dim, rowRuleName(p.dense.rule));
  }
  if (!json) {
    const std::string batch =
        c.isGpt() ? std::to_string(c.microBatch) + " sequences of " +
                        std::to_string(c.gpt.contextLength) + " tokens per worker step"
                  : std::to_string(c.microBatch) + " centre words per worker step";
    if (p.mode == PsMode::Collective) {
      std::printf("collective: %d workers all-reduce dense gradients; %s\n", p.workers,
                  batch.c_str());
    } else {
      std::printf(
          "parameter servers: %s%s, %d server%s, %d worker%s; %s\n", psModeName(p.mode),
          p.mode == PsMode::Geo ? (" (k_steps " + std::to_string(p.kSteps) + ")").c_str() : "",
          p.servers, p.servers == 1 ? "" : "s", p.workers, p.workers == 1 ? "" : "s",
          batch.c_str());
    }
  }
  std::fflush(stdout);
}

void printStep(const ps::PsStepReport& s, const PsConfig& c, bool json) {
  const double targets = static_cast<double>(c.targetsPerWorkerStep()) * c.ps.workers;
  if (json) {
    std::printf("%s\n", nlohmann::json{{"event", "step"},
                                       {"step", s.step},
                                       {"total_steps", s.totalSteps},
                                       {"loss_nats", s.loss},
                                       {"step_time_s", s.seconds},
                                       {std::string(unit(c)) + "_per_s", targets / s.seconds}}
                            .dump()
                            .c_str());
  } else if (s.step == 1 || s.step % c.logInterval == 0 || s.step == s.totalSteps) {
    std::printf("step %5d/%d  loss %.4f  %s/s %.0f\n", s.step, s.totalSteps, s.loss, unit(c),
                targets / s.seconds);
  }
  std::fflush(stdout);
}

void printResult(const ps::PsResult& r, const PsConfig& c, bool json,
                 const std::string& tracePath) {
  const double rate = static_cast<double>(r.targets) / r.seconds;
  if (json) {
    std::printf("%s\n", nlohmann::json{{"event", "eval"},
                                       {"validation_loss_nats", r.validationLoss},
                                       {"eval_iters", c.evalIters}}
                            .dump()
                            .c_str());
    for (const ps::Neighbours& n : r.neighbours) {
      nlohmann::json nearest = nlohmann::json::array();
      for (const auto& [w, cosine] : n.nearest)
        nearest.push_back({{"word", w}, {"cosine", cosine}});
      std::printf("%s\n",
                  nlohmann::json{{"event", "neighbours"}, {"word", n.word}, {"nearest", nearest}}
                      .dump()
                      .c_str());
    }
    for (std::size_t i = 0; i < r.servers.size(); ++i) {
      const ps::ServerLoad& s = r.servers[i];
      std::printf("%s\n", nlohmann::json{{"event", "server"},
                                         {"server", i},
                                         {"rank", s.rank},
                                         {"rows_held", s.rowsHeld},
                                         {"table_bytes", s.tableBytes},
                                         {"pulls", s.pulls},
                                         {"pushes", s.pushes},
                                         {"rows_pulled", s.rowsPulled},
                                         {"rows_pushed", s.rowsPushed},
                                         {"bytes_in", s.bytesIn},
                                         {"bytes_out", s.bytesOut},
                                         {"busy_s", s.busySeconds},
                                         {"wait_s", s.waitSeconds}}
                              .dump()
                              .c_str());
    }
    for (std::size_t i = 0; i < r.workers.size(); ++i) {
      const ps::WorkerLoad& w = r.workers[i];
      std::printf("%s\n", nlohmann::json{{"event", "worker"},
                                         {"worker", i},
                                         {"rank", w.rank},
                                         {"rows_pulled", w.rowsPulled},
                                         {"pulls", w.pulls},
                                         {"pull_s", w.pullSeconds},
                                         {"compute_s", w.computeSeconds},
                                         {"push_s", w.pushSeconds},
                                         {"staleness_mean_pushes", w.stalenessMean},
                                         {"staleness_max_pushes", w.stalenessMax},
                                         {"steps", w.steps}}
                              .dump()
                              .c_str());
    }
    for (const ps::WorkerFailure& w : r.failures) {
      std::printf("%s\n", nlohmann::json{{"event", "worker_failed"},
                                         {"rank", w.rank},
                                         {"step", w.step + 1},
                                         {"reason", w.reason}}
                              .dump()
                              .c_str());
    }
    nlohmann::json f{{"event", "finished"},
                     {unit(c), r.targets},
                     {"seconds", r.seconds},
                     {std::string(unit(c)) + "_per_s", rate},
                     {"final_loss_nats", r.finalLoss},
                     {"validation_loss_nats", r.validationLoss}};
    if (!c.isGpt()) {
      f["vocabulary"] = r.vocabulary;
      f["corpus_words"] = r.corpusWords;
    }
    if (!tracePath.empty()) f["trace"] = tracePath;
    if (!r.checkpoint.empty()) f["checkpoint"] = r.checkpoint;
    std::printf("%s\n", f.dump().c_str());
    std::fflush(stdout);
    return;
  }
  if (c.isGpt()) {
    std::printf("validation loss %.4f nats (%d batches of %d sequences)\n", r.validationLoss,
                c.evalIters, c.microBatch);
  } else {
    std::printf("validation loss %.4f nats (%d batches of %d centre words)\n", r.validationLoss,
                c.evalIters, c.microBatch * c.ps.workers);
  }
  for (const ps::Neighbours& n : r.neighbours) {
    std::string line;
    for (const auto& [w, cosine] : n.nearest) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s (%.2f)", w.c_str(), cosine);
      line += buf;
    }
    std::printf("  nearest to %-8s%s\n", n.word.c_str(), line.c_str());
  }
  for (std::size_t i = 0; i < r.servers.size(); ++i) {
    const ps::ServerLoad& s = r.servers[i];
    std::printf(
        "server %zu (rank %d): %lld rows held (%s); %lld pulls of %lld rows, %s out; %lld "
        "pushes of %lld rows, %s in; busy %.2f s, waiting %.2f s\n",
        i, s.rank, static_cast<long long>(s.rowsHeld), formatBytes(s.tableBytes).c_str(),
        static_cast<long long>(s.pulls), static_cast<long long>(s.rowsPulled),
        formatBytes(s.bytesOut).c_str(), static_cast<long long>(s.pushes),
        static_cast<long long>(s.rowsPushed), formatBytes(s.bytesIn).c_str(), s.busySeconds,
        s.waitSeconds);
  }
  for (std::size_t i = 0; i < r.workers.size(); ++i) {
    const ps::WorkerLoad& w = r.workers[i];
    std::printf(
        "worker %zu (rank %d): %lld rows pulled in %lld pulls; pull %.2f s, compute %.2f "
        "s, %s %.2f s",
        i, w.rank, static_cast<long long>(w.rowsPulled), static_cast<long long>(w.pulls),
        w.pullSeconds, w.computeSeconds, c.ps.mode == PsMode::Collective ? "all-reduce" : "push",
        w.pushSeconds);
    if (c.ps.mode == PsMode::Async) {
      std::printf("; staleness %.2f pushes on average, at most %lld", w.stalenessMean,
                  static_cast<long long>(w.stalenessMax));
    }
    std::printf("\n");
  }
  for (const ps::WorkerFailure& w : r.failures) {
    std::printf("worker rank %d failed in step %d: %s; the run went on without it\n", w.rank,
                w.step + 1, w.reason.c_str());
  }
  std::printf("trained %lld %s in %.2f s: %.0f %s/s\n", static_cast<long long>(r.targets), unit(c),
              r.seconds, rate, unit(c));
  if (!r.checkpoint.empty()) std::printf("checkpoint: %s\n", r.checkpoint.c_str());
  if (!tracePath.empty()) std::printf("trace: %s\n", tracePath.c_str());
  std::fflush(stdout);
}

}  // namespace

void runPsTrain(const nlohmann::json& doc, bool json, const std::string& trace,
                const PsCheckpoints& checkpoints, Communicator* world) {
  const PsConfig c = parsePsConfig(doc, world != nullptr ? world->size() : 0);
  ps::checkTableMemory(c, availableMemoryBytes(),
                       world != nullptr ? mpiRanksOnThisNode() : c.ps.ranks());
  std::unique_ptr<profiler::RunTrace> recorder;
  if (!trace.empty()) {
    recorder = std::make_unique<profiler::RunTrace>(trace);
    recorder->describe(doc);
    recorder->begin(world, c.ps.ranks());
  }
  const bool reports = world == nullptr || world->rank() == c.ps.servers;
  ps::RunOptions options;
  options.load = checkpoints.load;
  options.save = checkpoints.save;
  options.keep = checkpoints.keep;
  options.saveInterval = checkpoints.saveInterval;
  // Every rank checks, so that under mpirun each refuses alike before the world does any work.
  ps::checkCheckpointOptions(c, options);
  ps::checkPsData(c);
  options.onStep = [&](const ps::PsStepReport& s) { printStep(s, c, json); };
  if (reports) printStart(c, json);
  ps::PsResult result;
  bool mine = true;
  if (world != nullptr) {
    mine = ps::runPsRank(c, *world, options, &result);
  } else {
    result = ps::runPsThreads(c, options);
  }
  const std::string tracePath =
      recorder ? recorder->end(world != nullptr ? world->rank() : -1) : std::string();
  if (mine) printResult(result, c, json, tracePath);
}

}  // namespace parascope::cli
