#include "passes/data_dims.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"
#include "passes/shape_inference.h"

#include <algorithm>
#include <cctype>
#include <map>
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

// A producer whose unknown result dims a consumer may fix: an op with data-dependent dims
// (bounded or not: Range and ConstantOfShape check the size the run's values give against it).
bool fixable(const Node& n) { return n.def && n.def->dataDim; }

// Fixes dim d of v (unknown) at the size a consumer in g gives it; whether it did.
bool fixByConsumer(const Graph& g, Value* v, size_t d) {
  const auto fixed = fixedByConsumer(g, v, d);
  if (fixed) (*v->type.shape)[d] = Dim::known(*fixed);
  return fixed.has_value();
}

// The data symbols of `names` that meet one other dim in a broadcast: an elementwise node whose
// result is unknown at some dim, its inputs' dims there the data symbol and one other known dim
// X (an input symbol, an expression of them, or a static size above 1; 1s broadcast) -> X.
// ONNX Runtime runs such a node only where the two are equal, so the data symbol is X. Symbols
// that some derived dim reads are left alone (their producer must still write them).
std::map<std::string, Dim> metInBroadcasts(const Graph& g, const std::set<std::string>& names) {
  std::set<std::string> inDerived;
  forEachValue(g, [&](Value& v) {
    if (!v.type.isTensor() || !v.type.shape) return;
    for (const Dim& d : *v.type.shape)
      if (auto e = d.derived ? dimExpr(d) : std::nullopt) {
        std::vector<std::string> syms;
        e->symbols(syms);
        inDerived.insert(syms.begin(), syms.end());
      }
  });
  std::map<std::string, std::vector<Dim>> met; // data symbol -> the dims it meets
  for (const auto& np : g.nodes) {
    const Node& c = *np;
    if (!c.def || !(c.def->props & kElementwise) || c.outputs.size() != 1 || !c.outputs[0] ||
        !c.outputs[0]->type.isTensor() || !c.outputs[0]->type.shape)
      continue;
    const Shape& out = *c.outputs[0]->type.shape;
    for (size_t d = 0; d < out.size(); ++d) {
      std::vector<std::string> data;
      std::vector<Dim> others;
      for (const Value* x : c.inputs) {
        if (!x || !x->type.isTensor() || !x->type.shape || x->type.shape->size() > out.size())
          continue;
        const size_t off = out.size() - x->type.shape->size();
        if (d < off) continue;
        const Dim& xd = (*x->type.shape)[d - off];
        if (!xd.derived && names.count(xd.symbol) && !inDerived.count(xd.symbol))
          data.push_back(xd.symbol);
        else if ((xd.isStatic() && xd.value != 1) || !xd.symbol.empty())
          if (std::find(others.begin(), others.end(), xd) == others.end()) others.push_back(xd);
      }
      if (data.empty() || others.empty()) continue; // (nothing met here)
      // Met where the result is unknown, or already the other dim (inference took a static one);
      // a result of another dim there is a meeting this does not read (it blocks the merge).
      const bool open = (!out[d].isStatic() && out[d].symbol.empty()) ||
                        (others.size() == 1 && out[d] == others[0]);
      for (const std::string& x : data)
        for (const Dim& o : open ? others : std::vector<Dim>{Dim{}})
          if (auto& m = met[x]; std::find(m.begin(), m.end(), o) == m.end()) m.push_back(o);
    }
  }
  std::map<std::string, Dim> merges; // those that meet one dim wherever they meet one
  for (const auto& [x, dims] : met)
    if (dims.size() == 1 && (dims[0].isStatic() || !dims[0].symbol.empty()))
      merges.emplace(x, dims[0]);
  return merges;
}

bool mergeMet(Graph& g, std::set<std::string> named);

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
  std::set<std::string> named; // the data symbols named below
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
        if (!dd) continue; // (no bound known: sized at run time)
        auto [it, fresh] = counts.emplace(dd->count, "");
        if (fresh) it->second = freshSymbol(n.op, used), named.insert(it->second);
        dim = Dim::sym(it->second);
        changed = here = true;
      }
    }
    if (here) inferShapes(g); // the nodes after it see the symbol
  }
  changed = mergeMet(g, named) || changed;
  return changed;
}

namespace {

// The symbols of `named` that meet one other dim in broadcasts become it (metInBroadcasts),
// rounds until none does; whether some did.
bool mergeMet(Graph& g, std::set<std::string> named) {
  bool changed = false;
  // A data symbol that meets another dim in a broadcast is that dim (metInBroadcasts): every dim
  // that is the symbol becomes it, and the producer's lowering checks its count against it at
  // run time instead of writing the symbol (GPT-2's causal-mask buffer [1, 1, 1024, 1024] sliced
  // by the length S, whose slices meet the scores' S in a Where: the mask and all after it had
  // '?' dims). Were the symbol 1 where the other is not, ONNX Runtime would broadcast; this
  // check stops the run with an error there instead (a slice or count of 1 against a longer
  // axis: no model we know does it).
  for (int round = 0; round < 8; ++round) {
    const std::map<std::string, Dim> merges = metInBroadcasts(g, named);
    if (merges.empty()) break;
    forEachValue(g, [&](Value& v) {
      if (!v.type.isTensor() || !v.type.shape) return;
      for (Dim& d : *v.type.shape)
        if (auto it = merges.find(d.symbol); !d.derived && it != merges.end()) d = it->second;
    });
    for (const auto& [x, _] : merges) named.erase(x);
    inferShapes(g);
    changed = true;
  }
  return changed;
}

} // namespace

bool mergeSymbolsMetInBroadcasts(Model& m) {
  std::set<std::string> all;
  forEachValue(*m.graph, [&](Value& v) {
    if (!v.type.isTensor() || !v.type.shape) return;
    for (const Dim& d : *v.type.shape)
      if (!d.isStatic() && !d.derived && !d.symbol.empty()) all.insert(d.symbol);
  });
  return mergeMet(*m.graph, all);
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
