// Recognizes the spelled-out forms exporters produce and replaces each by one op: LayerNorm
// (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add), GELU (Erf or Tanh forms), HardSwish,
// HardSigmoid, SiLU (x*Sigmoid(x)), and multi-head attention (MatMul/Softmax/MatMul with its
// reshapes and transposes).
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool recognizePatterns(Model& m);

} // namespace aicc
