#include "ops/all_ops.h"

namespace aicc {

void registerAllOps(OpRegistry& r) {
  registerElementwiseOps(r);
  registerNnOps(r);
  registerLinalgOps(r);
  registerReductionOps(r);
  registerShapeOps(r);
  registerControlFlowOps(r);
  registerRnnOps(r);
  registerQuantOps(r);
  registerAttentionOps(r);
  registerLossOps(r);
  registerSignalOps(r);
  registerMiscOps(r);
  registerTextOps(r);
  registerMlOps(r);
  registerTrainingOps(r);
  registerAutodiffOps(r); // Gradient: expanded at import with the autodiff pass
  registerFusedOps(r);
  registerLayoutOps(r);
  // Gradient rules, attached to the ops above.
  registerElementwiseGrads(r);
  registerNnGrads(r);
}

} // namespace aicc
