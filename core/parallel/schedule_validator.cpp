// Static checks per rank (placement, duplicates, dependency order, completeness, memory), then
// pairing of sends and receives per FIFO channel, then a blocking-semantics run for deadlock.
#include "core/parallel/schedule_validator.h"

#include <array>
#include <map>
#include <utility>

#include "core/parallel/schedule_simulator.h"

namespace parascope {

namespace {

constexpr std::size_t kMaxProblems = 64;  // a wholly wrong program would otherwise list thousands
constexpr int kPipelineOps = 8;           // Forward .. RecvGrad index a Unit's slots
static_assert(static_cast<int>(Op::RecvGrad) + 1 == kPipelineOps);

class Problems {
 public:
  explicit Problems(std::vector<std::string>& out) : out_(out) {}
  void add(std::string message) {
    if (out_.size() < kMaxProblems) {
      out_.push_back(std::move(message));
    } else {
      ++dropped_;
    }
  }
  void finish() {
    if (dropped_ > 0) {
      out_.push_back("... and " + std::to_string(dropped_) + " more problems");
    }
  }

 private:
  std::vector<std::string>& out_;
  std::size_t dropped_ = 0;
};

std::string at(int rank, std::size_t index, const Instruction& in) {
  return "rank " + std::to_string(rank) + " instruction " + std::to_string(index) + " (" +
         in.toString() + ")";
}

std::string unitName(Op op, int stage, int microBatch) {
  return std::string(opName(op)) + " s" + std::to_string(stage) + " mb" +
         std::to_string(microBatch);
}

// Where each pipeline instruction of one (stage, micro-batch) appears in a rank's program.
struct Unit {
  std::array<int, kPipelineOps> at;
  Unit() { at.fill(-1); }
  int& operator[](Op op) { return at[static_cast<std::size_t>(op)]; }
};

struct Endpoint {
  int rank;
  std::size_t index;
};

struct Channel {  // one direction of one kind between two ranks; FIFO
  std::vector<Endpoint> sends;
  std::vector<Endpoint> receives;
};

int neighbourOf(const Instruction& in) {
  return in.op == Op::SendActivation || in.op == Op::RecvGrad ? in.stage + 1 : in.stage - 1;
}

// row * width + column without int overflow.
std::size_t index(int row, int width, int column) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(width) +
         static_cast<std::size_t>(column);
}

// Channels are laid out as (sender, receiver, kind), activation first.
std::size_t channelIndex(int from, int to, int ranks, bool activation) {
  return index(from, ranks, to) * 2 + (activation ? 0 : 1);
}

bool isActivation(Op op) {
  return op == Op::SendActivation || op == Op::RecvActivation;
}
bool isSend(Op op) {
  return op == Op::SendActivation || op == Op::SendGrad;
}

// One pass over one rank's program.
class RankWalk {
 public:
  RankWalk(const PipelineShape& shape, int rank, const Program& program, Problems& problems,
           std::vector<Channel>& channels)
      : shape_(shape),
        rank_(rank),
        program_(program),
        problems_(problems),
        channels_(channels),
        units_(static_cast<std::size_t>(shape.chunks) *
               static_cast<std::size_t>(shape.microBatches)) {}

  void run() {
    for (std::size_t i = 0; i < program_.size(); ++i) {
      visit(i, program_[i]);
    }
    checkComplete();
  }

  bool peersUsable = true;  // every send/recv names another existing rank
  int peakInFlight = 0, peakHeld = 0;
  std::size_t peakInFlightAt = 0, peakHeldAt = 0;

 private:
  Unit& unit(int stage, int microBatch) {
    return units_[index(shape_.chunkOf(stage), shape_.microBatches, microBatch)];
  }
  bool done(int stage, int microBatch, Op op) { return unit(stage, microBatch)[op] >= 0; }
  void problem(std::size_t i, const std::string& what) {
    problems_.add(at(rank_, i, program_[i]) + ": " + what);
  }

