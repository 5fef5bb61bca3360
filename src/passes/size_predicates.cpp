#include "passes/size_predicates.h"

#include "interp/interpreter.h"
#include "ir/rewrite.h"
#include "ops/op_def.h"
#include "ops/shape_ops.h"
#include "passes/dim_steps.h"

#include <set>

namespace aicc {

namespace {

constexpr int64_t kMaxPoints = 4096;   // sizes a condition is evaluated at
constexpr int64_t kMaxElements = 4096; // elements of any value of its computation
constexpr size_t kMaxNodes = 64;       // nodes of its computation

int64_t product(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n = x > 0 && n > kMaxElements * 16 / x ? kMaxElements * 16 : n * x;
  return n;
}

// Whether v is computed from the sizes alone: constants, Shape and Size of values whose dims are
// expressions of symbols, and nodes (no subgraphs, nothing random) of such inputs. Collects the
// symbols the dims read.
class SizeOnly {
public:
  bool operator()(const Value* v) { return check(v); }
  std::set<std::string> symbols;

private:
  std::map<const Value*, bool> memo_;
  size_t nodes_ = 0;

  bool dimsKnown(const Value* x) {
    if (!x || !x->type.isTensor() || !x->type.shape) return false;
    for (const Dim& d : *x->type.shape) {
      if (d.isStatic()) continue;
      const auto e = dimExpr(d);
      if (!e) return false;
      std::vector<std::string> s;
      e->symbols(s);
      symbols.insert(s.begin(), s.end());
    }
    return true;
  }
  // A constant's value (an initializer, or a Constant node's tensor), or null.
  static const Tensor* constantOf(const Value* v) {
    if (v->isConstant()) return &*v->constant;
    const Node* p = v->producer;
    const Attribute* a = p && p->op == "Constant" && p->domain.empty() ? p->attr("value") : nullptr;
    return a ? std::get_if<Tensor>(&a->v) : nullptr;
  }
  // The dims of x a Gather(Shape(x), constant indices) picks.
  static std::optional<std::vector<int64_t>> pickedDims(const Node& g) {
    const Tensor* idx = g.hasInput(1) ? constantOf(g.inputs[1]) : nullptr;
    if (g.op != "Gather" || g.attrInt("axis", 0) != 0 || !idx || !g.inputs[0]->producer)
      return std::nullopt;
    const Node& sh = *g.inputs[0]->producer;
    if (sh.op != "Shape" || !sh.domain.empty() || !sh.hasInput(0) ||
        !sh.inputs[0]->type.isTensor() || !sh.inputs[0]->type.shape)
      return std::nullopt;
    const auto [b, e] = shapeRange(sh, int64_t(sh.inputs[0]->type.shape->size()));
    std::vector<int64_t> k = idx->toI64Vector();
    for (int64_t& i : k) {
      if (i < -(e - b) || i >= e - b) return std::nullopt;
      i = b + (i < 0 ? i + (e - b) : i);
    }
    return k;
  }
  bool check(const Value* v) {
    if (!v || v->isConstant()) return true;
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    const Node* p = v->producer;
    // (aicc.Fused: an elementwise chain of such nodes, fused at -O2; its meaning is its body.)
    const bool fused = p && p->domain == kAiccDomain && p->op == "Fused";
    bool ok = p && (p->domain.empty() || fused) && ++nodes_ <= kMaxNodes;
    if (ok && (p->op == "Shape" || p->op == "Size")) {
      ok = p->hasInput(0) && dimsKnown(p->inputs[0]);
    } else if (const auto picked = ok ? pickedDims(*p) : std::nullopt) {
      // (only the dims it picks read their symbols: dim 2 of [N, 128, T] reads T alone)
      const Value* x = p->inputs[0]->producer->inputs[0];
      for (int64_t k : *picked) {
        const Dim& d = (*x->type.shape)[size_t(k)];
        const auto e = d.isStatic() ? std::nullopt : dimExpr(d);
        if (!d.isStatic() && !e) ok = false;
        std::vector<std::string> syms;
        if (e) e->symbols(syms);
        symbols.insert(syms.begin(), syms.end());
      }
    } else if (ok) {
      ok = p->op.find("Random") == std::string::npos && p->op != "Bernoulli" &&
           p->op != "Multinomial";
      for (const auto& [_, a] : p->attrs)
        ok = ok && (fused || (!std::holds_alternative<GraphPtr>(a.v) &&
                              !std::holds_alternative<std::vector<GraphPtr>>(a.v)));
      for (const Value* o : p->outputs)
        if (o && o->type.isTensor() && o->type.shape)
          if (const auto d = toDims(*o->type.shape)) ok = ok && product(*d) <= kMaxElements;
      for (const Value* in : p->inputs) ok = ok && check(in);
    }
    memo_[v] = ok;
    return ok;
  }
};

// Evaluates a value SizeOnly accepted with the symbols at `at`; throws where the computation
// fails (a size the model cannot take).
class Evaluate {
public:
  explicit Evaluate(const std::map<std::string, int64_t>& at) : at_(at) {}
  const Tensor& operator()(const Value* v) { return eval(v).tensor; }

private:
  const std::map<std::string, int64_t>& at_;
  std::map<const Value*, RValue> memo_;

