// Constant folding: a node whose inputs are all constants (and that is deterministic, with no
// subgraph) is evaluated by the reference interpreter and replaced by constants, unless a result
// has more than `limit` elements.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool foldConstants(Model& m, int64_t limit);

} // namespace aicc
