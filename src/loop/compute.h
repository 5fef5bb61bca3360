// Compute definitions of elementwise ops: the scalar loop-IR expression of one output element
// from the expressions of the input elements (after broadcasting). The lowering (loop/lower.h)
// builds loop nests around them. The definitions follow the reference kernels' semantics
// (e.g. Clip is `x < lo ? lo : x` then `> hi ? hi : .`, so NaN passes through).
#pragma once

#include "ir/graph.h"
#include "loop/ir.h"

namespace aicc::loop {

// The ops (ai.onnx domain) with a compute definition here.
const std::vector<std::string>& elementwiseComputeOps();

// Whether n's input `i` contributes element values: false for CastLike's second input (only its
// type), Expand's (the shape, already the output's static shape) and Dropout's ratio and
// training_mode (constants when it lowers); those are neither loaded nor broadcast.
inline bool readsElements(const Node& n, size_t i) {
  return !((n.op == "CastLike" || n.op == "Expand") && i == 1) && !(n.op == "Dropout" && i > 0);
}

// The expression for n's (single) output of type `out`, given its inputs' expressions (nullptr
// for omitted optional inputs); nullptr and *why set when the op or its types are not covered.
ExprPtr computeElementwise(const Node& n, const std::vector<ExprPtr>& in, DType out,
                           std::string* why);

} // namespace aicc::loop