  void visit(std::size_t i, const Instruction& in) {
    if (stepAt_ >= 0) {
      problem(i, "comes after the optimizer step (instruction " + std::to_string(stepAt_) +
                     "), which must be last");
    }
    if (in.op == Op::OptimizerStep) {
      if (stepAt_ >= 0) {
        return;
      }
      stepAt_ = static_cast<int>(i);
    } else if (in.op > Op::RecvGrad) {
      visitBucket(i, in);
    } else if (placed(i, in) && !repeated(i, in)) {
      checkOrder(i, in);
      unit(in.stage, in.microBatch)[in.op] = static_cast<int>(i);
      count(i, in.op);
    }
  }

  void visitBucket(std::size_t i, const Instruction& in) {
    if (in.bucket < 0) {
      return problem(i, "needs a bucket index of 0 or more");
    }
    const auto [first, inserted] = buckets_.emplace(in.id(), i);
    if (!inserted) {
      problem(i, "repeats instruction " + std::to_string(first->second));
    }
  }

  // Stage, chunk, micro-batch and peer agree with the shape and this rank.
  bool placed(std::size_t i, const Instruction& in) {
    const int stages = shape_.virtualStages();
    if (in.isPointToPoint() && (in.peer < 0 || in.peer >= shape_.stages || in.peer == rank_)) {
      peersUsable = false;
      problem(i, "peer must be another of ranks 0.." + std::to_string(shape_.stages - 1));
      return false;
    }
    if (in.stage < 0 || in.stage >= stages) {
      problem(i, "stage outside 0.." + std::to_string(stages - 1));
      return false;
    }
    if (shape_.rankOf(in.stage) != rank_) {
      problem(i, "stage " + std::to_string(in.stage) + " belongs to rank " +
                     std::to_string(shape_.rankOf(in.stage)));
      return false;
    }
    if (in.chunk != shape_.chunkOf(in.stage)) {
      problem(i, "stage " + std::to_string(in.stage) + " is chunk " +
                     std::to_string(shape_.chunkOf(in.stage)) + " of its rank");
      return false;
    }
    if (in.microBatch < 0 || in.microBatch >= shape_.microBatches) {
      problem(i, "micro-batch outside 0.." + std::to_string(shape_.microBatches - 1));
      return false;
    }
    return !in.isPointToPoint() || peerMatches(i, in);
  }

  bool peerMatches(std::size_t i, const Instruction& in) {
    const int neighbour = neighbourOf(in);
    if (neighbour < 0 || neighbour >= shape_.virtualStages()) {
      problem(i, "there is no stage " + std::to_string(neighbour) + " on the other side");
      return false;
    }
    const int owner = shape_.rankOf(neighbour);
    if (owner == rank_) {
      problem(i, "stage " + std::to_string(neighbour) +
                     " is on this rank too and is handed over without a transfer");
      return false;
    }
    if (in.peer != owner) {
      problem(i, "stage " + std::to_string(neighbour) + " is on rank " + std::to_string(owner) +
                     ", not rank " + std::to_string(in.peer));
      return false;
    }
    const int from = isSend(in.op) ? rank_ : owner;
    const int to = isSend(in.op) ? owner : rank_;
    Channel& c = channels_[channelIndex(from, to, shape_.stages, isActivation(in.op))];
    (isSend(in.op) ? c.sends : c.receives).push_back({rank_, i});
    return true;
  }

  bool repeated(std::size_t i, const Instruction& in) {
    Unit& u = unit(in.stage, in.microBatch);
    int first = u[in.op];
    if (in.op == Op::Backward && first < 0) {
      first = u[Op::BackwardInput];
    }
    if (in.op == Op::BackwardInput && first < 0) {
      first = u[Op::Backward];
    }
    if (in.op == Op::BackwardWeight && first < 0) {
      first = u[Op::Backward];
    }
    if (first < 0) {
      return false;
    }
    problem(i, "repeats the work of instruction " + std::to_string(first) + " (" +
                   program_[static_cast<std::size_t>(first)].toString() + ")");
    return true;
  }

