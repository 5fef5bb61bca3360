#include "passes/data_dims.h"

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
  for (const auto& np : g.nodes) {
    const Node& n = *np;
    if (!n.def || !n.def->dataDim) continue;
    std::map<int, std::string> counts; // the node's counts named
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      Value* v = n.outputs[k];
      if (!v || !v->type.isTensor() || !v->type.shape) continue;
      for (size_t d = 0; d < v->type.shape->size(); ++d) {
        Dim& dim = (*v->type.shape)[d];
        if (dim.isStatic() || !dim.symbol.empty()) continue;
        const std::optional<DataDim> dd = n.def->dataDim(n, k, d);
        if (!dd || !dimExpr(dd->bound)) continue; // no bound known: stays unknown
        auto [it, fresh] = counts.emplace(dd->count, "");
        if (fresh) it->second = freshSymbol(n.op, used);
        dim = Dim::sym(it->second);
        changed = true;
      }
    }
    if (!counts.empty()) inferShapes(g); // the nodes after it see the symbol
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
