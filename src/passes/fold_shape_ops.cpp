// Shape folding: re-runs shape inference with data propagation and replaces every node output
// whose contents it knows completely (every entry a static dim) by a constant of the value's
// type: Shape/Size of static shapes, and Gather/Slice/Concat/Unsqueeze/Squeeze/Cast/Range/Where/
// arithmetic over such values, ConstantOfShape/Expand shape operands, ... Shape and Size of a
// statically shaped input are folded directly as well (even where propagation recorded nothing).
// The producers are left for DCE.
#include "passes/fold_shape_ops.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"
#include "ops/shape_ops.h"
#include "passes/shape_inference.h"

#include <functional>

namespace aicc {
namespace {

// The tensor a rank-0/1 integer value of type `t` holds when its contents are `v`, or nothing
// when the contents are not fully static or do not fit the type.
std::optional<Tensor> tensorFor(const Type& t, const std::vector<Dim>& v) {
  if (!t.isTensor() || !isInteger(t.dtype) || !t.shape || t.shape->size() > 1) return std::nullopt;
  Dims shape;
  if (t.shape->size() == 1) {
    const Dim& d = (*t.shape)[0];
    if (d.isStatic() && d.value != static_cast<int64_t>(v.size())) return std::nullopt;
    shape.push_back(static_cast<int64_t>(v.size()));
  } else if (v.size() != 1) {
    return std::nullopt;
  }
  for (const Dim& d : v)
    if (!d.isStatic()) return std::nullopt;
  Tensor out(t.dtype, shape);
  for (size_t i = 0; i < v.size(); ++i) {
    out.setI64(static_cast<int64_t>(i), v[i].value);
    if (out.getI64(static_cast<int64_t>(i)) != v[i].value) return std::nullopt; // doesn't fit
  }
  return out;
}

// Shape / Size of an input whose shape is fully static.
std::optional<Tensor> foldDirectly(const Node& n) {
  if (!n.domain.empty() || (n.op != "Shape" && n.op != "Size") || !n.hasInput(0) || !n.outputs[0])
    return std::nullopt;
  const Type& t = n.inputs[0]->type;
  if (!t.isTensor() || !t.shape) return std::nullopt;
  auto dims = toDims(*t.shape);
  if (!dims) return std::nullopt;
  int64_t rank = static_cast<int64_t>(dims->size());
  if (n.op == "Size") {
    int64_t numel = 1;
    for (int64_t d : *dims) numel *= d;
    return Tensor::fromI64({numel}).reshaped({});
  }
  const auto [s, e] = shapeRange(n, rank);
  return Tensor::fromI64(std::vector<int64_t>(dims->begin() + s, dims->begin() + e), {e - s});
}

std::vector<std::pair<Value*, Type>> snapshotTypes(Graph& root) {
  std::vector<std::pair<Value*, Type>> out;
  forEachGraph(root, [&](Graph& g) {
    for (const auto& v : g.values()) out.push_back({v.get(), v->type});
  });
  return out;
}

} // namespace

bool foldShapeOps(Model& m) {
  Graph& root = *m.graph;
  auto before = snapshotTypes(root);
  ShapeValues sv;
  inferShapes(root, sv);
  bool changed = false;
  for (const auto& [v, t] : before)
    if (!(v->type == t)) changed = true; // inference made a type more precise

  std::vector<std::pair<Node*, Graph*>> dead;
  forEachGraph(root, [&](Graph& g) {
    std::vector<Node*> nodes;
    for (const auto& n : g.nodes) nodes.push_back(n.get());
    for (Node* n : nodes) {
      if (n->domain.empty() && n->op == "Identity" && isGraphOutput(g, n->outputs[0])) continue;
      bool foldedAll = !n->outputs.empty();
      for (size_t i = 0; i < n->outputs.size(); ++i) {
        Value* o = n->outputs[i];
        if (!o) continue;
        std::optional<Tensor> t;
        if (i == 0) t = foldDirectly(*n);
        if (!t)
          if (auto it = sv.find(o); it != sv.end()) t = tensorFor(o->type, it->second);
        if (!t || !(t->dtype() == o->type.dtype)) {
          foldedAll = false;
          continue;
        }
        replaceByConstant(g, o, std::move(*t));
        changed = true;
      }
      bool holdsGraphs = false; // erased later by DCE: its subgraphs are still being visited
      for (const auto& [_, a] : n->attrs)
        holdsGraphs |= a.kind() == Attribute::Kind::Graph || a.kind() == Attribute::Kind::Graphs;
      if (foldedAll && !holdsGraphs) dead.push_back({n, &g});
    }
  });
  // Producers whose every output became a constant go now (others are left for DCE).
  std::map<Graph*, std::vector<Node*>> byGraph;
  for (auto [n, g] : dead) byGraph[g].push_back(n);
  for (auto& [g, ns] : byGraph) eraseNodes(*g, ns);
  return changed;
}

} // namespace aicc
