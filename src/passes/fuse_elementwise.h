// Fuses chains of elementwise/injective ops into single aicc.Fused nodes that carry the chain
// as a subgraph (reduction-aware: a chain may end in one reduction such as Softmax).
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool fuseElementwise(Model& m);

} // namespace aicc
