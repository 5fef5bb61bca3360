// Producer-consumer fusion: bias adds, activations and residual adds that follow a Conv, Gemm
// or MatMul become its epilogue (an aicc.Fused node with the op as its head).
//
// The head is a Conv, ConvTranspose, Gemm or MatMul with one output of known rank. Its result is
// followed through a chain of consumers, each the single user of the previous value (never a
// graph output, never used from a subgraph), whose result has the head's dtype and the head's
// provable shape:
//   - activations: Relu, LeakyRelu, PRelu (constant per-channel slope), Clip (constant or absent
//     bounds), Sigmoid, HardSigmoid, HardSwish, Tanh, Gelu, Swish, Elu, Selu, Celu, Softplus,
//     Softsign, Mish, ThresholdedRelu, and SiLU spelled Mul(x, Sigmoid(x));
//   - bias / affine: Add, Sub, Mul with a constant that broadcasts per channel (Conv and
//     ConvTranspose: axis 1) or per column (Gemm, MatMul: last axis), or is a scalar; Div by such
//     a constant;
//   - residual: Add with another (non-constant) tensor of exactly the same provable shape and
//   dtype.
// The head and its chain become one aicc.Fused node, kind = "epilogue", body = head + chain.
// Constants: small ones (<= 16 elements: Clip bounds, scalars) are copied into the body as body
// constants; larger ones (weights, per-channel biases) stay in the enclosing graph and are passed
// as Fused inputs, like every other value read from outside (see passes/fuse_group.h).
// Runs in the main graph and in control-flow subgraphs.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool fuseEpilogue(Model& m);

} // namespace aicc
