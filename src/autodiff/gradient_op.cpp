// ai.onnx.preview.training.Gradient, expanded at import time with the autodiff pass.
//
// Gradient(xs..., zs...) -> dY/dxs...: attributes xs (names of the differentiated inputs), zs
// (names of the other inputs; optional) and y (the differentiated value) name values of the graph.
// The expansion copies the nodes computing y into a separate model (whose inputs are xs, zs and
// whatever else y reads), differentiates it w.r.t. xs (y must be a float tensor; when it has more
// than one element the gradient is that of ReduceSum(y), i.e. the vector-Jacobian product with a
// ones seed), and splices the backward nodes into the graph in place of the Gradient node, reading
// the graph's own forward values. The Gradient node must come after the nodes computing y.
#include "autodiff/autodiff.h"
#include "ir/rewrite.h"
#include "ops/all_ops.h"
#include "ops/helpers.h"
#include "passes/shape_inference.h"

#include <set>

namespace aicc {
namespace {

std::vector<std::string> stringsAttr(const Node& n, const std::string& name) {
  const Attribute* a = n.attr(name);
  if (!a) return {};
  return std::get<std::vector<std::string>>(a->v);
}

// Appends a node to g (at the end) whose single output is the existing value `out`.
void appendProducer(Graph& g, const std::string& op, Value* in, Value* out) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->def = OpRegistry::instance().find("", op);
  n->owner = &g;
  n->inputs = {in};
  n->outputs = {out};
  out->producer = n.get();
  g.nodes.push_back(std::move(n));
}

void expandGradient(ImportCtx& c) {
  Graph& g = c.graph;
  Node& node = c.node;
  const std::vector<std::string> xs = stringsAttr(node, "xs");
  const std::string y = node.attrString("y");
  AICC_CHECK(!xs.empty(), "attribute 'xs' is empty");
  AICC_CHECK(node.outputs.size() == xs.size(), "has {} outputs but 'xs' names {} tensors",
             node.outputs.size(), xs.size());
  Value* yv = g.lookup(y);
  AICC_CHECK(yv, "'y' names '{}', which is not defined before the Gradient node", y);

  // The nodes computing y (ancestors within g).
  std::set<const Node*> anc;
  std::vector<const Value*> work{yv};
  while (!work.empty()) {
    const Value* v = work.back();
    work.pop_back();
    if (!v->producer || v->owner != &g || anc.count(v->producer)) continue;
    anc.insert(v->producer);
    for (const Value* u : v->producer->inputs)
      if (u) work.push_back(u);
  }

  // The sub-model: xs first (inputs, also when they are weights), then every other value y reads.
  Model sub;
  sub.graph = std::make_shared<Graph>();
  Graph& sg = *sub.graph;
  sg.name = "gradient_of_" + y;
  std::map<const Value*, Value*> fwd;  // g -> sub
  std::map<const Value*, Value*> back; // sub -> g
  for (const auto& x : xs) {
    Value* xv = g.lookup(x);
    AICC_CHECK(xv, "'xs' names '{}', which is not defined", x);
    AICC_CHECK(!xv->producer || !anc.count(xv->producer),
               "'xs' names '{}', which is computed by the graph (xs must be inputs of the "
               "differentiated graph)",
               x);
    AICC_CHECK(!fwd.count(xv), "'xs' names '{}' twice", x);
    back[fwd[xv] = sg.addInput(x, xv->type)] = xv;
  }
  auto mapIn = [&](Value* u) -> Value* {
    if (!u) return nullptr;
    if (auto it = fwd.find(u); it != fwd.end()) return it->second;
    Value* s = u->constant ? sg.addConstant(u->name, *u->constant) : sg.addInput(u->name, u->type);
    back[s] = u;
    return fwd[u] = s;
  };
  std::set<const Node*> cloned;
  for (const auto& n : g.nodes) {
    if (!anc.count(n.get())) continue;
    std::vector<Value*> ins;
    for (Value* u : n->inputs) ins.push_back(mapIn(u));
    std::vector<std::string> outs;
    for (const Value* o : n->outputs) outs.push_back(o ? o->name : "");
    Node* cn = sg.addNode(n->op, std::move(ins), outs, n->domain);
    cn->name = n->name;
    cn->def = n->def;
    cn->attrs = n->attrs;
    cloned.insert(cn);
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) {
        cn->outputs[i]->type = n->outputs[i]->type;
        fwd[n->outputs[i]] = cn->outputs[i];
        back[cn->outputs[i]] = n->outputs[i];
      }
  }
  Value* loss = mapIn(yv);
  inferShapes(sg); // types are inferred after the import; the copy needs them now
  AICC_CHECK(loss->type.isTensor() && isFloat(loss->type.dtype),
             "'y' ('{}') must be a float tensor, it is {}", y, formatType(loss->type));
  auto yd = loss->type.shape ? toDims(*loss->type.shape) : std::nullopt;
  if (!yd || checkedNumel(*yd) != 1) {
    Node* r = insertNode(sg, nullptr, "ReduceSum", {loss}, 1, "gradient/sum_y");
    r->attrs["keepdims"] = Attribute{int64_t{0}};
    r->outputs[0]->type = Type::tensor(loss->type.dtype, Shape{});
    loss = r->outputs[0];
  }
  sg.outputs = {loss};
  AutodiffOptions ao;
  ao.loss = loss->name;
  ao.wrt = xs;
  differentiate(sub, ao);

