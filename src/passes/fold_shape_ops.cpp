#include "passes/fold_shape_ops.h"

namespace aicc {

// TEMPORARY placeholder: being implemented.
bool foldShapeOps(Model&) { return false; }

} // namespace aicc
