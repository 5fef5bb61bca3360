#include "passes/dim_steps.h"

#include "ir/dim_expr.h"
#include "ir/tensor.h"
#include "passes/shape_inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

namespace aicc {

namespace {

Dim substituted(const Dim& d, const std::map<std::string, DimExpr>& with) {
  if (d.isStatic() || d.symbol.empty()) return d;
  const auto e = dimExpr(d);
  if (!e) return d;
  DimAlgebra<DimExpr> f;
  f.constant = [](int64_t c) { return DimExpr::constant(c); };
  f.symbol = [&](const std::string& s) {
    auto it = with.find(s);
    return it != with.end() ? it->second : DimExpr::symbol(s);
  };
  f.add = [](const DimExpr& a, const DimExpr& b) { return a + b; };
  f.mul = [](const DimExpr& a, const DimExpr& b) { return a * b; };
  f.floorDiv = [](const DimExpr& a, int64_t k) { return a.floorDiv(k); };
  return dimOf(e->fold(f));
}

void substitute(Type& t, const std::map<std::string, DimExpr>& with) {
  if (t.elem) {
    auto elem = std::make_shared<Type>(*t.elem);
    substitute(*elem, with);
    t.elem = std::move(elem);
  }
  if (t.isTensor() && t.shape)
    for (Dim& d : *t.shape) d = substituted(d, with);
}

// g's types with the symbols of `with` replaced, shapes re-inferred.
void substituteSymbols(Graph& g, const std::map<std::string, DimExpr>& with) {
  forEachValue(g, [&](Value& v) { substitute(v.type, with); });
  inferShapes(g);
}

// substituteSymbols, kept when `keep(the unknown dims left)` says so; else (and when inference
// refuses it) g's types as they were.
bool trySymbols(Graph& g, const std::map<std::string, DimExpr>& with,
                const std::function<bool(int64_t)>& keep) {
  std::vector<std::pair<Value*, Type>> saved;
  forEachValue(g, [&](Value& v) { saved.emplace_back(&v, v.type); });
  try {
    substituteSymbols(g, with);
    if (keep(countUnknownDims(g))) return true;
  } catch (const Error&) { // shapes that refuse it
  }
  for (auto& [v, t] : saved) v->type = t;
  return false;
}

} // namespace

std::string stepSymbol(const std::string& symbol, int64_t step) {
  return fmt::format("{}/{}", symbol, step);
}

void setSymbolValue(std::map<std::string, int64_t>& at, const std::string& symbol, int64_t step,
                    int64_t value) {
  at[symbol] = value;
  if (step > 1) at[stepSymbol(symbol, step)] = value / step;
}

DimExpr steppedDim(const std::string& symbol, int64_t step) {
  return DimExpr::constant(step) * DimExpr::symbol(stepSymbol(symbol, step));
}

void applyDimSteps(Graph& g, const std::map<std::string, int64_t>& steps) {
  if (steps.empty()) return;
  std::map<std::string, DimExpr> with;
  for (const auto& [s, k] : steps) with.emplace(s, steppedDim(s, k));
  substituteSymbols(g, with);
}

int64_t countUnknownDims(const Graph& g) {
  int64_t unknown = 0;
  forEachValue(g, [&](Value& v) {
    if (!v.type.isTensor()) return;
    if (!v.type.shape) {
      ++unknown;
      return;
    }
    for (const Dim& d : *v.type.shape) unknown += !d.isStatic() && d.symbol.empty();
  });
  return unknown;
}

std::vector<std::string> nameUnknownInputDims(Graph& g) {
  std::vector<std::string> names;
  for (Value* v : g.inputs)
    if (v->type.isTensor() && v->type.shape)
      for (size_t k = 0; k < v->type.shape->size(); ++k)
        if (Dim& d = (*v->type.shape)[k]; !d.isStatic() && d.symbol.empty()) {
          d = Dim::sym(fmt::format("{}.{}", v->name, k));
          names.push_back(d.symbol);
        }
  if (!names.empty()) inferShapes(g);
  return names;
}

std::map<std::string, std::string> mergeNamedDims(Graph& g, const std::vector<std::string>& names) {
  std::map<std::string, std::string> merged;
  if (names.size() < 2) return merged;
  int64_t unknown = countUnknownDims(g);
  for (size_t i = 0; i < names.size() && unknown > 0; ++i)
    for (size_t j = i + 1; j < names.size() && unknown > 0; ++j)
      if (!merged.count(names[i]) && !merged.count(names[j]) &&
          trySymbols(g, {{names[j], DimExpr::symbol(names[i])}},
                     [&](int64_t now) { return now < unknown ? (unknown = now, true) : false; }))
        merged[names[j]] = names[i];
  return merged;
}

std::map<std::string, int64_t> findDimSteps(Graph& g) {
  inferShapes(g); // the baseline: what inference knows without steps
  const int64_t before = countUnknownDims(g);
  if (before == 0) return {};
  std::vector<std::string> symbols; // the inputs' plain symbols, in order
  for (const Value* v : g.inputs)
    if (v->type.isTensor() && v->type.shape)
      for (const Dim& d : *v->type.shape)
        if (!d.isStatic() && !d.derived && !d.symbol.empty() &&
            std::find(symbols.begin(), symbols.end(), d.symbol) == symbols.end())
          symbols.push_back(d.symbol);
  std::map<std::string, int64_t> steps;
  for (const std::string& s : symbols) {
    int64_t best = before, chosen = 0;
    for (int64_t k = 2; k <= 128; k *= 2) // (each trial undone)
      trySymbols(g, {{s, steppedDim(s, k)}}, [&](int64_t now) {
        if (now < best) best = now, chosen = k;
        return false;
      });
    if (chosen) steps[s] = chosen;
  }
  return steps;
}

std::map<std::string, PinnedDim> findPinnedDims(const Graph& g) {
  std::map<std::string, PinnedDim> pinned;
  std::set<std::string> plain; // the inputs' own symbols (a stepped one's is not)
  for (const Value* v : g.inputs)
    if (v->type.isTensor() && v->type.shape)
      for (const Dim& d : *v->type.shape)
        if (!d.isStatic() && !d.derived && !d.symbol.empty()) plain.insert(d.symbol);
  for (const auto& n : g.nodes) {
    if (n->op != "Reshape" || n->inputs.empty() || n->outputs.empty() || !n->inputs[0]) continue;
    const Type& in = n->inputs[0]->type;
    const Type& out = n->outputs[0]->type;
    if (!in.isTensor() || !in.shape || !out.isTensor() || !out.shape || !toDims(*out.shape))
      continue;
    DimExpr count = DimExpr::constant(1);
    bool known = true;
    for (const Dim& d : *in.shape)
      if (const auto e = dimExpr(d))
        count = count * *e;
      else
        known = false;
    std::vector<std::string> symbols;
    count.symbols(symbols);
    std::sort(symbols.begin(), symbols.end());
    symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
    if (!known || symbols.size() != 1 || !plain.count(symbols[0]) || pinned.count(symbols[0]))
      continue;
    const auto per = count.exactDiv(DimExpr::symbol(symbols[0]));
    const auto c = per ? per->constantValue() : std::nullopt;
    if (!c || *c <= 0) continue; // not c * S
    const int64_t want = checkedNumel(*toDims(*out.shape), n->name);
    AICC_CHECK(want % *c == 0,
               "{}: its result is {} ({} elements), and its input {} has {} elements for every "
               "value of {}: no size runs it",
               n->describe(), formatShape(*out.shape), want, formatType(in), count.str(),
               symbols[0]);
    pinned[symbols[0]] = {want / *c, n->describe(), formatShape(*out.shape)};
  }
  return pinned;
}

} // namespace aicc
