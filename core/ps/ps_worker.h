// A worker rank: trains its model (ps_model.h) on its share of every step's batch. Against servers
// (sync, async, geo) it pulls the rows its batch touches (each once) and pushes their gradients, or
// in geo mode trains local copies and pushes their change every k_steps; collectively it holds both
// tables and all-reduces their dense gradients with the other workers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/comm/communicator.h"
#include "core/config/ps_config.h"
#include "core/ps/ps_model.h"
#include "core/ps/ps_protocol.h"
#include "core/ps/ps_run.h"
#include "core/ps/row_table.h"

namespace parascope::ps {

class Worker {
 public:
  // workers: the group of the worker ranks (the collective run's all-reduce). firstStep: the
  // step a run continued from a checkpoint starts at (0 for a new one).
  // `allocator`: the rank's, holding geo's and the collective run's local tables.
  Worker(const PsConfig& c, PsModel& model, Communicator& world, Communicator& workers, int index,
         int firstStep, Allocator& allocator);

  // Trains train_iters steps; worker 0 calls onStep after each. steps() says how many finished.
  void train(const RunOptions& options, PsResult* result);
  int steps() const { return load_.steps; }
  // Tells every server this worker's last push is sent (after train, failed or not).
  void finishTraining();
  // The trained values of `rows` (ascending, distinct) and the whole dense table: from the
  // servers once every worker's last push is applied, or the collective run's own tables. Rows
  // never trained give their initial values and stay uncreated.
  void fetch(const std::vector<std::int64_t>& rows, std::vector<float>& values,
             std::vector<float>& dense);
  // Worker 0, RunOptions::gatherTables: every server's rows.
  void gatherTables(PsResult& result);
  // Tells every server this worker is done.
  void finish();

  const WorkerLoad& load() const { return load_; }

 private:
  void step(int t, double* loss);
  void collectiveStep();
  std::string commitPeriodicSave(const RunOptions& options, int step);
  void geoStep(int t);
  // flags: kDense (the dense table too, into out_), kFinal, kPeek (ps_protocol.h).
  void pull(const std::vector<std::int64_t>& rows, std::int64_t round, std::int64_t flags,
            float* values);
  void push(Op op, const std::vector<std::int64_t>& rows, const float* values, const float* dense,
            std::int64_t round);
  int serverRank(int s) const { return s; }

  const PsConfig& c_;
  PsModel& model_;
  Allocator& allocator_;
  Communicator& world_;
  Communicator& workers_;
  int index_;
  int firstStep_;
  PsTables tables_;
  int dim_;
  const std::vector<std::int64_t>* rows_ = nullptr;  // the step's, from model_.prepare
  std::vector<float> in_, dIn_, out_, dOut_;
  std::vector<std::int64_t> versions_;  // per server: the version of the last pull's reply
  std::int64_t finalRound_ = 0;         // the round after every push (sync, geo)
  // Geo: local copies, their values when pulled this round, the rows pulled this round.
  std::unique_ptr<RowTable> local_, localDense_, base_;
  std::vector<float> baseDense_;
  std::vector<std::int64_t> fetched_;
  std::vector<std::int64_t> allDense_;  // the dense table's row ids
  // Collective: both tables whole, and the sparse table's dense gradient and touch counts.
  std::vector<float> sparseGrad_, touched_;
  WorkerLoad load_;
};

}  // namespace parascope::ps
