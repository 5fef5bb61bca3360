// Dead-code elimination: removes nodes none of whose outputs reach a graph output (recursively
// into subgraphs), and constants nothing uses.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool eliminateDeadCode(Model& m);

} // namespace aicc
