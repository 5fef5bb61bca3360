// Resize (and Upsample, upgraded to Resize), GridSample, Col2Im.
#include "ops/shape_ops.h"

namespace aicc {

void registerShapeResizeOps(OpRegistry& r) { (void)r; }

} // namespace aicc
