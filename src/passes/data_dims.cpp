#include "passes/data_dims.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"
#include "passes/shape_inference.h"

#include <cctype>
#include <set>

namespace aicc {

namespace {

// A fresh symbol "<op>.<k>" (lower case) that no dim of g uses.
std::string freshSymbol(const std::string& op, std::set<std::string>& used) {
  std::string base;
  for (char c : op) base += char(std::tolower(static_cast<unsigned char>(c)));
  for (int k = 0;; ++k)
    if (std::string s = base + "." + std::to_string(k); used.insert(s).second) return s;
}

// Dim d of v when a consumer fixes it: an elementwise node whose result (declared by the model,
// a graph output) has a static size there while its other inputs broadcast along it (absent or
// 1; CastLike's second input is its type only) or are unknown there, so v's dim can only be that
// size; through a chain of such nodes whose results are unknown there (ReduceL2's expansion:
// ReduceSum, Cast, Sqrt, CastLike to the declared output; the expanded window functions, whose
// Range's branches meet again). The producer's lowering then checks its count against it at run
// time, as for a dim the model declares on the producer itself.
std::optional<int64_t> fixedByConsumer(const Graph& g, const Value* v, size_t d, int depth = 0) {
  if (depth > 8) return std::nullopt;
  const size_t rank = v->type.shape->size();
  for (const Use& u : usesOf(g, v)) {
    const Node* c = u.node;
    if (!c->def || !(c->def->props & kElementwise) || c->outputs.size() != 1 || !c->outputs[0])
      continue;
    const Type& out = c->outputs[0]->type;
    if (!out.isTensor() || !out.shape || out.shape->size() != rank) continue;
    const Dim& od = (*out.shape)[d];
    if (!od.isStatic() && !od.symbol.empty()) continue;
    bool others = true; // every other input broadcasts along d
    for (size_t k = 0; k < c->inputs.size(); ++k)
      if (const Value* x = c->inputs[k]; x && x != v && !(c->op == "CastLike" && k == 1)) {
        const Shape* xs = x->type.isTensor() && x->type.shape ? &*x->type.shape : nullptr;
        if (!xs || xs->size() > rank) {
          others = false;
          continue;
        }
        const size_t off = rank - xs->size();
        const Dim* xd = d >= off ? &(*xs)[d - off] : nullptr;
        // (an unknown one: the branches of one value meeting again, as in the expanded window
        // functions; were it the other's broadcast of a 1, the producer's check says so)
        if (xd && !(xd->isStatic() && xd->value == 1) && !(!xd->isStatic() && xd->symbol.empty()))
          others = false;
      }
    if (!others) continue;
    if (od.isStatic()) return od.value;
    if (const auto fixed = fixedByConsumer(g, c->outputs[0], d, depth + 1)) return fixed;
  }
  return std::nullopt;
}

// A producer whose unknown result dims a consumer may fix: an op with data-dependent dims, or
// Range and ConstantOfShape (no bound, but their lowerings check the size the run's values give
// against a static one).
bool fixable(const Node& n) {
  return n.def &&
         (n.def->dataDim || (n.domain.empty() && (n.op == "Range" || n.op == "ConstantOfShape")));
}

// Fixes dim d of v (unknown) at the size a consumer in g gives it; whether it did.
bool fixByConsumer(const Graph& g, Value* v, size_t d) {
  const auto fixed = fixedByConsumer(g, v, d);
  if (fixed) (*v->type.shape)[d] = Dim::known(*fixed);
  return fixed.has_value();
}

} // namespace

bool nameDataDims(Model& m) {
  Graph& g = *m.graph;
  std::set<std::string> used;
  forEachValue(g, [&](Value& v) {
    if (!v.type.isTensor() || !v.type.shape) return;
    for (const Dim& d : *v.type.shape)
      if (auto e = dimExpr(d); e && !d.isStatic()) {
        std::vector<std::string> syms;
        e->symbols(syms);
        used.insert(syms.begin(), syms.end());
      }
  });
  bool changed = false;
  // In subgraphs (Loop, Scan and If bodies) only the dims a consumer fixes: data symbols are the
  // main graph's (the shape block's).
  forEachGraph(g, [&](Graph& sg) {
    if (&sg == &g) return;
    bool here = false;
    for (const auto& n : sg.nodes) {
      if (!fixable(*n)) continue;
      for (Value* v : n->outputs)
        if (v && v->type.isTensor() && v->type.shape)
          for (size_t d = 0; d < v->type.shape->size(); ++d) {
            const Dim& dim = (*v->type.shape)[d];
            if (!dim.isStatic() && dim.symbol.empty()) here = fixByConsumer(sg, v, d) || here;
          }
    }
    changed = changed || here;
  });
  if (changed) inferShapes(g);
  for (const auto& np : g.nodes) {
    const Node& n = *np;
    if (!fixable(n)) continue;
    std::map<int, std::string> counts; // the node's counts named
    bool here = false;                 // some dim of its results named or fixed
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      Value* v = n.outputs[k];
      if (!v || !v->type.isTensor() || !v->type.shape) continue;
      for (size_t d = 0; d < v->type.shape->size(); ++d) {
        Dim& dim = (*v->type.shape)[d];
        if (dim.isStatic() || !dim.symbol.empty()) continue;
        if (fixByConsumer(g, v, d)) {
          changed = here = true;
          continue;
        }
        if (!n.def->dataDim) continue;
        const std::optional<DataDim> dd = n.def->dataDim(n, k, d);
        if (!dd || !dimExpr(dd->bound)) continue; // no bound known: stays unknown
        auto [it, fresh] = counts.emplace(dd->count, "");
        if (fresh) it->second = freshSymbol(n.op, used);
        dim = Dim::sym(it->second);
        changed = here = true;
      }
    }
    if (here) inferShapes(g); // the nodes after it see the symbol
  }
  return changed;
}

std::optional<Dim> producedDataDim(const Node& n, size_t out, size_t dim) {
  const Value* v = out < n.outputs.size() ? n.outputs[out] : nullptr;
  if (!n.def || !n.def->dataDim || !v || !v->type.isTensor() || !v->type.shape ||
      dim >= v->type.shape->size())
    return std::nullopt;
  const Dim& d = (*v->type.shape)[dim];
  if (d.isStatic() || d.derived || d.symbol.empty()) return std::nullopt;
  for (const Value* x : n.inputs) // (a node after the producer: the symbol is its input's)
    if (x && x->type.isTensor() && x->type.shape)
      for (const Dim& e : *x->type.shape)
        if (e.symbol == d.symbol) return std::nullopt;
  const auto dd = n.def->dataDim(n, out, dim);
  return dd ? std::optional<Dim>(dd->bound) : std::nullopt;
}

} // namespace aicc
