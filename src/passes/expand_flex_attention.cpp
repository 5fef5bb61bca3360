#include "passes/expand_flex_attention.h"

#include "ir/rewrite.h"
#include "passes/shape_inference.h"

#include <cmath>

namespace aicc {
namespace {

Value* constI64(Graph& g, const std::string& base, const std::vector<int64_t>& v) {
  return g.addConstant(freshName(g, base), Tensor::fromI64(v));
}

// x [B, H, S, D] with each head repeated r times: [B, H * r, S, D] (Unsqueeze, Expand, Reshape).
Value* repeatHeads(Graph& g, Node* before, Value* x, const Dims& d, int64_t r) {
  if (r == 1) return x;
  const std::string base = x->name + "_heads";
  Node* u = insertNode(g, before, "Unsqueeze", {x, constI64(g, base + "_axis", {2})}, 1, base);
  Node* e = insertNode(g, before, "Expand",
                       {u->outputs[0], constI64(g, base + "_shape", {d[0], d[1], r, d[2], d[3]})},
                       1, base);
  return insertNode(g, before, "Reshape",
                    {e->outputs[0], constI64(g, base + "_flat", {d[0], d[1] * r, d[2], d[3]})}, 1,
                    base)
      ->outputs[0];
}

// Whether a mod graph can be inlined: one input, one output, no nested graphs.
bool inlinable(const Graph* mod) {
  if (!mod) return true;
  if (mod->inputs.size() != 1 || mod->outputs.size() != 1) return false;
  for (const auto& n : mod->nodes)
    for (const auto& [_, a] : n->attrs)
      if (std::holds_alternative<GraphPtr>(a.v) ||
          std::holds_alternative<std::vector<GraphPtr>>(a.v))
        return false;
  return true;
}

// The nodes of `mod` moved into g before `before`, its input bound to `in`; returns its result.
Value* inlineMod(Graph& g, Node* before, Graph* mod, Value* in) {
  if (!mod) return in;
  Value* param = mod->inputs[0];
  Value* result = mod->outputs[0];
  if (result == param) return in;
  std::vector<Value*> values;
  for (const auto& v : mod->values())
    if (v.get() != param) values.push_back(v.get());
  for (Value* v : values) // (names kept where g has none of them)
    g.adoptValue(*mod, v, g.lookup(v->name) ? freshName(g, v->name) : v->name);
  std::vector<std::unique_ptr<Node>> moved = std::move(mod->nodes);
  mod->outputs.clear();
  for (auto& n : moved) {
    n->owner = &g;
    for (Value*& x : n->inputs)
      if (x == param) x = in;
  }
  const auto at = std::find_if(g.nodes.begin(), g.nodes.end(),
                               [&](const std::unique_ptr<Node>& n) { return n.get() == before; });
  g.nodes.insert(at, std::make_move_iterator(moved.begin()), std::make_move_iterator(moved.end()));
  return result;
}

Graph* modGraph(const Node& n, const char* name) {
  const Attribute* a = n.attr(name);
  const GraphPtr* g = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
  return g ? g->get() : nullptr;
}

// n expanded in g, or false (left to its reference kernel): f32, f16, bf16 or f64 (the same for
// Q, K, V), static 4-D shapes, the softmax in its default type (f64 for f64, else f32).
bool expand(Graph& g, Node& n) {
  if (n.inputs.size() < 3 || n.outputs.size() != 1 || !n.outputs[0]) return false;
  std::vector<Dims> d;
  for (size_t i = 0; i < 3; ++i) {
    const Value* v = n.inputs[i];
    auto s = v && v->type.isTensor() && v->type.shape ? toDims(*v->type.shape) : std::nullopt;
    if (!s || s->size() != 4 || v->type.dtype != n.inputs[0]->type.dtype) return false;
    d.push_back(*s);
  }
  const DType t = n.inputs[0]->type.dtype; // (f16 / bf16: widen-reduced-floats after it)
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16 && t != DType::F64) return false;
  // The softmax in its default type: f64 for f64 inputs (ONNX DOUBLE = 11), else f32 (FLOAT = 1).
  if (n.attrs.count("softmax_precision") &&
      n.attrInt("softmax_precision") != (t == DType::F64 ? 11 : 1))
    return false;
  const int64_t Hq = d[0][1], Hkv = d[1][1];
  if (Hkv < 1 || Hq % Hkv || d[2][1] != Hkv) return false;
  Graph *score = modGraph(n, "score_mod"), *prob = modGraph(n, "prob_mod");
  if (!inlinable(score) || !inlinable(prob)) return false;
  // sqrt(scale) in f32, as the reference rounds it (scale: the attribute, else 1 / sqrt(E)).
  const double scale =
      n.attrs.count("scale") ? n.attrFloat("scale") : 1.0 / std::sqrt(double(d[0][3]));
  const float s = std::sqrt(static_cast<float>(scale));
  const std::string base = n.outputs[0]->name;
  Tensor st = Tensor::scalar(DType::F32, s);
  Value* sv =
      g.addConstant(freshName(g, base + "_sqrt_scale"), t == DType::F32 ? st : st.castTo(t));
  Value* k = repeatHeads(g, &n, n.inputs[1], d[1], Hq / Hkv);
  Value* v = repeatHeads(g, &n, n.inputs[2], d[2], Hq / Hkv);
  Value* qs = insertNode(g, &n, "Mul", {n.inputs[0], sv}, 1, base + "_q")->outputs[0];
  Value* ks = insertNode(g, &n, "Mul", {k, sv}, 1, base + "_k")->outputs[0];
  Node* kt = insertNode(g, &n, "Transpose", {ks}, 1, base + "_kt");
  kt->attrs["perm"] = Attribute{std::vector<int64_t>{0, 1, 3, 2}};
  Value* scores =
      insertNode(g, &n, "MatMul", {qs, kt->outputs[0]}, 1, base + "_scores")->outputs[0];
  scores = inlineMod(g, &n, score, scores);
  Node* sm = insertNode(g, &n, "Softmax", {scores}, 1, base + "_probs");
  sm->attrs["axis"] = Attribute{int64_t(-1)};
  Value* probs = inlineMod(g, &n, prob, sm->outputs[0]);
  Value* y = insertNode(g, &n, "MatMul", {probs, v}, 1, base + "_y")->outputs[0];
  Value* old = n.outputs[0];
  const std::string name = old->name;
  if (!canRedirectUses(g, old, y)) // a subgraph shadows the name: through a copy
    y = insertNode(g, &n, "Identity", {y}, 1, base)->outputs[0];
  replaceAllUses(g, old, y);
  eraseNodes(g, {&n});
  if (!g.lookup(name)) g.renameValue(y, name); // (the result keeps the node's name)
  return true;
}

} // namespace

bool expandFlexAttention(Model& m) {
  bool changed = false;
  forEachGraph(*m.graph, [&](Graph& g) {
    std::vector<Node*> flex;
    for (const auto& n : g.nodes)
      if (n->op == "FlexAttention" && n->domain == "ai.onnx.preview") flex.push_back(n.get());
    for (Node* n : flex) changed = expand(g, *n) || changed;
  });
  if (changed) inferShapes(*m.graph);
  return changed;
}

} // namespace aicc
