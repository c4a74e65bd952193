// Discrete-event simulation under processor sharing. Every busy thread receives the same share
// of the cores, so progress is one clock of "service" for all of them: a piece of work started
// at service S with w seconds of work ends at service S + w, whatever the load does meanwhile.
// A heap of those ends and one of wake-up times (messages arriving, devices finishing) drive
// the clock, so an event costs O(log n).
#include "core/plan/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>

#include "core/comm/collective_traits.h"

namespace parascope {

double Simulation::idleFraction(int pipelineRank) const {
  const SimulatedRank& r = ranks.at(static_cast<std::size_t>(pipelineRank));
  return pipelineSeconds > 0 ? (pipelineSeconds - r.busy) / pipelineSeconds : 0;
}

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

bool writesGradients(Op op) {
  return op == Op::Backward || op == Op::BackwardInput || op == Op::BackwardWeight;
}

struct Work {
  double finishService;
  int thread;  // 2 * rank (+1 for the communication thread)
  bool operator>(const Work& o) const { return finishService > o.finishService; }
};

struct Wake {
  double time;
  int thread;
  bool operator>(const Wake& o) const { return time > o.time; }
};

enum class State : std::uint8_t { Ready, Working, Waiting, Done };

struct Channel {
  std::vector<double> arrivals;  // every message sent so far, in order
  std::size_t taken = 0;         // messages already received
};

class Engine {
 public:
  Engine(const StrategyPlan& plan, const CostModel& costs)
      : plan_(plan),
        costs_(costs),
        ranks_(plan.ranks.size()),
        issued_(plan.ranks.size()),
        computeCosts_(plan.ranks.size()) {
    const auto p = plan.ranks.size();
    sim_.ranks.resize(p);
    for (std::size_t r = 0; r < p; ++r) {
      sim_.ranks[r].instructions.resize(plan.ranks[r].program.size());
      for (const Instruction& in : plan.ranks[r].program)
        if (in.op == Op::ReduceGradBucket || in.op == Op::ZeroScatter)
          ranks_[r].lastBucket = std::max(ranks_[r].lastBucket, static_cast<int>(in.bucket));
    }
    channels_.resize(p * p * 2);
    transfer_ = costs.transferSeconds();
    weight_ = plan.ranksPerPipelineRank();
    const DeviceDescription& d = costs.system().device;
    cores_ = d.sharesCores() ? d.cores : kNever;
  }

  Simulation run() {
    for (std::size_t r = 0; r < ranks_.size(); ++r) dirty_.push_back(static_cast<int>(r));
    for (;;) {
      while (!dirty_.empty()) {
        const int r = dirty_.back();
        dirty_.pop_back();
        advance(r);
      }
      if (work_.empty() && wakes_.empty()) break;
      step();
    }
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      if (ranks_[r].state != State::Done) deadlock();
      sim_.pipelineSeconds = std::max(sim_.pipelineSeconds, sim_.ranks[r].finish);
      sim_.stepSeconds = std::max(sim_.stepSeconds, sim_.ranks[r].end);
    }
    sim_.stepSeconds += costs_.system().stepOverhead;
    return std::move(sim_);
  }

 private:
  struct Comm {
    bool busy = false;
    std::deque<int> queue;  // indices into the rank's collectives, not yet started
    int running = -1;
    int completed = 0;  // collectives finished, in issue order
  };
  struct RankState {
    std::size_t next = 0;
    State state = State::Ready;
    bool entered = false;  // the current instruction's span has started
    bool roundOpen = false, roundReduced = false;
    int lastBucket = -1;
    int waitFor = -1;  // Waiting until this many collectives have completed
    int gather = -1;   // the ZeroGather issued for the next forward (collective index)
    // The running compute instruction ends no earlier than this many collectives have completed:
    // ZeRO-3's gathers of its chunk, prefetched layer by layer while it computes.
    int finishAfter = -1;
    bool finishing = false;  // its work is done; it waits for those gathers
    bool atBarrier = false;
    Comm comm;
  };

  double rate() const {
    const double busy = busyThreads_ * weight_;
    return busy <= cores_ ? 1.0 : cores_ / busy;
  }

  Channel& channel(int from, int to, Op op) {
    const auto p = ranks_.size();
    const std::size_t kind = op == Op::SendActivation || op == Op::RecvActivation ? 0 : 1;
    return channels_[(static_cast<std::size_t>(from) * p + static_cast<std::size_t>(to)) * 2 +
                     kind];
  }

