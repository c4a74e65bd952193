// MLP classifier: hidden layers Linear + GELU, then a Linear classifier with softmax
// cross-entropy. Inputs (B, inputSize) f32, targets (B) int32 class ids. Parameter names:
// fc.<i>.weight (out x in), fc.<i>.bias, classifier.weight, classifier.bias.
#pragma once

#include <vector>

#include "core/model/model.h"

namespace parascope {

struct MlpConfig {
  int inputSize = 784;
  std::vector<int> hiddenSizes = {256};
  int numClasses = 10;
};

void buildMlp(Model& model, const MlpConfig& c);

}  // namespace parascope
