// Folds shape arithmetic whose result is known statically (Shape, Size, and Gather/Slice/Concat/
// Unsqueeze/Squeeze/Cast/arithmetic over such values, as computed by shape inference's data
// propagation) into constants.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool foldShapeOps(Model& m);

} // namespace aicc
