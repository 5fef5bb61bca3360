// The builder's symbols (runtime/artifact_builder.h): the inputs' symbols and their ranges
// (given, or the defaults, their lower ends raised to what the model takes), the data symbols of
// data-dependent sizes (passes/data_dims.h), and the inputs' and outputs' descriptions with their
// symbolic and derived dims (rt::TensorDesc::syms, exprs).
#include "runtime/artifact_builder.h"

#include "passes/data_dims.h"
#include "passes/dim_steps.h"

#include <algorithm>

namespace aicc::runtime::detail {

namespace {

// The input symbol an input's dim is: a plain symbol, or step * stepSymbol(S, step) for a
// symbol S of `ranges` with that step (passes/dim_steps.h); nullopt otherwise.
std::optional<std::string> inputSymbolOf(const Dim& d, const std::vector<rt::Symbol>& ranges) {
  if (d.isStatic() || d.symbol.empty()) return std::nullopt;
  if (!d.derived) return d.symbol;
  for (const rt::Symbol& r : ranges)
    if (r.step > 1 && dimExpr(d) == steppedDim(r.name, r.step)) return r.name;
  return std::nullopt;
}

// A derived dim as a program over the symbols' values (rt::TensorDesc::exprs), the stepped
// symbols' "S/step" read as S / step; nullopt when it reads anything else.
std::optional<std::vector<int64_t>> dimProgram(const Dim& d,
                                               const std::vector<rt::Symbol>& symbols) {
  const auto e = dimExpr(d);
  if (!e) return std::nullopt;
  bool ok = true;
  DimAlgebra<std::vector<int64_t>> f;
  f.constant = [](int64_t c) { return std::vector<int64_t>{rt::kDimConst, c}; };
  f.symbol = [&](const std::string& x) {
    for (size_t k = 0; k < symbols.size(); ++k) {
      if (symbols[k].name == x) return std::vector<int64_t>{rt::kDimSymbol, int64_t(k)};
      if (symbols[k].step > 1 && stepSymbol(symbols[k].name, symbols[k].step) == x)
        return std::vector<int64_t>{rt::kDimSymbol, int64_t(k), rt::kDimDiv, symbols[k].step};
    }
    ok = false;
    return std::vector<int64_t>{rt::kDimConst, 0};
  };
  auto both = [](int64_t op) {
    return [op](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
      std::vector<int64_t> r = a;
      r.insert(r.end(), b.begin(), b.end());
      r.insert(r.end(), {op, 0});
      return r;
    };
  };
  f.add = both(rt::kDimAdd);
  f.mul = both(rt::kDimMul);
  f.floorDiv = [](const std::vector<int64_t>& a, int64_t k) {
    std::vector<int64_t> r = a;
    r.insert(r.end(), {rt::kDimDiv, k});
    return r;
  };
  std::vector<int64_t> prog = e->fold(f);
  if (!ok || prog.size() / 2 > rt::kMaxDimProgram) return std::nullopt;
  return prog;
}

} // namespace

// The symbols of g's tensor inputs (in order of appearance) with their ranges: those given, else
// 1..kDefaultSymbolBound for a batch (a symbol only ever dim 0 of the inputs) and
// 1..kDefaultSizeBound for a length or an image side.
std::vector<rt::Symbol> inputSymbols(const Graph& g, const std::vector<rt::Symbol>& ranges) {
  std::vector<rt::Symbol> out;
  std::set<std::string> sizes; // the symbols that are some input's dim > 0
  for (const Value* v : g.inputs) {
    // (Strings are opaque to the runtime, so they give no symbol its value: what has their
    // symbols is of run-time size.)
    if (!v->type.isTensor() || !v->type.shape || v->type.dtype == DType::String) continue;
    for (size_t k = 0; k < v->type.shape->size(); ++k) {
      const auto name = inputSymbolOf((*v->type.shape)[k], ranges);
      if (!name) continue;
      if (k > 0) sizes.insert(*name);
      auto has = [&](const rt::Symbol& s) { return s.name == *name; };
      if (std::any_of(out.begin(), out.end(), has)) continue;
      auto r = std::find_if(ranges.begin(), ranges.end(), has);
      out.push_back(r != ranges.end() ? *r : rt::Symbol{*name, 1, 0});
    }
  }
  for (rt::Symbol& s : out)
    if (s.hi == 0) s.hi = sizes.count(s.name) ? kDefaultSizeBound : kDefaultSymbolBound;
  return out;
}

// The symbols' values as the graph's dims read them (symbolMap) at their upper or lower ends.
// (Data symbols are at their hi at both ends: the run decides them, the dims the model takes
// are not theirs to check.)
std::map<std::string, int64_t> symbolValues(const std::vector<rt::Symbol>& symbols, bool atHi) {
  return symbolMap(symbols, [&](size_t k) {
    const rt::Symbol& s = symbols[k];
    return s.runSized       ? kRunSizeNominal
           : atHi || s.data ? s.hi
                            : (s.lo + s.step - 1) / s.step * s.step;
  });
}

// The first dim of `values` below `least` with the symbols at `at`: its value, dim and size.
std::optional<std::tuple<const Value*, std::string, int64_t>>
dimBelow(const std::vector<Value*>& values, const std::map<std::string, int64_t>& at,
         int64_t least) {
  for (const Value* v : values)
    if (v->type.isTensor() && v->type.shape)
      for (const Dim& d : *v->type.shape)
        if (auto e = dimExpr(d); e && !d.isStatic())
          if (auto x = e->evaluate(at); x && *x < least) return std::tuple{v, d.symbol, *x};
  return std::nullopt;
}

// A default range starts at the smallest size the model takes (an audio model's input of 16
// samples has a negative number of frames, or none): each defaulted symbol's lo is raised until
// no dim is below 1 with every symbol at its lo (dims never shrink as a symbol grows: checked
// below).
void raiseDefaultLowerEnds(std::vector<rt::Symbol>& symbols, const std::vector<rt::Symbol>& given,
                           const std::vector<Value*>& values) {
  for (rt::Symbol& s : symbols) {
    if (std::any_of(given.begin(), given.end(),
                    [&](const rt::Symbol& r) { return r.name == s.name; }))
      continue;
    int64_t lo = s.lo, hi = s.hi;
    auto fits = [&](int64_t v) {
      const int64_t keep = s.lo;
      s.lo = v;
      const bool ok = !dimBelow(values, symbolValues(symbols, false), 1);
      s.lo = keep;
      return ok;
    };
    if (fits(lo) || !fits(hi)) continue;
    while (lo + 1 < hi) { // fits(hi), not fits(lo)
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? hi : lo) = mid;
    }
    s.lo = hi;
  }
}

