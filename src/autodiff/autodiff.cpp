#include "autodiff/autodiff.h"

#include "autodiff/grad_ctx.h"
#include "ir/rewrite.h"
#include "passes/dead_code_elimination.h"
#include "passes/shape_inference.h"

#include <set>

namespace aicc {

// ---- GradCtx ----------------------------------------------------------------------------------

GradCtx::GradCtx(Graph& g, Node& fwd, std::vector<Value*> gradOutputs, std::vector<bool> needInput)
    : graph(g), node(fwd), douts_(std::move(gradOutputs)), needs_(std::move(needInput)),
      grads_(node.inputs.size(), nullptr) {}

void GradCtx::setGrad(size_t i, Value* g) {
  AICC_CHECK(needs(i), "{}: gradient rule set a gradient for input {} that is not needed", node.describe(), i);
  grads_[i] = grads_[i] ? emit("Add", {grads_[i], g}) : g;
}

void GradCtx::give(size_t i, Value* g) {
  if (!needs(i)) return;
  const Type& want = in(i)->type;
  if (want.shape && g->type.shape != want.shape) {
    AICC_CHECK(!g->type.shape || g->type.shape->size() == want.shape->size(),
               "gradient of input {} has rank {} but the input has rank {}", i, g->type.shape->size(),
               want.shape->size());
    g->type.shape = want.shape;
  }
  setGrad(i, g);
}

int64_t GradCtx::rankOf(const Value* v) const {
  AICC_CHECK(v->type.shape, "{}: autodiff needs the rank of '{}' ({})", node.describe(), v->name,
             formatType(v->type));
  return static_cast<int64_t>(v->type.shape->size());
}

std::vector<Value*> GradCtx::emitN(const std::string& op, std::vector<Value*> inputs, int numOutputs,
                                   AttrMap attrs, const std::string& domain) {
  std::string base = "grad/" + (node.name.empty() ? node.op : node.name) + "/" + op;
  Node* n = insertNode(graph, nullptr, op, std::move(inputs), numOutputs, base, domain);
  n->attrs = std::move(attrs);
  ShapeValues sv;
  InferCtx ic(*n, sv);
  if (n->def->infer) n->def->infer(ic);
  return n->outputs;
}

Value* GradCtx::constant(Tensor t) { return graph.addConstant(graph.uniqueName("grad_const"), std::move(t)); }

Value* GradCtx::scalar(double v, DType dt) { return constant(Tensor::scalar(dt, v)); }

Value* GradCtx::ints(const std::vector<int64_t>& v) {
  return constant(Tensor::fromI64(v, {static_cast<int64_t>(v.size())}));
}

Value* GradCtx::sumToShape(Value* g, Value* like) {
  const auto& gs = g->type.shape;
  const auto& ls = like->type.shape;
  AICC_CHECK(gs && ls, "{}: autodiff needs known ranks to undo broadcasting ('{}' is {}, '{}' is {})",
             node.describe(), g->name, formatType(g->type), like->name, formatType(like->type));
  size_t r = gs->size(), lr = ls->size();
  AICC_CHECK(r >= lr, "{}: gradient '{}' has lower rank than '{}'", node.describe(), g->name, like->name);
  std::vector<int64_t> axes;
  for (size_t i = 0; i < r; ++i) {
    if (i < r - lr) {
      axes.push_back(static_cast<int64_t>(i));
      continue;
    }
    const Dim& ld = (*ls)[i - (r - lr)];
    const Dim& gd = (*gs)[i];
    if (ld.isStatic() && ld.value == 1 && !(gd.isStatic() && gd.value == 1)) axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.empty() && r == lr) return g;
  Value* s = axes.empty() ? g : emit("ReduceSum", {g, ints(axes)}, {{"keepdims", Attribute{int64_t{1}}}});
  if (r == lr) return s;
  Value* shape = emit("Shape", {like});
  return emit("Reshape", {s, shape});
}

Value* GradCtx::zerosLike(Value* v) {
  AICC_CHECK(v->type.isTensor(), "{}: zeros of a non-tensor", node.describe());
  Tensor zero(v->type.dtype, {1});
  return emit("ConstantOfShape", {emit("Shape", {v})}, {{"value", Attribute{zero}}});
}

Value* GradCtx::doutOrZeros(size_t i) { return dout(i) ? dout(i) : zerosLike(out(i)); }

// ---- differentiate ----------------------------------------------------------------------------

namespace {

bool isFloatTensor(const Value* v) { return v && v->type.isTensor() && isFloat(v->type.dtype); }

bool hasSubgraph(const Node& n) {
  for (const auto& [_, a] : n.attrs)
    if (a.kind() == Attribute::Kind::Graph || a.kind() == Attribute::Kind::Graphs) return true;
  return false;
}

} // namespace

AutodiffResult differentiate(Model& m, const AutodiffOptions& opts) {
  Graph& g = *m.graph;
  Value* loss = g.lookupLocal(opts.loss);
  AICC_CHECK(loss, "autodiff: the model has no value named '{}' (the loss)", opts.loss);
  AICC_CHECK(isFloatTensor(loss), "autodiff: loss '{}' must be a float tensor, it is {}", loss->name,
             formatType(loss->type));
  auto ld = loss->type.shape ? toDims(*loss->type.shape) : std::nullopt;
  AICC_CHECK(ld && checkedNumel(*ld) == 1, "autodiff: loss '{}' must be a scalar (one element), it is {}",
             loss->name, formatType(loss->type));

  // Resolve what to differentiate.
  std::vector<Value*> wrt;
  for (const auto& name : opts.wrt) {
    if (name == "all-weights") {
      for (Value* c : g.constants)
        if (isFloatTensor(c)) wrt.push_back(c);
      continue;
    }
    Value* v = g.lookupLocal(name);
    AICC_CHECK(v, "autodiff: the model has no value named '{}'", name);
    bool isInput = std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end();
    AICC_CHECK(isInput || v->isConstant(), "autodiff: '{}' is neither a graph input nor a weight", name);
    AICC_CHECK(isFloatTensor(v), "autodiff: '{}' is {}, only float tensors have gradients", name, formatType(v->type));
    wrt.push_back(v);
  }
  AICC_CHECK(!wrt.empty(), "autodiff: nothing to differentiate (--wrt)");

  // Values that depend on a wrt value through float paths, and nodes that reach the loss.
  std::set<const Value*> reached(wrt.begin(), wrt.end());
  for (const auto& n : g.nodes) {
    bool any = false;
    for (const Value* v : n->inputs) any |= v && reached.count(v);
    if (!any) continue;
    for (const Value* o : n->outputs)
      if (isFloatTensor(o)) reached.insert(o);
  }
  std::set<const Value*> needed{loss};
  std::vector<Node*> path; // nodes on a path wrt -> loss, in reverse order
  size_t forwardCount = g.nodes.size();
  std::set<const Node*> forwardNodes; // for rematerialization (autodiff/remat.h)
  for (const auto& n : g.nodes) forwardNodes.insert(n.get());
  for (size_t k = forwardCount; k-- > 0;) {
    Node* n = g.nodes[k].get();
    bool feedsLoss = false;
    for (const Value* o : n->outputs) feedsLoss |= o && needed.count(o);
    if (!feedsLoss) continue;
    bool fromWrt = false;
    for (const Value* v : n->inputs) fromWrt |= v && reached.count(v) && isFloatTensor(v);
    if (!fromWrt) continue;
    for (const Value* v : n->inputs)
      if (v) needed.insert(v);
    path.push_back(n);
  }

  // Contributions to each value's gradient; summed when a value fans out.
  std::map<const Value*, std::vector<Value*>> contrib;
  auto total = [&](const Value* v, GradCtx* ctx) -> Value* {
    auto it = contrib.find(v);
    if (it == contrib.end() || it->second.empty()) return nullptr;
    if (it->second.size() == 1) return it->second[0];
    Value* s = ctx->emitN("Sum", it->second, 1)[0];
    it->second = {s};
    return s;
  };

  {
    Node* seedNode = insertNode(g, nullptr, "ConstantOfShape", {nullptr}, 1, "grad/seed");
    Tensor one(loss->type.dtype, {1});
    one.setF64(0, 1.0);
    seedNode->inputs[0] = g.addConstant(g.uniqueName("grad/loss_shape"), Tensor::fromI64(*ld, {static_cast<int64_t>(ld->size())}));
    seedNode->attrs["value"] = Attribute{one};
    seedNode->outputs[0]->type = loss->type;
    contrib[loss].push_back(seedNode->outputs[0]);
  }

  for (Node* n : path) {
    std::vector<bool> needs;
    for (const Value* v : n->inputs) needs.push_back(v && reached.count(v) && isFloatTensor(v));
    GradCtx ctx(g, *n, {}, needs);
    std::vector<Value*> douts;
    bool anyOut = false;
    for (const Value* o : n->outputs) {
      douts.push_back(o ? total(o, &ctx) : nullptr);
      anyOut |= douts.back() != nullptr;
    }
    if (!anyOut) continue;
    AICC_CHECK(!hasSubgraph(*n), "autodiff: {}: gradients through ops with subgraphs (If/Loop/Scan) are not supported",
               n->describe());
    AICC_CHECK(n->def && n->def->grad, "autodiff: {}: op '{}' has no gradient rule", n->describe(),
               n->def ? n->def->qualifiedName() : n->op);
    GradCtx rule(g, *n, douts, needs);
    try {
      n->def->grad(rule);
    } catch (const Error& e) {
      throw Error(fmt::format("autodiff: {}: {}", n->describe(), e.what()));
    }
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (!needs[i]) continue;
      AICC_CHECK(rule.grads()[i], "autodiff: {}: the gradient rule gave no gradient for input {}", n->describe(), i);
      contrib[n->inputs[i]].push_back(rule.grads()[i]);
    }
  }

  AutodiffResult res;
  std::vector<Value*> outputs{loss};
  Node* anchor = g.nodes.back().get();
  GradCtx finisher(g, *anchor, {}, {});
  for (Value* w : wrt) {
    Value* gv = total(w, &finisher);
    if (!gv) gv = finisher.zerosLike(w);
    std::string name = "grad_" + w->name;
    AICC_CHECK(!g.lookup(name), "autodiff: cannot name the gradient of '{}': '{}' already exists", w->name, name);
    Node* id = insertNode(g, nullptr, "Identity", {gv}, 1, name);
    g.renameValue(id->outputs[0], name);
    id->outputs[0]->type = w->type;
    outputs.push_back(id->outputs[0]);
    res.gradNames.push_back(name);
    res.wrt.push_back(w->name);
  }
  if (opts.keepForwardOutputs)
    for (Value* o : g.outputs)
      if (o != loss) outputs.push_back(o);
  g.outputs = outputs;
  res.backwardNodes = static_cast<int64_t>(g.nodes.size() - forwardCount);
  inferShapes(g);
  eliminateDeadCode(m);
  if (opts.rematerialize) res.remat = rematerialize(m, forwardNodes);
  return res;
}

} // namespace aicc
