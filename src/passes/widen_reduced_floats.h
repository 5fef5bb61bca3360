// widen-reduced-floats: a node of a compute-heavy op (MatMul, Gemm, Conv, ConvTranspose,
// Attention, the linear-attention ops, normalizations, softmaxes, float reductions,
// DequantizeLinear and the QLinear ops' scales) on f16 or bf16 tensors computes in f32: Casts to
// f32 before its reduced-precision float inputs, its results f32, and a Cast back to each
// result's type after it. The reference kernels compute these
// ops wider than their inputs (f32 or double) and round the results once, so this is the op's
// definition at f32 working precision; the backend's kernels for these ops are f32 (f16/bf16 are
// lowered for element moves and elementwise ops), where before such a node ran on its reference
// kernel. Constant operands' Casts fold in the cleanup after it. Runs in every graph scope.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether some node was widened.
bool widenReducedFloats(Model& m);

} // namespace aicc