// The data symbols of g (passes/data_dims.h), after `symbols` (the inputs'), in the order their
// producers run: each 0..its bound at the symbols' upper ends; and the nodes producing them.
std::map<const Node*, std::set<std::string>> addDataSymbols(const Graph& g,
                                                            std::vector<rt::Symbol>& symbols) {
  std::map<const Node*, std::set<std::string>> producers;
  for (const auto& np : g.nodes)
    for (size_t k = 0; k < np->outputs.size(); ++k) {
      const Value* v = np->outputs[k];
      for (size_t j = 0; v && v->type.isTensor() && v->type.shape && j < v->type.shape->size();
           ++j) {
        const std::string& name = (*v->type.shape)[j].symbol;
        const auto bound = producedDataDim(*np, k, j);
        if (!bound) continue;
        std::map<std::string, int64_t> bounds = symbolValues(symbols, true);
        if (bounds.count(name)) continue; // (a symbol already, a stepped one's S/step too)
        // (a bound that reads a symbol sized at run time is none)
        for (const rt::Symbol& s : symbols)
          if (s.runSized) bounds.erase(s.name);
        const auto e = dimExpr(*bound);
        const auto hi = e ? e->evaluate(bounds) : std::nullopt;
        // (no bound: sized at run time, its values in growable buffers)
        symbols.push_back(
            {name, 0, hi ? std::max<int64_t>(*hi, 1) : rt::kRunSizeLimit, 1, true, !hi});
        producers[np.get()].insert(name);
      }
    }
  return producers;
}

// An input or output with its symbolic dims (by `symbolic`, its type with symbols) named.
TensorDesc describeSymbolic(const Value* v, const Type& symbolic, const char* what, Io io,
                            const std::vector<rt::Symbol>& symbols) {
  TensorDesc t = describe(v, what, io);
  if (!t.dynamic.empty()) t.dynamic = formatType(symbolic); // (strings: any size of the symbols)
  if (!t.dynamic.empty() || !symbolic.shape) return t;
  for (size_t k = 0; k < symbolic.shape->size(); ++k) {
    const Dim& d = (*symbolic.shape)[k];
    if (d.isStatic()) continue;
    const auto name = inputSymbolOf(d, symbols);
    auto it = std::find_if(symbols.begin(), symbols.end(),
                           [&](const rt::Symbol& s) { return name && s.name == *name; });
    if (it == symbols.end() && io == Io::Output)
      if (auto prog = dimProgram(d, symbols)) { // a derived dim: its program over the symbols
        t.exprs.resize(t.dims.size());
        t.exprs[k] = std::move(*prog);
        continue;
      }
    AICC_CHECK(it != symbols.end(),
               "{} '{}' is {}: its dim {} is not a symbol of the inputs; fix the symbols with "
               "--dim NAME=VALUE",
               what, v->name, formatType(symbolic), k);
    t.syms.resize(t.dims.size(), -1);
    t.syms[k] = int32_t(it - symbols.begin());
  }
  return t;
}

} // namespace aicc::runtime::detail
