// Folds per-channel affine transforms into the preceding Conv/Gemm/ConvTranspose:
// BatchNormalization (inference mode) and Mul/Add by constants broadcast along the channel axis
// are folded into the weights and bias.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool foldAffineIntoConv(Model& m);

} // namespace aicc