  void require(std::size_t i, bool met, const std::string& what) {
    if (!met) {
      problem(i, what);
    }
  }

  void checkOrder(std::size_t i, const Instruction& in) {
    const int s = in.stage, mb = in.microBatch;
    const bool backward = in.op == Op::Backward || in.op == Op::BackwardInput;
    const bool inputGradDone = done(s, mb, Op::Backward) || done(s, mb, Op::BackwardInput);
    if (in.op == Op::Forward && s > 0) {
      if (shape_.rankOf(s - 1) == rank_) {
        require(i, done(s - 1, mb, Op::Forward),
                "runs before " + unitName(Op::Forward, s - 1, mb) + ", its input on this rank");
      } else {
        require(i, done(s, mb, Op::RecvActivation),
                "runs before its input arrives (no earlier " + unitName(Op::RecvActivation, s, mb) +
                    ")");
      }
    }
    if (backward) {
      checkBackwardInputs(i, s, mb);
    }
    if (in.op == Op::BackwardWeight) {
      require(i, done(s, mb, Op::BackwardInput),
              "runs before its input-gradient half " + unitName(Op::BackwardInput, s, mb));
    }
    if (in.op == Op::SendActivation) {
      require(
          i, done(s, mb, Op::Forward),
          "sends an activation not computed yet (no earlier " + unitName(Op::Forward, s, mb) + ")");
    }
    if (in.op == Op::SendGrad) {
      require(i, inputGradDone,
              "sends a gradient not computed yet (no earlier backward of s" + std::to_string(s) +
                  " mb" + std::to_string(mb) + ")");
    }
  }

  void checkBackwardInputs(std::size_t i, int s, int mb) {
    require(i, done(s, mb, Op::Forward),
            "backward before its forward " + unitName(Op::Forward, s, mb));
    if (s + 1 >= shape_.virtualStages()) {
      return;
    }
    if (shape_.rankOf(s + 1) == rank_) {
      require(i, done(s + 1, mb, Op::Backward) || done(s + 1, mb, Op::BackwardInput),
              "runs before the backward of s" + std::to_string(s + 1) + " mb" + std::to_string(mb) +
                  ", its output gradient on this rank");
    } else {
      require(i, done(s, mb, Op::RecvGrad),
              "runs before its output gradient arrives (no earlier " +
                  unitName(Op::RecvGrad, s, mb) + ")");
    }
  }

  void count(std::size_t i, Op op) {
    if (op == Op::Forward) {
      ++inFlight_, ++held_;
    }
    if (op == Op::Backward || op == Op::BackwardInput) {
      --inFlight_;
    }
    if (op == Op::Backward || op == Op::BackwardWeight) {
      --held_;
    }
    if (inFlight_ > peakInFlight) {
      peakInFlight = inFlight_, peakInFlightAt = i;
    }
    if (held_ > peakHeld) {
      peakHeld = held_, peakHeldAt = i;
    }
  }

  void checkComplete();

