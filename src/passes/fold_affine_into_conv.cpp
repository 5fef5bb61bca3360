#include "passes/fold_affine_into_conv.h"

namespace aicc {

// TEMPORARY placeholder: being implemented.
bool foldAffineIntoConv(Model&) { return false; }

} // namespace aicc
