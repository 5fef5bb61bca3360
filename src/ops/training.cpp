// ai.onnx.preview.training optimizer ops: Adagrad, Momentum, Adam. Each node updates n tensors at
// once: inputs are R (learning rate), T (update count), then the n tensors to optimize, their n
// gradients and their n (Adagrad, Momentum) or 2n (Adam) state tensors; outputs are the new
// tensors followed by the new states, in the same order.
#include "ops/helpers.h"

#include <cmath>

namespace aicc {
namespace {

struct OptimizerArgs {
  double r = 0;
  int64_t t = 0;
  size_t n = 0; // tensors optimized by the node
};

// Checks the layout (R, T, X[n], G[n], S[states * n]) and reads R and T.
OptimizerArgs optimizerArgs(const KernelCtx& c, size_t states) {
  const size_t groups = 2 + states;
  AICC_CHECK(c.numInputs() > 2 && (c.numInputs() - 2) % groups == 0,
             "expects R, T and {} groups of tensors, got {} inputs", groups, c.numInputs());
  OptimizerArgs a;
  a.n = (c.numInputs() - 2) / groups;
  AICC_CHECK(c.numOutputs() == (1 + states) * a.n, "expects {} outputs for {} tensors, got {}",
             (1 + states) * a.n, a.n, c.numOutputs());
  requireDType(c, 0, {DType::F32, DType::F64});
  requireDType(c, 1, {DType::I64});
  AICC_CHECK(c.in(0).numel() == 1 && c.in(1).numel() == 1,
             "R and T must be scalars, got shapes {} and {}", formatDims(c.in(0).shape()),
             formatDims(c.in(1).shape()));
  a.r = c.in(0).getF64(0);
  a.t = c.in(1).getI64(0);
  for (size_t i = 2; i < c.numInputs(); ++i) {
    requireDType(c, i, {DType::F32, DType::F64});
    const Tensor& ref = c.in(2 + (i - 2) % a.n); // the X this tensor belongs to
    AICC_CHECK(c.in(i).shape() == ref.shape() && c.in(i).dtype() == ref.dtype(),
               "input {} is {} {}, but the tensor it belongs to is {} {}", i,
               dtypeName(c.in(i).dtype()), formatDims(c.in(i).shape()), dtypeName(ref.dtype()),
               formatDims(ref.shape()));
  }
  return a;
}

// Runs update(x, g, states, newX, newStates) elementwise for each of the n tensors.
template <typename F> std::vector<RValue> runOptimizer(KernelCtx& c, size_t states, F update) {
  const OptimizerArgs a = optimizerArgs(c, states);
  std::vector<RValue> out((1 + states) * a.n);
  for (size_t k = 0; k < a.n; ++k) {
    const Tensor &x = c.in(2 + k), &g = c.in(2 + a.n + k);
    std::vector<const Tensor*> s(states);
    std::vector<Tensor> ns(states);
    for (size_t j = 0; j < states; ++j) {
      s[j] = &c.in(2 + (2 + j) * a.n + k);
      ns[j] = Tensor(x.dtype(), x.shape());
    }
    Tensor nx(x.dtype(), x.shape());
    std::vector<double> sv(states), nsv(states);
    for (int64_t i = 0; i < x.numel(); ++i) {
      for (size_t j = 0; j < states; ++j) sv[j] = s[j]->getF64(i);
      double xn = update(a, x.getF64(i), g.getF64(i), sv.data(), nsv.data());
      nx.setF64(i, xn);
      for (size_t j = 0; j < states; ++j) ns[j].setF64(i, nsv[j]);
    }
    out[k] = RValue::of(nx);
    for (size_t j = 0; j < states; ++j) out[(1 + j) * a.n + k] = RValue::of(ns[j]);
  }
  return out;
}

std::vector<RValue> adagradKernel(KernelCtx& c) {
  const double decay = c.node.attrFloat("decay_factor"), eps = c.node.attrFloat("epsilon");
  const double norm = c.node.attrFloat("norm_coefficient");
  return runOptimizer(c, 1,
                      [&](const OptimizerArgs& a, double x, double g, const double* s, double* ns) {
                        const double r = a.r / (1 + static_cast<double>(a.t) * decay);
                        const double gr = norm * x + g;
                        ns[0] = s[0] + gr * gr; // accumulated squared gradient
                        return x - r * gr / (std::sqrt(ns[0]) + eps);
                      });
}

std::vector<RValue> momentumKernel(KernelCtx& c) {
  const double alpha = c.node.attrFloat("alpha"), beta = c.node.attrFloat("beta");
  const double norm = c.node.attrFloat("norm_coefficient");
  const std::string mode = c.node.attrString("mode");
  AICC_CHECK(mode == "standard" || mode == "nesterov",
             "mode must be 'standard' or 'nesterov', got '{}'", mode);
  const bool nesterov = mode == "nesterov";
  return runOptimizer(
      c, 1, [&](const OptimizerArgs& a, double x, double g, const double* s, double* ns) {
        const double gr = norm * x + g;
        const double b = a.t > 0 ? beta : 1.0; // the first update takes the whole gradient
        ns[0] = alpha * s[0] + b * gr;         // the new momentum
        return nesterov ? x - a.r * (gr + alpha * ns[0]) : x - a.r * ns[0];
      });
}

std::vector<RValue> adamKernel(KernelCtx& c) {
  const double alpha = c.node.attrFloat("alpha"), beta = c.node.attrFloat("beta");
  const double eps = c.node.attrFloat("epsilon"), norm = c.node.attrFloat("norm_coefficient");
  const double post = c.node.attrFloat("norm_coefficient_post");
  return runOptimizer(c, 2,
                      [&](const OptimizerArgs& a, double x, double g, const double* s, double* ns) {
                        const double gr = norm * x + g;
                        ns[0] = alpha * s[0] + (1 - alpha) * gr;    // first moment
                        ns[1] = beta * s[1] + (1 - beta) * gr * gr; // second moment
                        double r = a.r;
                        if (a.t > 0) {
                          const double t = static_cast<double>(a.t);
                          r = a.r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t));
                        }
                        const double xn = x - r * ns[0] / (std::sqrt(ns[1]) + eps);
                        return (1 - post) * xn;
                      });
}

