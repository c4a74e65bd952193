// parascope-cli bench ps: parameter servers measured two ways.
// - Transfer: servers (core/ps's Server, async) answering workers' pulls of `rows` distinct rows
//   of 64 floats, then taking their pushes (SGD applied), 2 workers and 1 or 2 servers, on
//   in-process threads and on Open MPI processes (re-launching itself under mpirun): rows/s and
//   bytes/s per server, beside what one point-to-point message of the same size reaches between
//   two of the same ranks and this machine's memory bandwidth (memcpy of a buffer the size of the
//   table), in the same run.
// - Training: the config's model (word2vec, or a GPT whose embedding is the sparse table) and
//   data for the same steps in sync, async and geo mode with 1 and 2 servers and in the
//   collective mode: words (tokens) per second and the loss reached.
// Prints figures, never passes.
#include "bench/ps.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/mpirun_rows.h"
#include "core/comm/launch.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/common/random.h"
#include "core/config/config.h"
#include "core/config/ps_config.h"
#include "core/ps/ps_protocol.h"
#include "core/ps/ps_run.h"
#include "core/ps/ps_server.h"

namespace parascope::bench {

namespace {

using Clock = std::chrono::steady_clock;
using Row = nlohmann::json;

constexpr int kDim = 64;
constexpr int kWorkers = 2;
constexpr std::int64_t kTableRows = std::int64_t{1} << 20;

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The transfer part's servers: async (a request is answered or applied as it comes), SGD rows,
// a table of 2^20 rows of which the workers touch what they ask for.
PsConfig transferConfig(int servers) {
  PsConfig c;
  c.model.dim = kDim;
  c.model.vocabSize = 2;
  c.model.pairRows = kTableRows;
  c.ps.mode = PsMode::Async;
  c.ps.servers = servers;
  c.ps.workers = kWorkers;
  c.ps.sparse.rule = RowRule::Sgd;
  c.ps.sparse.learningRate = 1e-3;
  c.ps.dense.rule = RowRule::Sgd;
  return c;
}

void barrier(Communicator& world) {
  std::int32_t one = 1, sum = 0;
  world.allReduce(&one, &sum, 1, DType::I32, ReduceOp::Sum);
}

// A worker's requests: `requests` sets of `rows` distinct rows, each all on one server (so a
// request is one message each way and the server's share is exact).
std::vector<std::vector<std::int64_t>> requestRows(const BenchPsOptions& o, int servers,
                                                   int worker) {
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(o.requests));
  Rng rng(mixSeed(17, static_cast<std::uint64_t>(worker)));
  for (int r = 0; r < o.requests; ++r) {
    const int server = r % servers;
    auto& ids = out[static_cast<std::size_t>(r)];
    while (static_cast<int>(ids.size()) < o.rows) {
      const auto row = 2 + static_cast<std::int64_t>(rng.below(kTableRows));
      if (ps::serverOf(row, servers) == server) ids.push_back(row);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  return out;
}

// One rank of the transfer part; worker 0 returns the rows of figures.
std::vector<Row> transferRank(Communicator& world, const BenchPsOptions& o, int servers,
                              const std::string& backend) {
  const PsConfig c = transferConfig(servers);
  const int rank = world.rank();
  // Point to point first, while nothing else runs: rank 0 (a server) sends rank `servers` (the
  // first worker) one pull reply's bytes, as many times as a worker pulls.
  const std::size_t floats = static_cast<std::size_t>(o.rows) * kDim;
  double p2p = 0;
  {
    std::vector<float> buffer(floats, 1.0f);
    barrier(world);
    const auto start = Clock::now();
    for (int i = 0; i < o.requests; ++i) {
      if (rank == 0) world.send(buffer.data(), floats, DType::F32, servers);
      if (rank == servers) world.recv(buffer.data(), floats, DType::F32, 0);
    }
    if (rank == servers)
      p2p = static_cast<double>(floats * sizeof(float)) * o.requests / seconds(start);
    barrier(world);
  }
  if (rank < servers) {
    Allocator allocator;
    ps::Server server(c, world, rank, allocator);
    server.run({});
    return {};
  }
  const int worker = rank - servers;
  const auto sets = requestRows(o, servers, worker);
  std::vector<float> values(floats), grads(floats, 1e-3f);
  auto request = [&](ps::Op op, const std::vector<std::int64_t>& ids, int server) {
    const ps::Header h = ps::Header::make(op, 0, static_cast<std::int64_t>(ids.size()), 0, 0);
    world.send(h.words.data(), h.words.size(), DType::I64, server);
    world.send(ids.data(), ids.size(), DType::I64, server);
    if (op == ps::Op::Push) {
      world.send(grads.data(), ids.size() * kDim, DType::F32, server);
      return;
    }
    ps::Header reply;
    world.recv(reply.words.data(), reply.words.size(), DType::I64, server);
    world.recv(values.data(), ids.size() * kDim, DType::F32, server);
  };
  std::int64_t rowsMoved = 0;
  for (std::size_t r = 0; r < sets.size(); ++r)
    request(ps::Op::Pull, sets[r], static_cast<int>(r) % servers);  // rows exist
  std::vector<Row> rows;
  for (const ps::Op op : {ps::Op::Pull, ps::Op::Push}) {
    const auto start = Clock::now();
    rowsMoved = 0;
    for (std::size_t r = 0; r < sets.size(); ++r) {
      request(op, sets[r], static_cast<int>(r) % servers);
      rowsMoved += static_cast<std::int64_t>(sets[r].size());
    }
    const double elapsed = seconds(start);
    // Both workers ran the same number of rows at about the same time: the servers' share is
    // the workers' total over the servers.
    const double perServer = static_cast<double>(rowsMoved) * kWorkers / servers / elapsed;
    rows.push_back({{"bench", "ps"},
                    {"part", "transfer"},
                    {"backend", backend},
                    {"servers", servers},
                    {"workers", kWorkers},
                    {"op", op == ps::Op::Pull ? "pull" : "push"},
                    {"rows_per_request", o.rows},
                    {"rows_per_s_per_server", perServer},
                    {"GBps_per_server", perServer * kDim * sizeof(float) / 1e9},
                    {"p2p_GBps", p2p / 1e9}});
  }
  for (int s = 0; s < servers; ++s) {
    const ps::Header done = ps::Header::make(ps::Op::Done, 0, 0, 0, 0);
    world.send(done.words.data(), done.words.size(), DType::I64, s);
  }
  return worker == 0 ? rows : std::vector<Row>{};
}

// This machine's memory bandwidth: memcpy between two buffers of the servers' table's size, far
// past the caches (a server's rows are gathered from such a table).
double memcpyGBps(std::size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::memcpy(b.data(), a.data(), bytes);
  int reps = 0;
  const auto start = Clock::now();
  while (seconds(start) < 0.3) {
    std::memcpy(b.data(), a.data(), bytes);
    a[static_cast<std::size_t>(reps) % bytes] = static_cast<char>(b[0] + 1);
    ++reps;
  }
  return static_cast<double>(bytes) * reps / seconds(start) / 1e9;
}

std::vector<Row> transferUnderMpirun(const BenchPsOptions& o, int servers) {
  return benchRowsUnderMpirun(servers + kWorkers,
                              {"bench", "ps", "--part", "transfer", "--backend", "mpi", "--servers",
                               std::to_string(servers), "--rows", std::to_string(o.rows),
                               "--requests", std::to_string(o.requests), "--json"},
                              "ps");
}

std::vector<Row> trainRuns(const BenchPsOptions& o) {
  nlohmann::json doc = readJsonFile(o.config);
  doc["train_iters"] = o.steps;
  doc["parameter_server"]["worker_num"] = kWorkers;
  struct Mode {
    const char* mode;
    int servers;
    int kSteps;
  };
  const Mode modes[] = {{"collective", 0, 0}, {"sync", 1, 0},  {"async", 1, 0}, {"geo", 1, 4},
                        {"sync", 2, 0},       {"async", 2, 0}, {"geo", 2, 4}};
  std::vector<Row> rows;
  std::string unit;  // "words" for word2vec, "tokens" for a GPT
  for (const Mode& m : modes) {
    nlohmann::json d = doc;
    d["parameter_server"]["mode"] = m.mode;
    d["parameter_server"]["server_num"] = m.servers;
    if (m.kSteps > 0) d["parameter_server"]["k_steps"] = m.kSteps;
    const PsConfig c = parsePsConfig(d);
    unit = c.isGpt() ? "tokens" : "words";
    ps::RunOptions options;
    options.probeWords.clear();
    const ps::PsResult r = ps::runPsThreads(c, options);
    rows.push_back({{"bench", "ps"},
                    {"part", "train"},
                    {"model", c.modelName()},
                    {"mode", m.mode},
                    {"servers", m.servers},
                    {"workers", kWorkers},
                    {"k_steps", m.kSteps},
                    {unit, r.targets},
                    {"seconds", r.seconds},
                    {unit + "_per_s", static_cast<double>(r.targets) / r.seconds},
                    {"final_loss_nats", r.finalLoss},
                    {"validation_loss_nats", r.validationLoss}});
  }
  const std::string rate = unit + "_per_s";
  for (Row& r : rows) {
    r[rate + "_over_collective"] = r[rate].get<double>() / rows.front()[rate].get<double>();
    r["validation_loss_minus_collective"] = r["validation_loss_nats"].get<double>() -
                                            rows.front()["validation_loss_nats"].get<double>();
  }
  return rows;
}

void printText(const std::vector<Row>& transfer, const std::vector<Row>& train, double memcpy) {
  if (!transfer.empty()) {
    std::printf(
        "Transfer: %d workers pulling, then pushing, %d rows of %d floats a request; per "
        "server\n",
        kWorkers, transfer.front()["rows_per_request"].get<int>(), kDim);
    std::printf("%-8s %7s %5s %14s %10s %10s %10s %9s %9s\n", "backend", "servers", "op", "rows/s",
                "GB/s", "p2p GB/s", "memcpy", "/p2p", "/memcpy");
    for (const Row& r : transfer) {
      const double gbps = r["GBps_per_server"];
      std::printf("%-8s %7d %5s %14.0f %10.3f %10.3f %10.3f %9.2f %9.2f\n",
                  r["backend"].get<std::string>().c_str(), r["servers"].get<int>(),
                  r["op"].get<std::string>().c_str(), r["rows_per_s_per_server"].get<double>(),
                  gbps, r["p2p_GBps"].get<double>(), memcpy, gbps / r["p2p_GBps"].get<double>(),
                  gbps / memcpy);
    }
  }
  if (!train.empty()) {
    const std::string model = train.front()["model"];
    const std::string unit = model == "gpt" ? "tokens" : "words";
    std::printf("\n%s, %lld %s in each run, %d workers (threads)\n", model.c_str(),
                static_cast<long long>(train.front()[unit].get<std::int64_t>()), unit.c_str(),
                kWorkers);
    std::printf("%-11s %7s %7s %12s %10s %12s %12s %10s\n", "mode", "servers", "k_steps",
                (unit + "/s").c_str(), "x coll.", "train loss", "valid. loss", "- coll.");
    for (const Row& r : train) {
      std::printf("%-11s %7d %7d %12.0f %10.2f %12.4f %12.4f %+10.4f\n",
                  r["mode"].get<std::string>().c_str(), r["servers"].get<int>(),
                  r["k_steps"].get<int>(), r[unit + "_per_s"].get<double>(),
                  r[unit + "_per_s_over_collective"].get<double>(),
                  r["final_loss_nats"].get<double>(), r["validation_loss_nats"].get<double>(),
                  r["validation_loss_minus_collective"].get<double>());
    }
  }
}

}  // namespace

void runBenchPs(const BenchPsOptions& o) {
  if (launchedByMpirun()) {
    if (o.part != "transfer" || o.servers < 1)
      throw UserError("bench ps: under mpirun only --part transfer --servers N runs");
    Communicator world = mpiWorld();
    const std::vector<Row> rows = transferRank(world, o, o.servers, "mpi");
    for (const Row& r : rows) std::printf("%s\n", r.dump().c_str());
    return;
  }
  std::vector<Row> transfer, train;
  double memcpy = 0;
  if (o.part != "train") {
    memcpy = memcpyGBps(static_cast<std::size_t>(kTableRows) * kDim * sizeof(float));
    for (int servers : {1, 2}) {
      if (o.backend != "mpi") {
        runInProcess(servers + kWorkers, [&](Communicator& world) {
          std::vector<Row> mine = transferRank(world, o, servers, "threads");
          for (Row& r : mine) transfer.push_back(std::move(r));
        });
      }
      if (o.backend != "threads")
        for (Row& r : transferUnderMpirun(o, servers)) transfer.push_back(std::move(r));
    }
    for (Row& r : transfer) {
      r["memcpy_GBps"] = memcpy;
      r["over_p2p"] = r["GBps_per_server"].get<double>() / r["p2p_GBps"].get<double>();
      r["over_memcpy"] = r["GBps_per_server"].get<double>() / memcpy;
    }
  }
  if (o.part != "transfer") train = trainRuns(o);
  if (!o.json) return printText(transfer, train, memcpy);
  for (const Row& r : transfer) std::printf("%s\n", r.dump().c_str());
  for (const Row& r : train) std::printf("%s\n", r.dump().c_str());
}

}  // namespace parascope::bench
