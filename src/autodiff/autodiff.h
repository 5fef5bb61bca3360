// Reverse-mode automatic differentiation on the graph IR.
//
// Given a scalar loss value and the values to differentiate (graph inputs and/or constants),
// appends the backward graph to the main graph and adds one output per requested value, named
// `grad_<name>`. Gradients accumulate (Sum) where a value fans out; broadcast operands get their
// gradients summed back to their shape (each rule's job, via GradCtx::sumToShape); integer and
// bool values carry no gradient; shape-only paths (Shape, Size, ...) stop gradients.
// Ops without a gradient rule on the path from a requested value to the loss are an error naming
// the node and op. Nodes with subgraphs (If, Loop, Scan) on that path are not differentiated yet
// (error).
#pragma once

#include "autodiff/remat.h"
#include "ir/graph.h"

#include <string>
#include <vector>

namespace aicc {

struct AutodiffOptions {
  std::string loss;               // name of the scalar loss value
  std::vector<std::string> wrt;   // values to differentiate; {"all-weights"} = every float constant
  bool keepForwardOutputs = false; // keep the model's original outputs (after the loss)
  // Recompute cheap forward values (elementwise/injective ops) in the backward part instead of
  // keeping them alive from the forward pass (autodiff/remat.h); AutodiffResult::remat reports it.
  bool rematerialize = false;
};

struct AutodiffResult {
  std::vector<std::string> gradNames; // in the order of the resolved wrt list
  std::vector<std::string> wrt;       // the resolved wrt list
  int64_t backwardNodes = 0;
  RematStats remat; // filled when AutodiffOptions::rematerialize is set
};

// Rewrites m: outputs become [loss, grad_<w>...] (plus the original outputs when asked).
AutodiffResult differentiate(Model& m, const AutodiffOptions& opts);

} // namespace aicc
