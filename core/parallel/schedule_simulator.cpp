// Virtual-time execution of per-rank programs. Ranks advance in turn as far as they can; only a
// receive whose message has not been sent stops a rank. Times do not depend on the turn order:
// a message's arrival depends only on its sender's program prefix, and channels are FIFO.
#include "core/parallel/schedule_simulator.h"

#include <algorithm>
#include <string>

#include "core/common/error.h"

namespace parascope {

namespace {

struct Channel {
  std::vector<double> arrivals;  // arrival time of each message sent so far, in send order
  std::size_t received = 0;      // messages already taken by the receiver
};

int kindOf(Op op) {
  return op == Op::SendActivation || op == Op::RecvActivation ? 0 : 1;
}

void checkPeers(const std::vector<Program>& programs) {
  const int ranks = static_cast<int>(programs.size());
  for (int r = 0; r < ranks; ++r) {
    const Program& program = programs[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < program.size(); ++i) {
      const Instruction& in = program[i];
      if (in.isPointToPoint() && (in.peer < 0 || in.peer >= ranks || in.peer == r)) {
        throw UserError("simulation: rank " + std::to_string(r) + " instruction " +
                        std::to_string(i) + " (" + in.toString() + "): peer must be another of " +
                        "ranks 0.." + std::to_string(ranks - 1));
      }
    }
  }
}

}  // namespace

SimulationResult simulatePrograms(const std::vector<Program>& programs,
                                  const StepDurations& durations) {
  checkPeers(programs);
  const std::size_t ranks = programs.size();
  std::vector<Channel> channels(ranks * ranks * 2);
  auto channel = [&](std::size_t from, std::size_t to, Op op) -> Channel& {
    return channels[(from * ranks + to) * 2 + static_cast<std::size_t>(kindOf(op))];
  };
  SimulationResult result;
  result.ranks.resize(ranks);
  std::vector<std::size_t> next(ranks, 0);
  std::vector<double> clock(ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r) {
    result.ranks[r].timings.resize(programs[r].size());
  }

  for (bool progressed = true; progressed;) {
    progressed = false;
    for (std::size_t r = 0; r < ranks; ++r) {
      const Program& program = programs[r];
      RankTimeline& timeline = result.ranks[r];
      for (; next[r] < program.size(); ++next[r], progressed = true) {
        const Instruction& in = program[next[r]];
        InstructionTiming& t = timeline.timings[next[r]];
        t.start = clock[r];
        if (in.op == Op::RecvActivation || in.op == Op::RecvGrad) {
          Channel& c = channel(static_cast<std::size_t>(in.peer), r, in.op);
          if (c.received == c.arrivals.size()) {
            break;  // blocked until the peer sends
          }
          clock[r] = std::max(clock[r], c.arrivals[c.received++]);
        } else if (in.op == Op::SendActivation || in.op == Op::SendGrad) {
          channel(r, static_cast<std::size_t>(in.peer), in.op)
              .arrivals.push_back(clock[r] + durations.transfer);
        } else {
          clock[r] += durations.of(in.op);
          timeline.busy += durations.of(in.op);
        }
        t.end = clock[r];
      }
    }
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    result.ranks[r].finish = clock[r];
    result.makespan = std::max(result.makespan, clock[r]);
    if (next[r] < programs[r].size()) {
      result.blocked.push_back({static_cast<int>(r), static_cast<int>(next[r])});
    }
  }
  return result;
}

}  // namespace parascope
