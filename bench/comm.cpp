// parascope-cli bench comm: time, algorithm bandwidth and bus bandwidth (nccl-tests
// conventions) of every collective from 1 KiB to 64 MiB on the in-process backend, with the
// memcpy bandwidth of the same sizes (one thread, and every rank at once); then the same on
// Open MPI (re-launching itself under mpirun) with Open MPI's own MPI_Allreduce on the same
// buffers, and the ratios between them.
// Under mpirun, or with --backend mpi, only the MPI part runs. Prints figures, never passes.
#include "bench/comm.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/mpirun_rows.h"
#include "core/comm/collective_traits.h"
#include "core/comm/launch.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/common/stop_signal.h"

namespace parascope::bench {

namespace {

using Clock = std::chrono::steady_clock;
using Row = nlohmann::json;

// Any collective; send and recv need a partner posting the other side, which the loop is not.
CommOp parseOp(const std::string& name) {
  const std::optional<CommOp> op = commOpNamed(name);
  if (op && !isPointToPoint(*op)) return *op;
  std::string allowed;
  for (const CollectiveTraits& t : kCollectiveTraits)
    if (!isPointToPoint(t.op)) allowed.append(allowed.empty() ? "" : ", ").append(t.name);
  throw UserError("bench comm: unknown operation '" + name + "' (allowed: " + allowed + ")");
}

std::vector<std::size_t> sizesOf(const BenchCommOptions& o) {
  std::vector<std::size_t> out;
  for (std::size_t s = o.minBytes; s <= o.maxBytes; s *= 4) out.push_back(s);
  return out;
}

// Elements per rank for a message of `bytes` (nccl-tests: gather-like sizes are totals).
std::size_t countFor(CommOp op, std::size_t bytes, int n) {
  const std::size_t elements = bytes / sizeof(float);
  const bool total = commTraits(op).message == Span::Group;
  return total ? elements / static_cast<std::size_t>(n) : elements;
}

// Rank 0 picks an iteration count from one timed trial so every point takes about the same
// time; everyone runs it in 5 batches between barriers. Returns rank 0's best batch average in
// seconds per operation: on a shared machine the best batch is the one not preempted.
double timeLoop(Communicator& c, double budget, const std::function<void()>& once) {
  constexpr int kBatches = 5;
  std::int32_t sync = 0;
  once();
  c.allReduce(&sync, &sync, 1, DType::I32, ReduceOp::Sum);
  const auto t0 = Clock::now();
  once();
  const double trial = std::chrono::duration<double>(Clock::now() - t0).count();
  std::int32_t iters =
      static_cast<std::int32_t>(std::clamp(budget / kBatches / std::max(trial, 1e-7), 1.0, 2000.0));
  c.broadcast(&iters, 1, DType::I32, 0);
  double best = 1e30;
  for (int b = 0; b < kBatches; ++b) {
    c.allReduce(&sync, &sync, 1, DType::I32, ReduceOp::Sum);
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      throwIfStopRequested();  // a point may take many seconds (--seconds-per-point)
      once();
    }
    c.allReduce(&sync, &sync, 1, DType::I32, ReduceOp::Sum);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count() / iters);
  }
  return best;
}

Row rowFor(const std::string& backend, CommOp op, int n, std::size_t bytes, double seconds) {
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  return {{"bench", "comm"},
          {"backend", backend},
          {"op", commOpName(op)},
          {"ranks", n},
          {"dtype", "f32"},
          {"bytes", bytes},
          {"time_us", seconds * 1e6},
          {"algbw_GBps", algbw},
          {"busbw_GBps", algbw * busBandwidthFactor(op, n)}};
}

// Every rank runs this; rank 0 appends the rows.
void measureRanks(Communicator& c, const BenchCommOptions& o, const std::string& backend,
                  std::vector<Row>* rows) {
  const int n = c.size();
  std::vector<float> send(o.maxBytes / sizeof(float), 1.0f), recv(send.size(), 0.0f);
  for (const std::string& name : o.ops) {
    const CommOp op = parseOp(name);
    for (std::size_t bytes : sizesOf(o)) {
      const std::size_t count = countFor(op, bytes, n);
      CommArgs a{op, send.data(), recv.data(), count, DType::F32, ReduceOp::Sum, 0};
      if (commTraits(op).inPlace == InPlace::OneBuffer) a.send = a.recv;
      const double s = timeLoop(c, o.secondsPerPoint, [&] { c.run(a); });
      if (c.rank() == 0) rows->push_back(rowFor(backend, op, n, bytes, s));
      if (backend != "mpi" || op != CommOp::AllReduce) continue;
      const double raw = timeLoop(c, o.secondsPerPoint, [&] {
        MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      });
      if (c.rank() == 0) rows->push_back(rowFor("mpi-raw", op, n, bytes, raw));
    }
  }
}

