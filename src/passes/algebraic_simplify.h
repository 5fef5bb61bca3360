// Algebraic simplification: pattern sets run to a fixed point (identity ops, x*1, x+0, x/1,
// inverse transpose pairs, reshape chains, squeeze/unsqueeze pairs, exact cast chains,
// transpose/reshape sinking through elementwise ops).
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool simplifyAlgebra(Model& m);

} // namespace aicc