  void startWork(int thread, double seconds) {
    ++busyThreads_;
    work_.push({service_ + seconds, thread});
  }

  // A compute instruction's cost depends on its op and chunk only: priced once per rank.
  double computeSeconds(int r, const Instruction& in) {
    std::vector<double>& cache = computeCosts_[static_cast<std::size_t>(r)];
    const std::size_t key =
        static_cast<std::size_t>(in.chunk) * kOpCount + static_cast<std::size_t>(in.op);
    if (cache.size() <= key) cache.resize(key + 1, -1);
    if (cache[key] < 0)
      cache[key] = costs_.computeSeconds(plan_.ranks[static_cast<std::size_t>(r)], in);
    return cache[key];
  }

  // False (and the rank waiting) until `count` of its collectives have completed.
  bool waitForComm(RankState& rs, int count) {
    if (rs.comm.completed >= count) return true;
    rs.waitFor = count;
    rs.state = State::Waiting;
    return false;
  }

  // Runs rank r's instructions that take no time up to one that does (started) or one that
  // waits.
  void advance(int r) {
    RankState& rs = ranks_[static_cast<std::size_t>(r)];
    const RankPlan& rp = plan_.ranks[static_cast<std::size_t>(r)];
    SimulatedRank& out = sim_.ranks[static_cast<std::size_t>(r)];
    startComm(r);
    if (rs.state != State::Ready) return;
    while (rs.next < rp.program.size()) {
      const Instruction& in = rp.program[rs.next];
      SimulatedSpan& span = out.instructions[rs.next];
      // The executor closes a reduction round before its span opens.
      if (!rs.entered && writesGradients(in.op) && rs.lastBucket >= 0 && !rs.roundOpen) {
        if (rs.roundReduced && !waitForComm(rs, static_cast<int>(out.collectives.size()))) return;
        rs.roundOpen = true;
        rs.roundReduced = false;
      }
      if (!rs.entered) {
        rs.entered = true;
        span.start = now_;
      }
      if (in.op == Op::Forward && rs.gather >= 0) {
        rs.finishAfter = rs.gather + 1;
        rs.gather = -1;
      }
      switch (in.op) {
        case Op::SendActivation:
        case Op::SendGrad:
          channel(r, in.peer, in.op).arrivals.push_back(now_ + transfer_);
          wakeReceiver(in.peer, r);
          break;
        case Op::RecvActivation:
        case Op::RecvGrad: {
          Channel& c = channel(in.peer, r, in.op);
          if (c.taken == c.arrivals.size()) {
            rs.state = State::Waiting;
            return;
          }
          const double arrival = c.arrivals[c.taken++];
          if (arrival > now_) {
            rs.state = State::Working;  // waiting for a known time: no core used
            wakes_.push({arrival, 2 * r});
            return;
          }
          break;
        }
        case Op::ReduceGradBucket:
        case Op::ZeroScatter:
        case Op::ZeroGather: {
          const int index = issue(r, in);
          if (in.op == Op::ZeroGather) {
            rs.gather = index;
          } else if (in.bucket == rs.lastBucket) {
            rs.roundOpen = false;
            rs.roundReduced = true;
          }
          break;
        }
        case Op::OptimizerStep:
          if (!rs.atBarrier) {
            rs.atBarrier = true;
            out.finish = now_;
            if (++atBarrier_ == static_cast<int>(ranks_.size())) {
              for (std::size_t q = 0; q < ranks_.size(); ++q) {
                if (static_cast<int>(q) == r) continue;
                ranks_[q].state = State::Ready;
                dirty_.push_back(static_cast<int>(q));
              }
            }
          }
          if (atBarrier_ < static_cast<int>(ranks_.size())) {
            rs.state = State::Waiting;
            return;
          }
          if (rs.roundReduced && !waitForComm(rs, static_cast<int>(out.collectives.size()))) return;
          rs.roundReduced = false;
          rs.state = State::Working;
          startWork(2 * r, costs_.optimizerSeconds(rp));
          return;
        default:  // F, B, Bi, W
          if ((in.op == Op::Backward || in.op == Op::BackwardInput) && !rp.chunkBuckets.empty()) {
            // ZeRO-3 gathers the chunk's parameters again for its backward.
            Instruction gather = in;
            gather.op = Op::ZeroGather;
            rs.finishAfter = issue(r, gather) + 1;
          }
          rs.state = State::Working;
          startWork(2 * r, computeSeconds(r, in));
          return;
      }
      span.end = now_;
      rs.entered = false;
      ++rs.next;
    }
    rs.state = State::Done;
  }

