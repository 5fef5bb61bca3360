// Common-subexpression elimination: nodes with the same op, domain, inputs and attributes
// (tensors compared by value, subgraphs structurally) compute the same values; the later one is
// removed and its uses redirected. Nondeterministic ops are never merged. Identical constants
// are merged too.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool eliminateCommonSubexpressions(Model& m);

} // namespace aicc