  // Splice the backward nodes in before the Gradient node (forward copies map to g's values).
  auto toG = [&](Value* s) -> Value* {
    if (!s) return nullptr;
    if (auto it = back.find(s); it != back.end()) return it->second;
    AICC_CHECK(s->constant, "internal: gradient value '{}' has no counterpart", s->name);
    return back[s] = g.addConstant(g.uniqueName("gradient/" + s->name), *s->constant);
  };
  for (const auto& n : sg.nodes) {
    if (cloned.count(n.get())) continue;
    std::vector<Value*> ins;
    for (Value* u : n->inputs) ins.push_back(toG(u));
    Node* gn = insertNode(g, &node, n->op, std::move(ins), static_cast<int>(n->outputs.size()),
                          "gradient/" + y, n->domain);
    gn->attrs = n->attrs;
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      if (!n->outputs[i]) continue; // (insertNode made every output; an unused one is harmless)
      gn->outputs[i]->type = n->outputs[i]->type;
      back[n->outputs[i]] = gn->outputs[i];
    }
  }
  // The Gradient node becomes Identity(grad of xs[0]); Identity nodes produce the other outputs.
  std::vector<Value*> grads;
  for (size_t i = 0; i < xs.size(); ++i) grads.push_back(toG(sg.outputs.at(1 + i)));
  std::vector<Value*> outs = node.outputs;
  node.op = "Identity";
  node.domain = "";
  node.def = OpRegistry::instance().find("", "Identity");
  node.attrs.clear();
  node.inputs = {grads[0]};
  node.outputs = {outs[0]};
  for (size_t i = 1; i < outs.size(); ++i)
    if (outs[i]) appendProducer(g, "Identity", grads[i], outs[i]);
  if (!outs[0]) node.outputs[0] = nullptr;
}

} // namespace

void registerAutodiffOps(OpRegistry& r) {
  r.op("Gradient", kTrainingDomain)
      .since(1)
      .inputs(1, 1 << 30)
      .outputs(1, 1 << 30)
      .attr("xs", Attribute::Kind::Strings, true)
      .attr("y", Attribute::Kind::String, true)
      .attr("zs", Attribute::Kind::Strings)
      .infer([](InferCtx&) { fail("Gradient must be expanded at import (internal error)"); })
      .kernel([](KernelCtx&) -> std::vector<RValue> {
        fail("Gradient must be expanded at import (internal error)");
      })
      .upgrade(1, 1 << 30, expandGradient);
}

} // namespace aicc