Row memcpyRow(const char* backend, int ranks, std::size_t bytes, double seconds) {
  return {
      {"bench", "comm"},          {"backend", backend},
      {"ranks", ranks},           {"bytes", bytes},
      {"time_us", seconds * 1e6}, {"bandwidth_GBps", static_cast<double>(bytes) / seconds / 1e9}};
}

// memcpy of the same sizes by one thread alone ("memcpy"), and by every rank's thread at once,
// each on its own buffers ("memcpy-concurrent", per-thread bandwidth): a collective keeps all
// ranks' cores copying together, so the second is the memory system's limit for it.
std::vector<Row> measureMemcpy(const BenchCommOptions& o) {
  std::vector<Row> rows;
  auto copyLoop = [&](Communicator& c, const char* backend) {
    std::vector<char> a(o.maxBytes, 1), b(o.maxBytes, 2);
    for (std::size_t bytes : sizesOf(o)) {
      const double s = timeLoop(c, o.secondsPerPoint, [&] {
        std::memcpy(b.data(), a.data(), bytes);
        asm volatile("" : : "r"(b.data()) : "memory");
      });
      if (c.rank() == 0) rows.push_back(memcpyRow(backend, c.size(), bytes, s));
    }
  };
  Communicator self;
  copyLoop(self, "memcpy");
  if (o.ranks > 1)
    runInProcess(o.ranks, [&](Communicator& c) { copyLoop(c, "memcpy-concurrent"); });
  return rows;
}

// Runs the MPI half under mpirun and returns its rows.
std::vector<Row> relaunchUnderMpirun(const BenchCommOptions& o) {
  std::string ops;
  for (const auto& op : o.ops) ops += (ops.empty() ? "" : ",") + op;
  return benchRowsUnderMpirun(
      o.ranks,
      {"bench", "comm", "--backend", "mpi", "--json", "--ops", ops, "--min-bytes",
       std::to_string(o.minBytes), "--max-bytes", std::to_string(o.maxBytes), "--seconds-per-point",
       std::to_string(o.secondsPerPoint)},
      "comm");
}

// Ratios at each size: in-process against Open MPI (through the Communicator and raw), and
// against memcpy of the same bytes.
std::vector<Row> compare(const std::vector<Row>& rows) {
  std::map<std::tuple<std::string, std::string, std::size_t>, double> busbw;
  std::map<std::size_t, double> memcpyBw, concurrentBw;
  for (const Row& r : rows) {
    if (r["backend"] == "memcpy")
      memcpyBw[r["bytes"]] = r["bandwidth_GBps"];
    else if (r["backend"] == "memcpy-concurrent")
      concurrentBw[r["bytes"]] = r["bandwidth_GBps"];
    else
      busbw[{r["backend"], r["op"], r["bytes"]}] = r["busbw_GBps"];
  }
  std::vector<Row> out;
  for (const auto& [key, threads] : busbw) {
    const auto& [backend, op, bytes] = key;
    if (backend != "threads") continue;
    Row c = {{"bench", "comm"}, {"compare", op}, {"bytes", bytes}, {"threads_busbw_GBps", threads}};
    if (auto it = busbw.find({"mpi", op, bytes}); it != busbw.end()) {
      c["mpi_busbw_GBps"] = it->second;
      c["threads_over_mpi"] = threads / it->second;
    }
    if (auto it = busbw.find({"mpi-raw", op, bytes}); it != busbw.end()) {
      c["mpi_raw_busbw_GBps"] = it->second;
      c["threads_over_mpi_raw"] = threads / it->second;
    }
    if (memcpyBw.count(bytes)) {
      c["memcpy_GBps"] = memcpyBw[bytes];
      c["threads_busbw_over_memcpy"] = threads / memcpyBw[bytes];
    }
    if (concurrentBw.count(bytes)) {
      c["memcpy_concurrent_GBps"] = concurrentBw[bytes];
      c["threads_busbw_over_memcpy_concurrent"] = threads / concurrentBw[bytes];
    }
    out.push_back(c);
  }
  return out;
}

