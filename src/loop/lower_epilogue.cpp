// aicc.Fused kind="epilogue" (a Conv/Gemm/MatMul head, then an elementwise chain) as one Func:
// the head's nest or micro-kernel call writes the output buffer, then one elementwise loop nest
// applies the chain in place (out = chain(out, other operands)). Standalone activations that
// compute.h does not define (HardSwish, Swish, Gelu, Softplus, Mish, ...) lower as chains
// without a head.
#include "kernels/ukernel.h"
#include "loop/compute.h"
#include "loop/lower_ops.h"
#include "ops/op_def.h"

#include <cmath>
#include <functional>
#include <set>

namespace aicc::loop::detail {

bool isChainActivation(const std::string& op) {
  return op == "HardSwish" || op == "Swish" || op == "Gelu" || op == "Softplus" || op == "Mish" ||
         op == "Selu" || op == "Celu" || op == "ThresholdedRelu";
}

ExprPtr chainExpr(const Node& x, const std::vector<ExprPtr>& in, DType out, std::string* why) {
  if (!x.domain.empty()) {
    if (why) *why = "op " + x.domain + "." + x.op;
    return nullptr;
  }
  if (!isChainActivation(x.op)) return computeElementwise(x, in, out, why);
  if (in.empty() || !in[0] || !isComputeFloat(in[0]->type)) {
    if (why) *why = x.op + " needs a float input";
    return nullptr;
  }
  ExprPtr v = in[0];
  DType t = v->type;
  auto c = [&](double d) { return constant(t, d); };
  auto softplus = [&](ExprPtr a) { return call("log1p", {call("exp", {a})}); };
  if (x.op == "HardSwish") return mul(v, max(c(0), min(c(1), add(div(v, c(6)), c(0.5)))));
  if (x.op == "Swish") return mul(v, call("sigmoid", {mul(c(x.attrFloat("alpha")), v)}));
  if (x.op == "Softplus") return softplus(v);
  if (x.op == "Mish") return mul(v, call("tanh", {softplus(v)}));
  if (x.op == "ThresholdedRelu") return select(cmp(Op::Gt, v, c(x.attrFloat("alpha"))), v, c(0));
  if (x.op == "Selu" || x.op == "Celu") {
    double alpha = x.attrFloat("alpha");
    if (x.op == "Selu") {
      double gamma = x.attrFloat("gamma");
      return select(cmp(Op::Gt, v, c(0)), mul(c(gamma), v),
                    mul(c(gamma * alpha), sub(call("exp", {v}), c(1))));
    }
    return add(max(c(0), v), min(c(0), mul(c(alpha), sub(call("exp", {div(v, c(alpha))}), c(1)))));
  }
  // Gelu
  if (x.attrString("approximate") == "tanh") {
    ExprPtr inner = mul(c(std::sqrt(2.0 / M_PI)), add(v, mul(c(0.044715), mul(v, mul(v, v)))));
    return mul(mul(c(0.5), v), add(c(1), call("tanh", {inner})));
  }
  return mul(mul(c(0.5), v), add(c(1), call("erf", {div(v, c(std::sqrt(2.0)))})));
}

namespace {

// One loop nest over `dims` storing the chain's value of `result` into `dst`; `seed` (if any) is
// read back from `seedParam` at the same element. The loops are those of flatSpace: merged where
// the operands allow, parallel and vectorized over the merged extents.
// `dims` are the sizes of value `runOf` (symbolic sizes: its bounds, the loops run its run's).
Block chainNest(FuncBuilder& b, const std::vector<const Node*>& chain, const Bind& bind,
                const Value* result, const std::string& dst, const Dims& dims, const Value* runOf,
                DType t, const Value* seed, const std::string& seedParam, const LowerOptions& o,
                Schedule& sched) {
  std::map<const Value*, const Node*> producer;
  for (const Node* x : chain)
    for (const Value* v : x->outputs)
      if (v) producer[v] = x;
  auto outerOf = [&](const Value* v) {
    auto bi = bind.find(v);
    return bi != bind.end() ? bi->second : v;
  };
  auto isScalar = [](const Value* v) { return v->constant && v->constant->numel() == 1; };
  // The operands read from memory (the seed has the output's shape).
  std::vector<const Value*> leaves;
  std::set<const Value*> seen;
  std::function<void(const Value*)> collect = [&](const Value* v) {
    if (!v || v == seed || !seen.insert(v).second) return;
    if (auto p = producer.find(v); p != producer.end()) {
      for (const Value* i : p->second->inputs) collect(i);
      return;
    }
    if (!isScalar(outerOf(v))) leaves.push_back(v);
  };
  collect(result);
  const std::vector<ExprPtr> runOut = runDims(o, runOf, dims);
  std::vector<Dims> shapes;
  std::vector<std::vector<ExprPtr>> runs;
  for (const Value* v : leaves) {
    Dims vd = staticDims(outerOf(v), "operand");
    if (vd.size() > dims.size()) no("an operand of higher rank than the output");
    for (size_t d = 0; d < vd.size(); ++d)
      if (vd[d] != 1 && vd[d] != dims[dims.size() - vd.size() + d])
        no("an operand that does not broadcast");
    runs.push_back(runDims(o, outerOf(v), vd));
    if (!sameRunDims(vd, runs.back(), runOut))
      no(fmt::format("operand '{}' has symbolic dims other than the output's", v->name));
    shapes.push_back(vd);
  }
  const int64_t lanes = vectorWidthFor(o, t, 1 << 20);
  FlatSpace fs = flatSpace(dims, shapes, lanes, runOut);
  const Dims ext = fs.extents();
  std::vector<std::string> vs;
  for (size_t d = 0; d < ext.size(); ++d) vs.push_back(b.fresh("e" + std::to_string(d)));
  std::vector<ExprPtr> vv = vars(vs);
  ExprPtr flat = runIndex(vv, fs.runStrideOf(dims, runOut));
  std::map<const Value*, ExprPtr> memo;
  if (seed) memo[seed] = load(seedParam, flat, t);
  for (size_t k = 0; k < leaves.size(); ++k) {
    const Value* outer = outerOf(leaves[k]);
    memo[leaves[k]] =
        load(b.input(outer), runIndex(vv, fs.runStrideOf(shapes[k], runs[k])), outer->type.dtype);
  }
  std::function<ExprPtr(const Value*)> expr = [&](const Value* v) -> ExprPtr {
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    ExprPtr e;
    if (auto p = producer.find(v); p != producer.end()) {
      std::vector<ExprPtr> args;
      for (const Value* i : p->second->inputs) args.push_back(i ? expr(i) : nullptr);
      std::string why;
      e = chainExpr(*p->second, args, v->type.dtype, &why);
      if (!e) no(p->second->describe() + ": " + why);
    } else {
      const Tensor& c = *outerOf(v)->constant; // a scalar (collect() loaded every other leaf)
      e = isFloat(c.dtype()) ? floatImm(c.getF64(0), c.dtype()) : intImm(c.getI64(0), c.dtype());
    }
    memo[v] = e;
    return e;
  };
  ExprPtr value = expr(result);
  if (value->type != t) no("the chain computes a different element type");
  int64_t w = ext.empty() ? 1 : vectorWidthFor(o, t, ext.back());
  std::vector<std::string> ops;
  for (const Node* x : chain) ops.push_back(x->op);
  sched["chain_ops"] = ops;
  sched["vector_width"] = w;
  sched["chain_loops"] = ext;
  if (ext.empty()) return {Stmt::store(dst, intImm(0), value)};
  return runNest(vs, fs.runExtents(), {Stmt::store(dst, flat, value)}, fs.parallel, w);
}

// Relu, or Clip whose bounds are absent or constant scalars, as a clamp; HardSwish, Sigmoid and
// Swish (alpha 1) as the kernel's activation; anything else: none.
FusedClamp clampOf(const Node& x, const Bind& bind) {
  FusedClamp c;
  if (!x.domain.empty() || x.outputs.size() != 1 || !x.outputs[0] ||
      x.outputs[0]->type.dtype != DType::F32)
    return c;
  if (x.op == "Relu") {
    c.hasLo = true;
    return c;
  }
  if (x.op == "HardSwish") {
    c.act = kernels::kActHardSwish;
    return c;
  }
  if (x.op == "Sigmoid") {
    c.act = kernels::kActSigmoid;
    return c;
  }
  if (x.op == "Swish") {
    if (x.attrFloat("alpha") == 1.0) c.act = kernels::kActSwish;
    return c;
  }
  if (x.op == "Gelu") {
    if (x.attrString("approximate") == "none") c.act = kernels::kActGelu;
    return c;
  }
  if (x.op != "Clip") return c;
  auto bound = [&](size_t i, bool& has, double& v) {
    if (!x.hasInput(i)) return true;
    const Value* in = x.inputs[i];
    if (auto it = bind.find(in); it != bind.end()) in = it->second;
    if (!in->constant || in->constant->numel() != 1) return false;
    has = true, v = in->constant->getF64(0);
    return !std::isnan(v);
  };
  FusedClamp r;
  if (!bound(1, r.hasLo, r.lo) || !bound(2, r.hasHi, r.hi)) return c;
  return r;
}

// When `chain` is Add(head, X) or Add(X, head), optionally followed by one more op on the sum,
// ending in `result`: X (its outer value, f32 with a static shape). Null otherwise.
const Value* addOperandOf(const std::vector<const Node*>& chain, const Value* head,
                          const Value* result, const Bind& bind, Dims* shape) {
  if (chain.empty() || chain.size() > 2) return nullptr;
  const Node& add = *chain[0];
  if (!add.domain.empty() || add.op != "Add" || add.inputs.size() != 2 || !add.outputs[0])
    return nullptr;
  if (chain.size() == 2 && (chain[1]->inputs.empty() || chain[1]->inputs[0] != add.outputs[0] ||
                            chain[1]->outputs[0] != result))
    return nullptr;
  if (chain.size() == 1 && add.outputs[0] != result) return nullptr;
  const Value* x = add.inputs[0] == head   ? add.inputs[1]
                   : add.inputs[1] == head ? add.inputs[0]
                                           : nullptr;
  if (!x || x == head) return nullptr;
  if (auto it = bind.find(x); it != bind.end()) x = it->second;
  if (x->type.dtype != DType::F32 || !x->type.shape) return nullptr;
  auto d = toDims(*x->type.shape);
  if (!d) return nullptr;
  *shape = *d;
  return x;
}

// The residual of Add(head, R): R not a constant, of the output's shape (no broadcasting).
const Value* residualOf(const std::vector<const Node*>& chain, const Value* head,
                        const Value* result, const Bind& bind, const Dims& dims) {
  Dims d;
  const Value* r = addOperandOf(chain, head, result, bind, &d);
  return r && !r->constant && d == dims ? r : nullptr;
}

// The bias of a MatMul's Add(head, B): B a constant with one value per output column ([N],
// [1, N], ...).
const Value* biasRowOf(const std::vector<const Node*>& chain, const Node& head, const Value* result,
                       const Bind& bind, const Dims& dims) {
  if (head.op != "MatMul" || !head.domain.empty() || dims.empty()) return nullptr;
  Dims d;
  const Value* b = addOperandOf(chain, head.outputs.at(0), result, bind, &d);
  if (!b || !b->constant || d.empty() || d.back() != dims.back() || numel(d) != dims.back())
    return nullptr;
  return b;
}

// aicc.Fused kind="reduction": the elementwise prologue into a temp buffer, then the reduction.
std::optional<LoweredNode> lowerFusedReduction(const Node& n, const std::string& name,
                                               const LowerOptions& o) {
  const Graph& g = *std::get<GraphPtr>(n.attr("body")->v);
  if (g.nodes.empty() || g.outputs.size() != 1 || n.outputs.size() != 1) no("an odd body");
  Bind bind;
  for (size_t i = 0; i < g.inputs.size() && i < n.inputs.size(); ++i)
    if (n.inputs[i]) bind[g.inputs[i]] = n.inputs[i];
  const Node* root = g.nodes.back().get();
  if (root->outputs.empty() || root->outputs[0] != g.outputs[0]) no("the root is not last");
  std::vector<const Node*> chain;
  for (size_t k = 0; k + 1 < g.nodes.size(); ++k) chain.push_back(g.nodes[k].get());
  const Value* v0 = root->inputs.at(0);
  FuncBuilder b(n, name, "reduction");
  b.setBind(bind);
  b.output(0);
  Dims dims = staticDims(v0, "prologue result");
  DType t = v0->type.dtype;
  std::string tmp = b.temp("prologue", t, dims);
  Schedule ignored;
  b.prologue = chainNest(b, chain, bind, v0, tmp, dims, v0, t, nullptr, "", o, ignored);
  b.bindInput(v0, tmp);
  auto r = lowerReductionInto(*root, b, o);
  if (!r) no("reduction root " + root->op + " is not lowered");
  // Symbolic sizes: the root wrote its body result at that value's run dims; the node's result
  // is the same value outside (the prologue's temp, at the bounds, holds the run's elements at
  // the run's strides, as the chain wrote and the root read them).
  const Dims od = staticDims(n.outputs[0], "output");
  if (!sameRunDims(od, runDims(o, n.outputs[0], od), runDims(o, g.outputs[0], od)))
    no("the root's result and the output differ in their symbolic dims");
  r->func.schedule["prologue_ops"] = ignored["chain_ops"];
  return r;
}

} // namespace

std::optional<LoweredNode> lowerEpilogueFamily(const Node& n, const std::string& name,
                                               const LowerOptions& o,
                                               const std::string& candidate) {
  bool fused = n.domain == kAiccDomain && n.op == "Fused";
  if (fused && n.attrString("kind") == "reduction") return lowerFusedReduction(n, name, o);
  if (fused && n.attrString("kind") != "epilogue") return std::nullopt;
  if (!fused && !(n.domain.empty() && isChainActivation(n.op))) return std::nullopt;

  FuncBuilder b(n, name, fused ? "epilogue" : "elementwise");
  if (n.outputs.size() != 1) no("an epilogue with several outputs");
  std::string out = b.output(0);
  Dims dims = staticDims(n.outputs[0], "output");
  DType t = n.outputs[0]->type.dtype;

  Bind bind;
  std::vector<const Node*> chain;
  const Node* head = nullptr;
  const Value* result = n.outputs[0];
  Schedule sched;
  Block body;
  if (fused) {
    const Graph& g = *std::get<GraphPtr>(n.attr("body")->v);
    for (size_t i = 0; i < g.inputs.size() && i < n.inputs.size(); ++i)
      if (n.inputs[i]) bind[g.inputs[i]] = n.inputs[i];
    if (g.nodes.empty() || g.outputs.size() != 1) no("an empty epilogue body");
    head = g.nodes[0].get();
    result = g.outputs[0];
    if (!head->outputs.at(0) || head->outputs[0]->type.dtype != t)
      no("the head's element type differs from the output's");
    for (size_t k = 1; k < g.nodes.size(); ++k) chain.push_back(g.nodes[k].get());
    // A chain that is one clamp of the head's result can run inside the micro-kernel.
    FusedClamp clamp;
    if (chain.size() == 1 && chain[0]->inputs.size() >= 1 &&
        chain[0]->inputs[0] == head->outputs[0] && chain[0]->outputs[0] == g.outputs[0])
      clamp = clampOf(*chain[0], bind);
    // MatMul + Add(bias row) [then a clamp or activation]: the packed GEMM adds the bias.
    if (const Value* bias = biasRowOf(chain, *head, g.outputs[0], bind, dims)) {
      FusedClamp c;
      if (chain.size() == 2) c = clampOf(*chain[1], bind);
      if (chain.size() == 1 || c.hasLo || c.hasHi || c.act) {
        clamp = c;
        clamp.bias = bias;
      }
    }
    // MatMul + Add(bias row) + Add(residual) (a transformer's projection and its skip): both in
    // the packed GEMM.
    if (chain.size() == 2 && chain[0]->outputs.size() == 1 && chain[0]->outputs[0]) {
      const Value* sum = chain[0]->outputs[0];
      const Value* bias = biasRowOf({chain[0]}, *head, sum, bind, dims);
      const Value* r = bias ? residualOf({chain[1]}, sum, g.outputs[0], bind, dims) : nullptr;
      if (r) {
        clamp = FusedClamp{};
        clamp.bias = bias;
        clamp.residual = b.input(r);
      }
    }
    // Add(head, residual) [then a clamp]: the GEMM kernels add the residual in the register tile
    // (symbolic sizes: the output's).
    const Value* r = residualOf(chain, head->outputs[0], g.outputs[0], bind, dims);
    if (r && !sameRunDims(dims, runDims(o, r, dims), runDims(o, n.outputs[0], dims))) r = nullptr;
    if (r) {
      if (chain.size() == 2) clamp = clampOf(*chain[1], bind);
      if (chain.size() == 1 || clamp.hasLo || clamp.hasHi || clamp.act) clamp.residual = b.input(r);
    }
    if (head->op == "Conv" || head->op == "ConvTranspose" || head->op == "ConvNchwc")
      body = convBody(b, *head, bind, out, o, candidate, sched, &clamp);
    else if (head->op == "Gemm" || head->op == "MatMul")
      body = matMulBody(b, *head, bind, out, o, candidate, sched, &clamp);
    else
      no("epilogue head " + head->op + " is not lowered");
    if (clamp.consumed) chain.clear();
    // The head's result and the node's have one shape (symbolic sizes: the same run dims).
    if (!sameRunDims(dims, runDims(o, n.outputs[0], dims), runDims(o, head->outputs[0], dims)))
      no("the head's result and the output differ in their symbolic dims");
    sched["head"] = head->op;
  } else {
    chain.push_back(&n);
  }

  // The chain: one loop per output dim, the head's result read back from the output buffer.
  if (!chain.empty())
    for (auto& s : chainNest(b, chain, bind, result, out, dims, n.outputs[0], t,
                             head ? head->outputs[0] : nullptr, out, o, sched))
      body.push_back(std::move(s));
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace aicc::loop::detail
