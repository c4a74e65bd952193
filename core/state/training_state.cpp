#include "core/state/training_state.h"

namespace parascope {

const char* stateFieldName(StateField f) {
  switch (f) {
    case StateField::Param: return "param";
    case StateField::ExpAvg: return "exp_avg";
    case StateField::ExpAvgSq: return "exp_avg_sq";
  }
  return "?";
}

}  // namespace parascope
