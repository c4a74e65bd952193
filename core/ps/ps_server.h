// A server rank: its shard of the sparse table (the rows hashed to it) and its slice of the dense
// table, answering workers' pulls and applying their pushes by the config's mode until every
// worker is done (ps_protocol.h says what travels).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/comm/communicator.h"
#include "core/config/ps_config.h"
#include "core/ps/ps_protocol.h"
#include "core/ps/ps_run.h"
#include "core/ps/row_table.h"

namespace parascope::ps {

class TablesCheckpoint;

class Server {
 public:
  // `allocator`: the rank's, holding the tables (and outliving the server).
  Server(const PsConfig& c, Communicator& world, int index, Allocator& allocator);
  // Serves until every worker is done; `progress` (may be empty) after each request.
  void run(const std::function<void(int, std::int64_t)>& progress);
  const ServerLoad& load() const { return load_; }
  // Replaces the tables' rows by a checkpoint's (before run).
  void restore(const TablesCheckpoint& checkpoint);
  // Before run: every `interval` steps (global, this run starting at `firstStep`) short of the
  // last, once the round ending there is applied, writes this server's shard into `dir`'s
  // staging directory for that step (worker 0 made it before its push) and tells worker 0 what
  // it wrote (TableShard's crc32, bytes, sparse and dense rows).
  void saveEvery(const std::string& dir, int interval, int firstStep);
  const RowTable& sparseTable() const { return sparse_; }
  const RowTable& denseTable() const { return dense_; }
  // Per worker: pushes applied and the staleness summed and at most (async).
  std::vector<std::int64_t> stalenessSum, stalenessMax, stalenessCount;

 private:
  struct Request {
    int worker = 0;
    Header header;
    std::vector<std::int64_t> ids;
    std::vector<float> values, dense;
  };
  void serve(const std::function<void(int, std::int64_t)>& progress, std::vector<Header>& headers,
             std::vector<CommHandle>& pending);
  void receive(int worker, const Header& h);
  void answer(const Request& pull);
  bool ready(const Request& pull) const;
  void answerReady();
  void gather(int worker);
  void applyRound();
  void savePeriodically();
  std::vector<std::int64_t> denseIds() const;
  int workerRank(int w) const { return c_.ps.servers + w; }

  const PsConfig& c_;
  Communicator& world_;
  int dim_;
  RowTable sparse_, dense_;
  WordRange slice_;
  std::int64_t round_ = 0;  // sync, geo: push rounds applied
  std::string saveDir_;
  int saveInterval_ = 0, firstStep_ = 0;
  std::int64_t version_ = 0;       // pushes applied
  int trained_ = 0;                // workers whose last push is in
  std::vector<Request> deferred_;  // pulls waiting for their round
  std::vector<Request> pushes_;    // this round's, one per worker (sync, geo)
  std::vector<bool> pushed_;
  int pushedCount_ = 0;
  ServerLoad load_;
};

}  // namespace parascope::ps