  const PipelineShape& shape_;
  int rank_;
  const Program& program_;
  Problems& problems_;
  std::vector<Channel>& channels_;
  std::vector<Unit> units_;                       // indexed by chunk * m + micro-batch
  std::map<std::uint64_t, std::size_t> buckets_;  // data-parallel instructions by id
  int stepAt_ = -1;
  int inFlight_ = 0, held_ = 0;
};

void RankWalk::checkComplete() {
  const std::string rank = "rank " + std::to_string(rank_) + ": ";
  for (int chunk = 0; chunk < shape_.chunks; ++chunk) {
    const int s = shape_.stageOf(rank_, chunk);
    for (int mb = 0; mb < shape_.microBatches; ++mb) {
      Unit& u = unit(s, mb);
      if (u[Op::Forward] < 0) {
        problems_.add(rank + unitName(Op::Forward, s, mb) + " never runs");
      }
      if (u[Op::Backward] < 0 && u[Op::BackwardInput] < 0) {
        problems_.add(rank + "the backward of s" + std::to_string(s) + " mb" + std::to_string(mb) +
                      " never runs");
      }
      if (u[Op::BackwardInput] >= 0 && u[Op::BackwardWeight] < 0) {
        problems_.add(rank + unitName(Op::BackwardWeight, s, mb) + " never runs (its Bi is " +
                      "instruction " + std::to_string(u[Op::BackwardInput]) + ")");
      }
    }
  }
  if (stepAt_ < 0) {
    problems_.add(rank + "no optimizer step");
  }
}

}  // namespace

