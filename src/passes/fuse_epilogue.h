// Producer-consumer fusion: bias adds, activations and residual adds that follow a Conv, Gemm
// or MatMul become its epilogue (an aicc.Fused node with the op as its head).
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool fuseEpilogue(Model& m);

} // namespace aicc