  // Queues the data-parallel collective `in` issues on rank r's communication thread; its index.
  int issue(int r, const Instruction& in) {
    const IssuedCollective c = costs_.dataParallel(plan_.ranks[static_cast<std::size_t>(r)], in);
    std::vector<SimulatedCollective>& issued = sim_.ranks[static_cast<std::size_t>(r)].collectives;
    const int index = static_cast<int>(issued.size());
    issued.push_back(
        {{now_, now_}, c.op, c.bytes, static_cast<int>(ranks_[static_cast<std::size_t>(r)].next)});
    issued_[static_cast<std::size_t>(r)].push_back(c.seconds);
    ranks_[static_cast<std::size_t>(r)].comm.queue.push_back(index);
    startComm(r);
    return index;
  }

  // Rank r's compute or optimizer work is done: the instruction ends, or waits for its gathers.
  void workDone(int r) {
    RankState& rs = ranks_[static_cast<std::size_t>(r)];
    if (rs.finishAfter > rs.comm.completed) {
      rs.state = State::Waiting;
      rs.waitFor = rs.finishAfter;
      rs.finishing = true;
      return;
    }
    finishInstruction(r);
  }

  void startComm(int r) {
    Comm& c = ranks_[static_cast<std::size_t>(r)].comm;
    if (c.busy || c.queue.empty()) return;
    c.running = c.queue.front();
    c.queue.pop_front();
    c.busy = true;
    sim_.ranks[static_cast<std::size_t>(r)]
        .collectives[static_cast<std::size_t>(c.running)]
        .span.start = now_;
    const double seconds =
        issued_[static_cast<std::size_t>(r)][static_cast<std::size_t>(c.running)];
    if (costs_.system().device.sharesCores()) {
      startWork(2 * r + 1, seconds);
    } else {
      // A GPU's collectives run on its own engines: time, not a share of compute.
      wakes_.push({now_ + seconds, 2 * r + 1});
    }
  }

  void finishComm(int r) {
    RankState& rs = ranks_[static_cast<std::size_t>(r)];
    Comm& c = rs.comm;
    sim_.ranks[static_cast<std::size_t>(r)]
        .collectives[static_cast<std::size_t>(c.running)]
        .span.end = now_;
    c.running = -1;
    c.busy = false;
    ++c.completed;
    dirty_.push_back(r);
    if (rs.state == State::Waiting && rs.waitFor >= 0 && c.completed >= rs.waitFor) {
      rs.waitFor = -1;
      rs.state = State::Ready;
      if (rs.finishing) finishInstruction(r);
    }
  }

  void wakeReceiver(int to, int from) {
    RankState& rs = ranks_[static_cast<std::size_t>(to)];
    if (rs.state != State::Waiting || rs.waitFor >= 0 || rs.atBarrier) return;
    const Instruction& in = plan_.ranks[static_cast<std::size_t>(to)].program[rs.next];
    if (!in.isPointToPoint() || in.peer != from) return;
    rs.state = State::Ready;  // advance() takes the message (and waits for its arrival)
    dirty_.push_back(to);
  }

  // The rank's current instruction is over (its work, or the wait for a message).
  void finishInstruction(int r) {
    RankState& rs = ranks_[static_cast<std::size_t>(r)];
    const RankPlan& rp = plan_.ranks[static_cast<std::size_t>(r)];
    SimulatedRank& out = sim_.ranks[static_cast<std::size_t>(r)];
    SimulatedSpan& span = out.instructions[rs.next];
    span.end = now_;
    const Instruction& in = rp.program[rs.next];
    if (in.isCompute()) out.busy += span.end - span.start;
    if (in.op == Op::OptimizerStep) out.end = now_;
    rs.entered = false;
    rs.finishAfter = -1;
    rs.finishing = false;
    ++rs.next;
    rs.state = State::Ready;
    dirty_.push_back(r);
  }

  // Moves the clock to the next event and applies it.
  void step() {
    const double speed = rate();
    const double byWork =
        work_.empty() ? kNever : now_ + (work_.top().finishService - service_) / speed;
    const double byWake = wakes_.empty() ? kNever : wakes_.top().time;
    const double next = std::max(now_, std::min(byWork, byWake));
    service_ += (next - now_) * speed;
    now_ = next;
    if (byWork <= byWake) {
      const Work w = work_.top();
      work_.pop();
      --busyThreads_;
      service_ = std::max(service_, w.finishService);
      if (w.thread % 2 == 0)
        workDone(w.thread / 2);
      else
        finishComm(w.thread / 2);
    } else {
      const Wake w = wakes_.top();
      wakes_.pop();
      if (w.thread % 2 == 1)
        finishComm(w.thread / 2);
      else
        finishInstruction(w.thread / 2);
    }
  }

