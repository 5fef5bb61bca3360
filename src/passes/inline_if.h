// inline-if: an If whose condition is a constant is replaced by the nodes of the branch it takes.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool inlineConstantIfs(Model& m);

} // namespace aicc