namespace {

std::string ordinal(std::size_t n) {
  const std::size_t tens = n % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : n % 10 == 1              ? "st"
                       : n % 10 == 2              ? "nd"
                       : n % 10 == 3              ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

// The k-th send on a channel is taken by the k-th receive: they must name the same micro-batch
// and adjacent stages (an activation of s feeds s + 1, a gradient of s feeds s - 1).
void pairChannel(const std::vector<Program>& programs, const Channel& c, bool activation,
                 Problems& problems) {
  const std::string kind = activation ? "activation" : "gradient";
  const std::size_t paired = std::min(c.sends.size(), c.receives.size());
  for (std::size_t k = 0; k < paired; ++k) {
    const Endpoint& s = c.sends[k];
    const Endpoint& r = c.receives[k];
    const Instruction& send = programs[static_cast<std::size_t>(s.rank)][s.index];
    const Instruction& recv = programs[static_cast<std::size_t>(r.rank)][r.index];
    if (recv.microBatch != send.microBatch || recv.stage != neighbourOf(send)) {
      problems.add(at(r.rank, r.index, recv) + " takes the " + ordinal(k + 1) + " " + kind +
                   " message from rank " + std::to_string(s.rank) + ", which is " +
                   at(s.rank, s.index, send));
    }
  }
  for (std::size_t k = paired; k < c.sends.size(); ++k) {
    const Endpoint& s = c.sends[k];
    const int to = programs[static_cast<std::size_t>(s.rank)][s.index].peer;
    problems.add(at(s.rank, s.index, programs[static_cast<std::size_t>(s.rank)][s.index]) +
                 ": rank " + std::to_string(to) + " never receives it (it has " +
                 std::to_string(c.receives.size()) + " receives for the " +
                 std::to_string(c.sends.size()) + " " + kind + " messages)");
  }
  for (std::size_t k = paired; k < c.receives.size(); ++k) {
    const Endpoint& r = c.receives[k];
    const Instruction& recv = programs[static_cast<std::size_t>(r.rank)][r.index];
    problems.add(at(r.rank, r.index, recv) + ": rank " + std::to_string(recv.peer) +
                 " never sends it (it sends " + std::to_string(c.sends.size()) + " " + kind +
                 " messages to rank " + std::to_string(r.rank) + ")");
  }
}

bool writesGradients(Op op) {
  return op == Op::Backward || op == Op::BackwardInput || op == Op::BackwardWeight;
}

// The rank's data-parallel instructions against what its strategy needs: every bucket reduced
// (with the strategy's op) after the last backward writing it, and with eachMicroBatch after each
// one; each forward preceded by the gather of its chunk's first group.
void checkDataParallel(int rank, const Program& program, const DataParallelWork& work,
                       const PipelineShape& shape, Problems& problems) {
  const int buckets = work.buckets();
  std::vector<std::vector<int>> chunkBuckets(static_cast<std::size_t>(shape.chunks));
  for (int b = 0; b < buckets; ++b) {
    for (int c : work.bucketChunks[static_cast<std::size_t>(b)]) {
      if (c >= 0 && c < shape.chunks) chunkBuckets[static_cast<std::size_t>(c)].push_back(b);
    }
  }
  auto problem = [&](std::size_t i, const std::string& what) {
    problems.add(at(rank, i, program[i]) + ": " + what);
  };
  // Per bucket: the first instruction writing it since its last reduction (-1: none), and
  // whether it was reduced at all.
  std::vector<int> unreduced(static_cast<std::size_t>(buckets), -1);
  std::vector<bool> reduced(static_cast<std::size_t>(buckets), false);
  std::map<std::pair<int, int>, std::size_t> gathers, forwards;  // by (stage, micro-batch)
  for (std::size_t i = 0; i < program.size(); ++i) {
    const Instruction& in = program[i];
    const std::string bucket = "bucket b" + std::to_string(in.bucket);
    if (writesGradients(in.op) && in.chunk >= 0 && in.chunk < shape.chunks) {
      for (int b : chunkBuckets[static_cast<std::size_t>(in.chunk)]) {
        int& since = unreduced[static_cast<std::size_t>(b)];
        if (work.eachMicroBatch && since >= 0) {
          problem(i, "writes bucket b" + std::to_string(b) + " again before the gradients of " +
                         "instruction " + std::to_string(since) + " are reduced");
        }
        if (since < 0) since = static_cast<int>(i);
      }
    } else if (in.op == Op::ReduceGradBucket || in.op == Op::ZeroScatter) {
      if (in.op != work.reduce) {
        problem(i, "this strategy reduces gradients with " + std::string(opName(work.reduce)));
      } else if (in.bucket < 0 || in.bucket >= buckets) {
        problem(i,
                bucket + " does not exist (the rank has " + std::to_string(buckets) + " buckets)");
      } else {
        const auto b = static_cast<std::size_t>(in.bucket);
        if (unreduced[b] < 0 && !work.bucketChunks[b].empty()) {
          problem(i, "reduces " + bucket + " before a backward writes it");
        }
        unreduced[b] = -1;
        reduced[b] = true;
      }
    } else if (in.op == Op::ZeroGather) {
      if (work.forwardGroup.empty()) {
        problem(i, "this strategy keeps whole parameters and gathers none");
        continue;
      }
      gathers.emplace(std::pair(in.stage, in.microBatch), i);
      if (auto f = forwards.find({in.stage, in.microBatch}); f != forwards.end()) {
        problem(i, "comes after instruction " + std::to_string(f->second) + " (" +
                       program[f->second].toString() + "), which needs it");
      }
    }
    if (in.op == Op::Forward && !work.forwardGroup.empty() && in.chunk >= 0 &&
        in.chunk < static_cast<int>(work.forwardGroup.size())) {
      forwards.emplace(std::pair(in.stage, in.microBatch), i);
      const int group = work.forwardGroup[static_cast<std::size_t>(in.chunk)];
      auto g = gathers.find({in.stage, in.microBatch});
      if (g == gathers.end() || program[g->second].bucket != group) {
        problem(i, "runs before its parameters are gathered (no earlier " +
                       gatherOp(in.stage, in.chunk, in.microBatch, group).toString() + ")");
      }
    }
  }
  for (int b = 0; b < buckets; ++b) {
    const auto at = static_cast<std::size_t>(b);
    const std::string name = "rank " + std::to_string(rank) + ": bucket b" + std::to_string(b);
    if (unreduced[at] >= 0) {
      problems.add(name + " is not reduced after instruction " + std::to_string(unreduced[at]) +
                   " (" + program[static_cast<std::size_t>(unreduced[at])].toString() +
                   "), which writes it");
    } else if (!reduced[at]) {
      problems.add(name + " is never reduced");
    }
  }
}

void checkDeadlock(const std::vector<Program>& programs, Problems& problems) {
  const SimulationResult run = simulatePrograms(programs);
  if (!run.deadlocked()) {
    return;
  }
  std::string waits;
  for (const BlockedRank& b : run.blocked) {
    const Instruction& in =
        programs[static_cast<std::size_t>(b.rank)][static_cast<std::size_t>(b.index)];
    waits += (waits.empty() ? "" : "; ") + std::string("rank ") + std::to_string(b.rank) +
             " waits at instruction " + std::to_string(b.index) + " (" + in.toString() + ")";
  }
  problems.add("deadlock: receives wait forever: " + waits);
}

void checkPromise(int rank, const RankWalk& walk, const Program& program,
                  const ActivationBound& bound, Problems& problems) {
  if (walk.peakInFlight > bound.inFlight) {
    problems.add(at(rank, walk.peakInFlightAt, program[walk.peakInFlightAt]) + ": " +
                 std::to_string(walk.peakInFlight) +
                 " forwards wait for their backward, more than the promised " +
                 std::to_string(bound.inFlight));
  }
  if (walk.peakHeld > bound.held) {
    problems.add(at(rank, walk.peakHeldAt, program[walk.peakHeldAt]) + ": " +
                 std::to_string(walk.peakHeld) +
                 " forwards wait for their weight gradient, more than the promised " +
                 std::to_string(bound.held));
  }
}

}  // namespace

std::string ValidationReport::summary() const {
  std::string out;
  for (const std::string& p : problems) {
    out += p + "\n";
  }
  return out;
}

ValidationReport validatePrograms(const PipelineShape& shape, const std::vector<Program>& programs,
                                  const std::vector<ActivationBound>& promise,
                                  const std::vector<DataParallelWork>& work) {
  ValidationReport report;
  Problems problems(report.problems);
  const int p = shape.stages;
  if (const std::string problem = shapeProblem(shape); !problem.empty()) {
    problems.add("shape: " + problem);
    return report;
  }
  if (programs.size() != static_cast<std::size_t>(p)) {
    problems.add("expected " + std::to_string(p) + " programs (one per pipeline rank), got " +
                 std::to_string(programs.size()));
    return report;
  }
  if (!promise.empty() && promise.size() != programs.size()) {
    problems.add("expected a promised bound per rank (" + std::to_string(p) + "), got " +
                 std::to_string(promise.size()));
  }
  if (!work.empty() && work.size() != programs.size()) {
    problems.add("expected the data-parallel work of every rank (" + std::to_string(p) + "), got " +
                 std::to_string(work.size()));
  }
  std::vector<Channel> channels(index(p, p, 0) * 2);
  bool peersUsable = true;
  for (int r = 0; r < p; ++r) {
    const Program& program = programs[static_cast<std::size_t>(r)];
    RankWalk walk(shape, r, program, problems, channels);
    walk.run();
    peersUsable = peersUsable && walk.peersUsable;
    report.peakInFlight.push_back(walk.peakInFlight);
    report.peakHeld.push_back(walk.peakHeld);
    if (promise.size() == programs.size()) {
      checkPromise(r, walk, program, promise[static_cast<std::size_t>(r)], problems);
    }
    if (work.size() == programs.size()) {
      checkDataParallel(r, program, work[static_cast<std::size_t>(r)], shape, problems);
    }
  }
  for (std::size_t c = 0; c < channels.size(); ++c) {
    pairChannel(programs, channels[c], c % 2 == 0, problems);
  }
  if (peersUsable) {
    checkDeadlock(programs, problems);
  }
  problems.finish();
  return report;
}

ValidationReport validateSchedule(const ScheduleInfo& schedule, const PipelineShape& shape) {
  const std::vector<Program> programs = buildSchedule(schedule, shape);
  std::vector<ActivationBound> promise;
  promise.reserve(programs.size());
  for (int r = 0; r < shape.stages; ++r) {
    promise.push_back(schedule.promisedPeak(shape, r));
  }
  return validatePrograms(shape, programs, promise);
}

}  // namespace parascope
