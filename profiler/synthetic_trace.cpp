// Synthetic training trace; see synthetic_trace.h. Times in ns; a kernel lasts 1-5 us, an
// instruction holds kernelsPerInstruction of them with sub-microsecond gaps.
#include "profiler/synthetic_trace.h"

#include <random>

namespace parascope::profiler {

namespace {

using profiler::Category;
using profiler::Event;
using profiler::EventKind;
namespace lane = parascope::trace::lane;
namespace flag = parascope::trace::flag;

struct RankWriter {
  profiler::TraceData& trace;
  std::int32_t rank;
  std::mt19937_64 rng;

  Event& span(const char* name, Category c, std::int32_t laneId, std::int64_t t0, std::int64_t t1) {
    Event e;
    e.name = name;
    e.category = c;
    e.rank = rank;
    e.lane = laneId;
    e.startNs = t0;
    e.endNs = t1;
    trace.events.push_back(e);
    return trace.events.back();
  }
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
};

std::uint64_t flowId(std::int32_t step, int mb, int kind, std::int32_t sender) {
  return (static_cast<std::uint64_t>(step) << 24 | static_cast<std::uint64_t>(mb) << 12 |
          static_cast<std::uint64_t>(kind) << 8 | static_cast<std::uint64_t>(sender)) +
         1;
}

// One instruction (F, B or W of a micro-batch) with its kernels, its send and receive and a
// memory counter sample; returns its end.
std::int64_t instruction(RankWriter& w, const SyntheticOptions& o, std::int32_t step, int mb,
                         int kind, std::int64_t t) {
  static const char* const kNames[] = {"F", "B", "W"};
  static const char* const kKernels[] = {"gemm", "layernorm", "gelu", "softmax", "attention"};
  const std::int32_t stage = w.rank % o.stages;
  const std::size_t at = w.trace.events.size();
  w.span(kNames[kind], Category::Instruction, lane::kCompute, t, t);
  std::int64_t k = t + w.between(100, 500);
  for (int i = 0; i < o.kernelsPerInstruction; ++i) {
    const std::int64_t end = k + w.between(1000, 5000);
    Event& e = w.span(kKernels[w.between(0, 4)], Category::Compute, lane::kCompute, k, end);
    e.step = step;
    k = end + w.between(50, 800);
  }
  Event& in = w.trace.events[at];
  in.endNs = k;
  in.step = step;
  in.stage = stage;
  in.microBatch = mb;
  const std::int32_t next = (w.rank + 1) % o.ranks, prev = (w.rank + o.ranks - 1) % o.ranks;
  Event& send = w.span("send", Category::Communication, lane::kCommunication, k, k + 2000);
  send.bytes = 1 << 20;
  send.peer = next;
  send.correlation = flowId(step, mb, kind, w.rank);
  send.flags = flag::kFlowSource;
  Event& recv = w.span("recv", Category::Communication, lane::kCommunication, t - 2500, t - 500);
  recv.bytes = 1 << 20;
  recv.peer = prev;
  recv.correlation = flowId(step, mb, kind, prev);
  recv.flags = flag::kReceive;
  Event& mem = w.span("activations", Category::Memory, lane::kCompute, k, k);
  mem.kind = EventKind::Counter;
  mem.bytes = (static_cast<std::int64_t>(mb) + 1) * (kind == 0 ? 64 : 32) << 20;
  return k + w.between(200, 3000);
}

}  // namespace

profiler::TraceData syntheticTrainingTrace(const SyntheticOptions& o) {
  profiler::TraceData trace;
  trace.worldSize = o.ranks;
  const std::size_t perInstruction = static_cast<std::size_t>(o.kernelsPerInstruction) + 4;
  const std::size_t perStep = perInstruction * 3 * static_cast<std::size_t>(o.microBatches) + 2;
  const std::size_t steps =
      std::max<std::size_t>(1, o.events / (perStep * static_cast<std::size_t>(o.ranks)));
  trace.events.reserve(steps * perStep * static_cast<std::size_t>(o.ranks));
  for (std::int32_t r = 0; r < o.ranks; ++r) {
    RankWriter w{trace, r, std::mt19937_64(o.seed * 7919 + static_cast<std::uint64_t>(r))};
    trace.rankNames[r] = "rank " + std::to_string(r);
    std::int64_t t = 10'000;
    for (std::size_t s = 0; s < steps; ++s) {
      const auto step = static_cast<std::int32_t>(s);
      const std::size_t at = trace.events.size();
      w.span("train_step", Category::Step, lane::kHost, t, t).step = step;
      std::int64_t u = t + 3000 + 20'000 * (r % o.stages);  // the pipeline's warm-up bubble
      for (int mb = 0; mb < o.microBatches; ++mb) {
        for (int kind = 0; kind < 3; ++kind) u = instruction(w, o, step, mb, kind, u);
      }
      Event& ar =
          w.span("all_reduce", Category::Communication, lane::kCommunication, u, u + 50'000);
      ar.bytes = 64 << 20;
      ar.group = 0;
      ar.step = step;
      u += 52'000;
      trace.events[at].endNs = u;
      t = u + 5000;
    }
  }
  trace.sortByTime();
  return trace;
}

}  // namespace parascope::profiler
