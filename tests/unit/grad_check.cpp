#include "grad_check.h"

#include "autodiff/autodiff.h"
#include "interp/interpreter.h"
#include "ops/op_def.h"
#include "passes/shape_inference.h"

#include <cmath>
#include <random>

namespace aicc::test {

Tensor randomTensor(Dims shape, uint32_t seed, double lo, double hi, DType dt) {
  Tensor t(dt, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.setF64(i, u(rng));
  return t;
}

GradCheckResult checkModelGradient(const std::function<Model()>& factory, const std::string& loss,
                                   const std::vector<std::string>& wrt, const std::vector<Tensor>& inputs, double h,
                                   int64_t maxElemsPerTensor) {
  Model fwd = factory();
  Model bwd = factory();
  AutodiffOptions ao;
  ao.loss = loss;
  ao.wrt = wrt;
  differentiate(bwd, ao);
  std::vector<RValue> feed;
  for (const Tensor& t : inputs) feed.push_back(RValue::of(t.clone()));
  auto grads = interpret(*bwd.graph, feed);
  size_t lossIndex = 0;
  for (size_t i = 0; i < fwd.graph->outputs.size(); ++i)
    if (fwd.graph->outputs[i]->name == loss) lossIndex = i;
  auto lossOf = [&](const std::vector<RValue>& in) { return interpret(*fwd.graph, in)[lossIndex].tensor.getF64(0); };

  GradCheckResult res;
  for (size_t k = 0; k < wrt.size(); ++k) {
    const Tensor& analytic = grads[k + 1].tensor;
    Value* v = fwd.graph->lookupLocal(wrt[k]);
    AICC_CHECK(v, "no value '{}'", wrt[k]);
    auto inIt = std::find(fwd.graph->inputs.begin(), fwd.graph->inputs.end(), v);
    size_t inIndex = static_cast<size_t>(inIt - fwd.graph->inputs.begin());
    Tensor base = inIt != fwd.graph->inputs.end() ? feed[inIndex].tensor : *v->constant;
    int64_t n = base.numel(), step = std::max<int64_t>(1, n / maxElemsPerTensor);
    double scale = 1e-3, err = 0;
    std::vector<std::pair<int64_t, double>> numeric;
    for (int64_t e = 0; e < n; e += step) {
      double at[2];
      for (int s = 0; s < 2; ++s) {
        Tensor t = base.clone();
        t.setF64(e, base.getF64(e) + (s ? -h : h));
        std::vector<RValue> in = feed;
        if (inIt != fwd.graph->inputs.end()) in[inIndex] = RValue::of(t);
        else v->constant = t;
        at[s] = lossOf(in);
      }
      if (inIt == fwd.graph->inputs.end()) v->constant = base;
      numeric.push_back({e, (at[0] - at[1]) / (2 * h)});
      scale = std::max(scale, std::fabs(numeric.back().second));
    }
    for (auto [e, num] : numeric) {
      double d = std::fabs(analytic.getF64(e) - num) / scale;
      if (d > err) err = d;
      if (d >= res.maxRelError) {
        res.maxRelError = d;
        res.worst = fmt::format("'{}' element {}: analytic {} numeric {}", wrt[k], e, analytic.getF64(e), num);
      }
    }
  }
  return res;
}

GradCheckResult checkOpGradient(const std::string& op, const std::vector<GradCheckInput>& inputs,
                                const std::map<std::string, Attribute>& attrs, int numOutputs,
                                std::vector<int> lossOutputs, const std::string& domain, double h) {
  if (lossOutputs.empty())
    for (int i = 0; i < numOutputs; ++i) lossOutputs.push_back(i);
  // Builds the forward model: inputs x<i> (wrt ones are graph inputs, others constants).
  auto build = [&](Model& m) {
    m.opsets[""] = 23;
    m.graph = std::make_shared<Graph>();
    Graph& g = *m.graph;
    g.name = "gradcheck";
    std::vector<Value*> ins;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& in = inputs[i];
      if (in.omitted) {
        ins.push_back(nullptr);
        continue;
      }
      std::string name = "x" + std::to_string(i);
      ins.push_back(in.wrt ? g.addInput(name, Type::tensor(in.value.dtype(), staticShape(in.value.shape())))
                           : g.addConstant(name, in.value));
    }
    std::vector<std::string> outNames;
    for (int i = 0; i < numOutputs; ++i) outNames.push_back("y" + std::to_string(i));
    Node* n = g.addNode(op, ins, outNames, domain);
    n->def = OpRegistry::instance().find(domain, op);
    AICC_CHECK(n->def, "op {} not registered", op);
    n->attrs = attrs;
    inferShapes(g);
    std::vector<Value*> terms;
    for (int oi : lossOutputs) {
      Value* y = n->outputs[static_cast<size_t>(oi)];
      auto dims = toDims(*y->type.shape);
      AICC_CHECK(dims, "output {} has no static shape", oi);
      Value* r = g.addConstant("r" + std::to_string(oi), randomTensor(*dims, 1000u + static_cast<uint32_t>(oi), -1, 1, y->type.dtype));
      Node* mul = g.addNode("Mul", {y, r}, {"m" + std::to_string(oi)});
      mul->def = OpRegistry::instance().find("", "Mul");
      Node* red = g.addNode("ReduceSum", {mul->outputs[0]}, {"s" + std::to_string(oi)});
      red->def = OpRegistry::instance().find("", "ReduceSum");
      red->attrs["keepdims"] = Attribute{int64_t{0}};
      terms.push_back(red->outputs[0]);
    }
    Node* sum = g.addNode("Sum", terms, {"loss"});
    sum->def = OpRegistry::instance().find("", "Sum");
    g.outputs = {sum->outputs[0]};
    inferShapes(g);
  };

  std::vector<std::string> wrt;
  std::vector<Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].wrt && !inputs[i].omitted) {
      wrt.push_back("x" + std::to_string(i));
      feed.push_back(inputs[i].value);
    }
  return checkModelGradient([&] {
    Model m;
    build(m);
    return m;
  }, "loss", wrt, feed, h, int64_t{1} << 40);
}

} // namespace aicc::test