  std::vector<int64_t> dimsOf(const Value* x) {
    std::vector<int64_t> d;
    for (const Dim& dim : *x->type.shape) {
      if (dim.isStatic()) {
        d.push_back(dim.value);
        continue;
      }
      const auto e = dimExpr(dim);
      std::vector<std::string> syms;
      if (e) e->symbols(syms);
      if (!e || std::any_of(syms.begin(), syms.end(), [&](auto& s) { return !at_.count(s); })) {
        d.push_back(-1); // a dim of other symbols, which only a Gather that skips it reads
        continue;
      }
      const auto x1 = e->evaluate(at_);
      AICC_CHECK(x1 && *x1 >= 0, "value '{}' has no size here", x->name);
      d.push_back(*x1);
    }
    return d;
  }
  const RValue& eval(const Value* v) {
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    if (v->isConstant()) return memo_[v] = RValue::of(*v->constant);
    const Node& p = *v->producer;
    if (p.op == "Shape" || p.op == "Size") {
      const std::vector<int64_t> d = dimsOf(p.inputs[0]);
      if (p.op == "Size") {
        int64_t n = 1;
        for (int64_t x : d) n *= x;
        Tensor t(DType::I64, {});
        t.setI64(0, n);
        return memo_[v] = RValue::of(std::move(t));
      }
      const auto [b, e] = shapeRange(p, int64_t(d.size()));
      std::vector<int64_t> s(d.begin() + b, d.begin() + e);
      const int64_t n = int64_t(s.size());
      return memo_[v] = RValue::of(Tensor::fromI64(s, {n}));
    }
    for (const Value* in : p.inputs)
      if (in) eval(in);
    std::vector<RValue> outs =
        runReferenceKernel(p, [this](const Value* u) -> const RValue* { return &memo_.at(u); });
    for (size_t k = 0; k < p.outputs.size() && k < outs.size(); ++k)
      if (p.outputs[k]) memo_[p.outputs[k]] = std::move(outs[k]);
    AICC_CHECK(memo_.count(v), "node '{}' gave no value '{}'", p.describe(), v->name);
    return memo_.at(v);
  }
};

// A condition's value at every size of the one range its computation reads (sizes where it
// fails: nullopt); nullopt when it reads data, several ranges or too many sizes.
struct Samples {
  const SizeRange* range = nullptr;
  std::vector<int64_t> sizes;
  std::vector<std::optional<Tensor>> values;
};

std::optional<Samples> sample(const Value* cond, const std::vector<SizeRange>& ranges) {
  SizeOnly only;
  if (!cond || cond->isConstant() || !only(cond) || only.symbols.empty()) return std::nullopt;
  const SizeRange* range = nullptr;
  for (const std::string& s : only.symbols) {
    const SizeRange* r = nullptr;
    for (const SizeRange& x : ranges)
      if (s == x.name || (x.step > 1 && s == stepSymbol(x.name, x.step))) r = &x;
    if (!r || (range && r != range)) return std::nullopt; // data symbols, or two ranges
    range = r;
  }
  const int64_t step = std::max<int64_t>(range->step, 1);
  const int64_t lo = (range->lo + step - 1) / step * step;
  if (range->hi < lo || (range->hi - lo) / step >= kMaxPoints) return std::nullopt;
  Samples s;
  s.range = range;
  for (int64_t x = lo; x <= range->hi; x += step) {
    std::map<std::string, int64_t> at;
    setSymbolValue(at, range->name, step, x);
    s.sizes.push_back(x);
    try {
      s.values.push_back(Evaluate(at)(cond));
    } catch (const Error&) {
      s.values.push_back(std::nullopt);
    }
  }
  return s;
}

// The Ifs of g and its subgraphs, outermost first.
void collectIfs(Graph& g, std::vector<Node*>& out) {
  for (const auto& n : g.nodes) {
    if (n->op == "If" && n->domain.empty() && n->hasInput(0)) out.push_back(n.get());
    for (auto& [_, a] : n->attrs) {
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) collectIfs(**sg, out);
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (auto& s : *sgs) collectIfs(*s, out);
    }
  }
}

// The pieces of the range over which the samples are one value (a failing size joins the piece
// before it, or the first).
std::vector<std::pair<std::pair<int64_t, int64_t>, const Tensor*>> pieces(const Samples& s) {
  std::vector<std::pair<std::pair<int64_t, int64_t>, const Tensor*>> out;
  for (size_t i = 0; i < s.sizes.size(); ++i) {
    const Tensor* t = s.values[i] ? &*s.values[i] : nullptr;
    if (!out.empty() && (!t || !out.back().second || out.back().second->sameAs(*t))) {
      out.back().first.second = s.sizes[i];
      if (!out.back().second) out.back().second = t;
    } else {
      out.push_back({{s.sizes[i], s.sizes[i]}, t});
    }
  }
  if (!out.empty()) out.front().first.first = s.range->lo, out.back().first.second = s.range->hi;
  return out;
}

} // namespace

bool foldSizePredicates(Model& m, const std::vector<SizeRange>& ranges,
                        std::optional<SizeSplit>* split) {
  if (split) split->reset();
  if (ranges.empty()) return false;
  std::vector<Node*> ifs;
  collectIfs(*m.graph, ifs);
  bool changed = false;
  for (Node* n : ifs) {
    Value* cond = n->inputs[0];
    if (!cond->producer) continue; // (a graph input, or already a constant)
    const auto s = sample(cond, ranges);
    if (!s) continue;
    const auto p = pieces(*s);
    if (p.size() == 1 && p[0].second) { // one value over the range (else: it never runs)
      replaceByConstant(*cond->owner, cond, p[0].second->clone());
      changed = true;
    } else if (p.size() > 1 && split && !*split) { // the first that changes
      *split = SizeSplit{n->describe(), s->range->name, {}};
      for (const auto& [r, _] : p) (*split)->pieces.push_back(r);
    }
  }
  return changed;
}

} // namespace aicc
