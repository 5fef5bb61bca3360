// Gradient checking against central finite differences in float64, shared by the gradient-rule
// tests. checkOpGradient builds a one-node model, loss = sum_i ReduceSum(output_i * R_i) with fixed
// random R_i (so every output element matters), differentiates it with aicc's autodiff, and
// compares each requested input's gradient with (L(x + h e_k) - L(x - h e_k)) / 2h computed with
// the reference interpreter.
#pragma once

#include "ir/graph.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace aicc::test {

struct GradCheckInput {
  Tensor value;       // f64 for differentiated inputs; any dtype for the others
  bool wrt = true;    // differentiate with respect to this input (must be f64)
  bool omitted = false; // an omitted optional input (value ignored)
};

struct GradCheckResult {
  double maxRelError = 0; // max over inputs of |analytic - numeric|_inf / max(1e-3, |numeric|_inf)
  std::string worst;      // which input and element
};

// numOutputs: how many outputs the node has; lossOutputs: which of them feed the loss (default all).
GradCheckResult checkOpGradient(const std::string& op, const std::vector<GradCheckInput>& inputs,
                                const std::map<std::string, Attribute>& attrs = {}, int numOutputs = 1,
                                std::vector<int> lossOutputs = {}, const std::string& domain = "",
                                double h = 1e-6);

// The same for a whole model: `factory` builds the (forward) model, which has a scalar f64 output
// named `loss`; gradients w.r.t. `wrt` (graph inputs or constants, f64) are checked at the given
// graph-input values, on at most maxElemsPerTensor evenly spaced elements of each.
GradCheckResult checkModelGradient(const std::function<Model()>& factory, const std::string& loss,
                                   const std::vector<std::string>& wrt, const std::vector<Tensor>& inputs,
                                   double h = 1e-6, int64_t maxElemsPerTensor = 64);

// A tensor of the given shape with reproducible values uniform in [lo, hi].
Tensor randomTensor(Dims shape, uint32_t seed, double lo = -1.0, double hi = 1.0, DType dt = DType::F64);

} // namespace aicc::test