std::string sizeText(std::size_t b) {
  if (b >= (1u << 20)) return std::to_string(b >> 20) + " MiB";
  return std::to_string(b >> 10) + " KiB";
}

void printText(const std::vector<Row>& rows, const std::vector<Row>& comparisons) {
  std::printf("%-8s %-14s %6s %10s %12s %12s %12s\n", "backend", "op", "ranks", "size", "time_us",
              "algbw_GB/s", "busbw_GB/s");
  for (const Row& r : rows) {
    if (r.contains("bandwidth_GBps")) continue;
    std::printf("%-8s %-14s %6d %10s %12.2f %12.3f %12.3f\n",
                r["backend"].get<std::string>().c_str(), r["op"].get<std::string>().c_str(),
                r["ranks"].get<int>(), sizeText(r["bytes"]).c_str(), r["time_us"].get<double>(),
                r["algbw_GBps"].get<double>(), r["busbw_GBps"].get<double>());
  }
  std::printf("\n%-18s %6s %10s %12s %14s\n", "memcpy", "ranks", "size", "time_us", "GB/s (each)");
  for (const Row& r : rows)
    if (r.contains("bandwidth_GBps"))
      std::printf("%-18s %6d %10s %12.2f %14.3f\n", r["backend"].get<std::string>().c_str(),
                  r["ranks"].get<int>(), sizeText(r["bytes"]).c_str(), r["time_us"].get<double>(),
                  r["bandwidth_GBps"].get<double>());
  std::printf(
      "\nbus bandwidth, GB/s: in-process vs Open MPI (Communicator / raw MPI_Allreduce) vs memcpy "
      "(one thread / all ranks' threads at once)\n");
  std::printf("%-14s %10s %9s %9s %9s %9s %9s %9s %9s %9s\n", "op", "size", "threads", "mpi",
              "mpi-raw", "memcpy", "mcpy-all", "thr/mpi", "thr/mcpy", "thr/all");
  auto num = [](const Row& r, const char* k) { return r.contains(k) ? r[k].get<double>() : 0.0; };
  for (const Row& c : comparisons)
    std::printf(
        "%-14s %10s %9.3f %9.3f %9.3f %9.3f %9.3f %9.2f %9.2f %9.2f\n",
        c["compare"].get<std::string>().c_str(), sizeText(c["bytes"]).c_str(),
        num(c, "threads_busbw_GBps"), num(c, "mpi_busbw_GBps"), num(c, "mpi_raw_busbw_GBps"),
        num(c, "memcpy_GBps"), num(c, "memcpy_concurrent_GBps"), num(c, "threads_over_mpi"),
        num(c, "threads_busbw_over_memcpy"), num(c, "threads_busbw_over_memcpy_concurrent"));
}

}  // namespace

void runBenchComm(const BenchCommOptions& o) {
  for (const auto& op : o.ops) parseOp(op);
  const bool underMpirun = launchedByMpirun();
  const bool mpiOnly = underMpirun || o.backend == "mpi";
  if (mpiOnly && !underMpirun) {
    for (const Row& r : relaunchUnderMpirun(o)) std::printf("%s\n", r.dump().c_str());
    return;
  }
  std::vector<Row> rows;
  if (mpiOnly) {
    Communicator world = mpiWorld();
    measureRanks(world, o, "mpi", &rows);
    if (world.rank() == 0)
      for (const Row& r : rows) std::printf("%s\n", r.dump().c_str());
    return;
  }
  runInProcess(o.ranks, [&](Communicator& c) { measureRanks(c, o, "threads", &rows); });
  for (Row& r : measureMemcpy(o)) rows.push_back(std::move(r));
  if (o.backend == "all")
    for (Row& r : relaunchUnderMpirun(o)) rows.push_back(std::move(r));
  const std::vector<Row> comparisons = compare(rows);
  if (!o.json) return printText(rows, comparisons);
  for (const Row& r : rows) std::printf("%s\n", r.dump().c_str());
  for (const Row& r : comparisons) std::printf("%s\n", r.dump().c_str());
}

}  // namespace parascope::bench
