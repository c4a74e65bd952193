// Predicted against measured, instruction by instruction.
#include "core/plan/prediction_error.h"

#include <map>
#include <string_view>

#include "core/common/statistics.h"

namespace parascope {

namespace {

double relative(double predicted, double measured) {
  return measured > 0 ? (predicted - measured) / measured : 0;
}

}  // namespace

double InstructionError::error() const {
  return relative(predictedSeconds, measuredSeconds);
}

double OpError::error() const {
  return relative(predictedSeconds, measuredSeconds);
}

double PredictionError::stepError() const {
  return relative(predictedStepSeconds, measuredStepSeconds);
}

PredictionError comparePrediction(const StrategyPlan& plan, const Simulation& simulation,
                                  const std::vector<trace::Event>& measured) {
  const int perPipelineRank = plan.ranksPerPipelineRank();
  std::map<std::pair<int, int>, std::vector<double>> spans;
  std::vector<double> steps;
  for (const trace::Event& e : measured) {
    if (e.kind != trace::EventKind::Span) continue;
    const double seconds = static_cast<double>(e.durationNs()) * 1e-9;
    if (e.category == trace::Category::Step && std::string_view(e.name) == "train_step") {
      if (e.rank == 0) steps.push_back(seconds);
      continue;
    }
    if (e.category != trace::Category::Instruction || e.instruction < 0) continue;
    const int q = e.rank / perPipelineRank;
    if (q >= static_cast<int>(plan.ranks.size())) continue;
    const Program& program = plan.ranks[static_cast<std::size_t>(q)].program;
    // A span of another strategy's program (a trace of a different run) does not match.
    if (e.instruction >= static_cast<int>(program.size()) ||
        std::string_view(opName(program[static_cast<std::size_t>(e.instruction)].op)) != e.name)
      continue;
    spans[{q, e.instruction}].push_back(seconds);
  }
  PredictionError out;
  out.measuredStepSeconds = median(steps);
  out.predictedStepSeconds = simulation.stepSeconds;
  std::vector<OpError> ops(static_cast<std::size_t>(kOpCount));
  for (std::size_t q = 0; q < plan.ranks.size(); ++q) {
    const Program& program = plan.ranks[q].program;
    for (std::size_t i = 0; i < program.size(); ++i) {
      InstructionError r;
      r.pipelineRank = static_cast<int>(q);
      r.index = static_cast<int>(i);
      r.instruction = program[i];
      const SimulatedSpan& s = simulation.ranks[q].instructions[i];
      r.predictedSeconds = s.end - s.start;
      const auto it = spans.find({static_cast<int>(q), static_cast<int>(i)});
      if (it != spans.end()) {
        r.measuredSeconds = median(it->second);
        r.measuredSpans = static_cast<int>(it->second.size());
      }
      OpError& op = ops[static_cast<std::size_t>(program[i].op)];
      op.op = opName(program[i].op);
      ++op.instructions;
      if (r.measuredSpans > 0) {
        op.measuredSeconds += r.measuredSeconds;
        op.predictedSeconds += r.predictedSeconds;
      }
      out.instructions.push_back(r);
    }
  }
  for (OpError& op : ops)
    if (op.instructions > 0) out.ops.push_back(op);
  return out;
}

}  // namespace parascope