// Output j is X_new[j] (type of input 2 + j) for j < n, else a new state (type of the old
// state, input 2 + n + j).
void inferOptimizer(InferCtx& c, size_t states) {
  const size_t groups = 2 + states;
  AICC_CHECK(c.numInputs() > 2 && (c.numInputs() - 2) % groups == 0,
             "expects R, T and {} groups of tensors, got {} inputs", groups, c.numInputs());
  const size_t n = (c.numInputs() - 2) / groups;
  AICC_CHECK(c.node.outputs.size() == (1 + states) * n, "expects {} outputs for {} tensors, got {}",
             (1 + states) * n, n, c.node.outputs.size());
  for (size_t j = 0; j < c.node.outputs.size(); ++j)
    c.setOutput(j, c.inType(j < n ? 2 + j : 2 + n + j));
}

} // namespace

void registerTrainingOps(OpRegistry& r) {
  const int kMany = 1 << 30;
  r.op("Adagrad", kTrainingDomain)
      .since(1)
      .inputs(3, kMany)
      .outputs(1, kMany)
      .attrFloat("decay_factor", 0.0f)
      .attrFloat("epsilon", 1e-6f)
      .attrFloat("norm_coefficient", 0.0f)
      .infer([](InferCtx& c) { inferOptimizer(c, 1); })
      .kernel(adagradKernel);
  r.op("Momentum", kTrainingDomain)
      .since(1)
      .inputs(3, kMany)
      .outputs(1, kMany)
      .attr("alpha", Attribute::Kind::Float, true)
      .attr("beta", Attribute::Kind::Float, true)
      .attr("mode", Attribute::Kind::String, true)
      .attr("norm_coefficient", Attribute::Kind::Float, true)
      .infer([](InferCtx& c) { inferOptimizer(c, 1); })
      .kernel(momentumKernel);
  r.op("Adam", kTrainingDomain)
      .since(1)
      .inputs(3, kMany)
      .outputs(1, kMany)
      .attrFloat("alpha", 0.9f)
      .attrFloat("beta", 0.999f)
      .attrFloat("epsilon", 1e-6f)
      .attrFloat("norm_coefficient", 0.0f)
      .attrFloat("norm_coefficient_post", 0.0f)
      .infer([](InferCtx& c) { inferOptimizer(c, 2); })
      .kernel(adamKernel);
}

} // namespace aicc