  [[noreturn]] void deadlock() const {
    std::string where;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      const std::size_t i = ranks_[r].next;
      const Program& program = plan_.ranks[r].program;
      where += " rank " + std::to_string(r) + " at " +
               (i < program.size() ? program[i].toString() : std::string("end")) + ";";
    }
    throw std::logic_error("simulation: the programs deadlock:" + where);
  }

  const StrategyPlan& plan_;
  const CostModel& costs_;
  std::vector<RankState> ranks_;
  std::vector<std::vector<double>> issued_;        // per rank: each collective's seconds
  std::vector<std::vector<double>> computeCosts_;  // per rank, by (chunk, op); -1 not priced
  std::vector<Channel> channels_;
  std::vector<int> dirty_;  // ranks that may be able to go on
  std::priority_queue<Work, std::vector<Work>, std::greater<>> work_;
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> wakes_;
  Simulation sim_;
  double now_ = 0, service_ = 0, weight_ = 1, cores_ = 1, transfer_ = 0;
  int busyThreads_ = 0;
  int atBarrier_ = 0;
};

}  // namespace

Simulation simulateStep(const StrategyPlan& plan, const CostModel& costs) {
  return Engine(plan, costs).run();
}

std::vector<trace::Event> predictedEvents(const StrategyPlan& plan, const Simulation& sim,
                                          int steps, PredictedRanks ranks) {
  const ParallelStrategy& s = plan.config.parallel;
  const bool staged = plan.config.pipeline.enabled;
  const bool all = ranks == PredictedRanks::All;
  std::vector<trace::Event> events;
  auto ns = [](double seconds) { return static_cast<std::int64_t>(std::llround(seconds * 1e9)); };
  for (int step = 0; step < steps; ++step) {
    const double offset = step * sim.stepSeconds;
    for (std::size_t q = 0; q < plan.ranks.size(); ++q) {
      const RankPlan& rp = plan.ranks[q];
      const SimulatedRank& sr = sim.ranks[q];
      // A pipeline rank's ranks: its tensor groups, one per data and context rank.
      const int groups = s.gradientGroup();
      for (int d = 0; d < (all ? groups : 1); ++d) {
        for (int t = 0; t < (all ? s.tensor : 1); ++t) {
          const int rank = t + s.tensor * (d + groups * static_cast<int>(q));
          trace::Event e;
          e.rank = rank;
          e.step = step + 1;
          e.name = "train_step";
          e.category = trace::Category::Step;
          e.lane = trace::lane::kHost;
          e.startNs = ns(offset);
          e.endNs = ns(offset + sim.stepSeconds);
          events.push_back(e);
          for (std::size_t i = 0; i < rp.program.size(); ++i) {
            const Instruction& in = rp.program[i];
            trace::Event x;
            x.rank = rank;
            x.step = step + 1;
            x.name = opName(in.op);
            x.category = trace::Category::Instruction;
            x.lane = in.isPointToPoint() ? trace::lane::kCommunication : trace::lane::kCompute;
            x.stage = staged ? in.stage : -1;
            x.microBatch = in.microBatch;
            x.instruction = static_cast<std::int32_t>(i);
            x.peer = in.isPointToPoint() ? in.peer * s.tensor * groups + d * s.tensor + t : -1;
            x.startNs = ns(offset + sr.instructions[i].start);
            x.endNs = ns(offset + sr.instructions[i].end);
            events.push_back(x);
          }
          for (const SimulatedCollective& c : sr.collectives) {
            const Instruction& in = rp.program[static_cast<std::size_t>(c.instruction)];
            trace::Event x;
            x.rank = rank;
            x.step = step + 1;
            x.name = commOpName(c.op).data();
            x.category = trace::Category::Communication;
            x.lane = trace::lane::kCommunication;
            x.stage = staged ? in.stage : -1;
            x.microBatch = in.microBatch;
            x.instruction = c.instruction;
            x.bytes = static_cast<std::int64_t>(c.bytes * commTraits(c.op).busFactor(groups));
            x.startNs = ns(offset + c.span.start);
            x.endNs = ns(offset + c.span.end);
            events.push_back(x);
          }
        }
      }
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const trace::Event& a, const trace::Event& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.startNs < b.startNs;
  });
  return events;
}

}  // namespace parascope
