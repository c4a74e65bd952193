#include "core/session/switch_plan.h"

#include <nlohmann/json.hpp>

#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/config/config_keys.h"
#include "core/plan/memory_estimate.h"
#include "core/session/switch_rule.h"

namespace parascope {

std::vector<std::string> splitAssignments(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\' && i + 1 < text.size()) {
        out.back() += c;
        out.back() += text[++i];
        continue;
      }
      quoted = c != '"';
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  return out;
}

std::vector<PlannedSwitch> planSwitches(const std::vector<std::string>& specs,
                                        const TrainConfig& start, int worldSize) {
  std::vector<PlannedSwitch> plan;
  for (const std::string& spec : specs) {
    const std::size_t colon = spec.find(':');
    const std::string step = spec.substr(0, colon);
    const bool digits = !step.empty() && step.size() < 9 &&
                        step.find_first_not_of("0123456789") == std::string::npos;
    if (colon == std::string::npos || !digits || colon + 1 == spec.size()) {
      throw UserError("--switch '" + spec +
                      "': expected STEP:key=value[,key=value...], e.g. "
                      "20:tensor_model_parallel_size=2,data_parallel_size=1");
    }
    PlannedSwitch p;
    p.spec = spec;
    p.step = std::stoi(step);
    const int previous = plan.empty() ? 0 : plan.back().step;
    if (p.step <= previous) {
      throw UserError("--switch '" + spec + "': steps must increase and be at least 1 (after " +
                      std::to_string(previous) + ")");
    }
    const TrainConfig& running = plan.empty() ? start : plan.back().config;
    nlohmann::json doc = running.document;
    try {
      for (const std::string& assignment : splitAssignments(spec.substr(colon + 1))) {
        applyOverride(doc, assignment);
      }
      const bool batchNamed = spec.find("train_batch_size") != std::string::npos ||
                              spec.find("gradient_accumulation_steps") != std::string::npos;
      p.config = resolveSwitch(running, std::move(doc), batchNamed, worldSize);
      // The target must fit as the start must: refused now, naming the switch, not at its step.
      const int sharing = worldSize > 0 ? mpiRanksOnThisNode() : p.config.parallel.worldSize();
      checkMemory(estimateMemory(p.config, dataBytesInMemory(p.config.data), sharing),
                  availableMemoryBytes());
    } catch (const UserError& e) {
      throw UserError("--switch '" + spec + "': " + e.what());
    }
    if (p.step >= p.config.trainIters) {
      throw UserError("--switch '" + spec + "': the run ends after train_iters " +
                      std::to_string(p.config.trainIters) + " steps, before step " + step);
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

void Switcher::onStep(const StepReport& r) {
  if (next_ < plan_.size() && plan_[next_].step == r.step) {
    session_.switchStrategy(plan_[next_++].config);
  }
}

}  // namespace parascope
