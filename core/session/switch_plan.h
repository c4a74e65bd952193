// Live switches planned before a run: `STEP:key=value[,key=value...]`, as `train --switch` and
// the workbench's `--switch` take them. Each applies its assignments on top of the previous
// layout's document and follows the session's switch rule (switch_rule.h) from the one before;
// every target is validated, and checked against this machine's memory, before the run starts.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/session/session.h"

namespace parascope {

// After `step` steps the run continues under `config`.
struct PlannedSwitch {
  int step = 0;
  TrainConfig config;
  std::string spec;  // as given
};

// A switch's key=value assignments, split at the commas between them; a comma inside brackets,
// braces or quotes belongs to its value (optimizer.params.betas=[0.9,0.95]).
std::vector<std::string> splitAssignments(const std::string& text);

// `worldSize`: the MPI world's size, 0 in-process. Throws UserError naming the switch.
std::vector<PlannedSwitch> planSwitches(const std::vector<std::string>& specs,
                                        const TrainConfig& start, int worldSize);

// Requests each planned switch once its step has been reported (on the rank's thread, so the
// switch comes at the boundary right after that step).
class Switcher final : public SessionObserver {
 public:
  Switcher(Session& session, std::vector<PlannedSwitch> plan)
      : session_(session), plan_(std::move(plan)) {}
  void onStep(const StepReport& r) override;

 private:
  Session& session_;
  std::vector<PlannedSwitch> plan_;
  std::size_t next_ = 0;
};

}  // namespace parascope
