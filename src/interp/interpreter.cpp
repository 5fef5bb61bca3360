#include "interp/interpreter.h"

#include <set>
#include <unordered_map>

namespace aicc {
namespace {

struct Env {
  const Env* parent = nullptr;
  std::unordered_map<const Value*, RValue> vals;
  const OuterLookup* outer = nullptr; // values of enclosing graphs run by another engine

  const RValue* find(const Value* v) const {
    for (const Env* e = this; e; e = e->parent) {
      auto it = e->vals.find(v);
      if (it != e->vals.end()) return &it->second;
      if (!e->parent && e->outer && *e->outer) return (*e->outer)(v);
    }
    return nullptr;
  }
};

std::string describeRValue(const RValue& v) {
  switch (v.kind) {
  case RValue::Kind::None: return "an empty optional";
  case RValue::Kind::Sequence:
    return v.isMapSeq() ? fmt::format("a sequence of {} maps", v.maps.size())
                        : fmt::format("a sequence of {} tensors", v.seq.size());
  case RValue::Kind::Map:
    return fmt::format("a map of {} entries", v.seq[0].numel());
  case RValue::Kind::Tensor:
    return fmt::format("{}{}", dtypeName(v.tensor.dtype()), formatDims(v.tensor.shape()));
  }
  return "?";
}

// Does runtime value `v` agree with static type `t`? Symbolic dims are bound in `syms`.
bool matchesType(const RValue& v, const Type& t, std::map<std::string, int64_t>* syms) {
  if (t.kind == Type::Kind::Unknown) return true;
  if (t.kind == Type::Kind::Optional) return v.kind == RValue::Kind::None || matchesType(v, *t.elem, syms);
  if (t.kind == Type::Kind::Sequence) {
    if (v.kind != RValue::Kind::Sequence) return false;
    for (const RValue& m : v.maps)
      if (!matchesType(m, *t.elem, syms)) return false;
    return true; // element shapes may differ between elements
  }
  if (t.kind == Type::Kind::Map)
    return v.kind == RValue::Kind::Map &&
           (t.dtype == DType::Undefined || v.seq[0].dtype() == t.dtype) &&
           (!t.elem || t.elem->dtype == DType::Undefined || v.seq[1].dtype() == t.elem->dtype);
  if (v.kind != RValue::Kind::Tensor) return false;
  if (t.dtype != DType::Undefined && t.dtype != v.tensor.dtype()) return false;
  if (!t.shape) return true;
  if (t.shape->size() != v.tensor.shape().size()) return false;
  for (size_t i = 0; i < t.shape->size(); ++i) {
    const Dim& d = (*t.shape)[i];
    int64_t actual = v.tensor.shape()[i];
    if (d.isStatic() && d.value != actual) return false;
    if (d.derived) { // an expression of symbols: checked once they are all bound
      auto e = dimExpr(d);
      auto want = e && syms ? e->evaluate(*syms) : std::nullopt;
      if (want && *want != actual) return false;
      continue;
    }
    if (!d.isStatic() && !d.symbol.empty() && syms) {
      auto [it, inserted] = syms->emplace(d.symbol, actual);
      if (!inserted && it->second != actual) return false;
    }
  }
  return true;
}

// Values referenced from inside subgraphs of `g`'s nodes (outer-scope uses).
void collectOuterUses(const Graph& g, std::set<const Value*>& out) {
  for (const auto& n : g.nodes)
    for (const auto& [_, a] : n->attrs) {
      auto scan = [&](const GraphPtr& sg) {
        for (const auto& sn : sg->nodes) out.insert(sn->inputs.begin(), sn->inputs.end());
        out.insert(sg->outputs.begin(), sg->outputs.end());
        collectOuterUses(*sg, out);
      };
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) scan(*sg);
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& s : *sgs) scan(s);
    }
}

std::vector<RValue> runGraph(const Graph& g, const std::vector<RValue>& inputs, const Env* parent,
                             const RunOptions& opts, const OuterLookup* outer = nullptr) {
  AICC_CHECK(inputs.size() == g.inputs.size(), "graph '{}' takes {} inputs, got {}", g.name,
             g.inputs.size(), inputs.size());
  Env env;
  env.parent = parent;
  env.outer = outer;
  for (size_t i = 0; i < inputs.size(); ++i) env.vals[g.inputs[i]] = inputs[i];

  // Free each intermediate after its last direct use, unless a subgraph or the output needs it.
  std::set<const Value*> keep(g.outputs.begin(), g.outputs.end());
  collectOuterUses(g, keep);
  std::unordered_map<const Value*, size_t> lastUse;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const Value* v : g.nodes[i]->inputs)
      if (v) lastUse[v] = i;

  auto fetch = [&](const Value* v) -> const RValue* {
    if (const RValue* r = env.find(v)) return r;
    if (v->constant) return &env.vals.emplace(v, RValue::of(*v->constant)).first->second;
    return nullptr;
  };

  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = *g.nodes[ni];
    std::vector<const RValue*> args;
    for (const Value* v : n.inputs) {
      if (!v) {
        args.push_back(nullptr);
        continue;
      }
      const RValue* r = fetch(v);
      AICC_CHECK(r, "{}: input '{}' has no value", n.describe(), v->name);
      args.push_back(r);
    }
    AICC_CHECK(n.def && n.def->kernel, "{}: no reference kernel", n.describe());
    KernelCtx ctx(n, std::move(args), [&](const Graph& sg, const std::vector<RValue>& in) {
      return runGraph(sg, in, &env, opts);
    });
    std::vector<RValue> outs;
    try {
      outs = n.def->kernel(ctx);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", n.describe(), e.what()));
    }
    AICC_CHECK(outs.size() >= n.outputs.size() || outs.size() >= static_cast<size_t>(n.def->minOutputs),
               "{}: kernel returned {} outputs for {}", n.describe(), outs.size(), n.outputs.size());
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value* o = n.outputs[i];
      if (!o) continue;
      AICC_CHECK(i < outs.size(), "{}: kernel did not produce output {}", n.describe(), i);
      if (opts.checkTypes && !matchesType(outs[i], o->type, nullptr))
        fail("{}: output '{}' is {} but shape inference said {}", n.describe(), o->name,
             describeRValue(outs[i]), formatType(o->type));
      env.vals[o] = std::move(outs[i]);
    }
    for (const Value* v : n.inputs)
      if (v && lastUse[v] == ni && !keep.count(v) && v->owner == &g) env.vals.erase(v);
  }

  std::vector<RValue> results;
  for (const Value* o : g.outputs) {
    const RValue* r = fetch(o);
    AICC_CHECK(r, "graph '{}': output '{}' was never computed", g.name, o->name);
    results.push_back(*r);
  }
  return results;
}

} // namespace

void checkGraphInputs(const Graph& g, const std::vector<RValue>& inputs) {
  AICC_CHECK(inputs.size() == g.inputs.size(), "the model takes {} inputs, got {}", g.inputs.size(),
             inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = g.inputs[i];
    if (!matchesType(inputs[i], v->type, nullptr))
      fail("input '{}': expected {}, got {}", v->name, formatType(v->type), describeRValue(inputs[i]));
  }
}

std::vector<RValue> interpret(const Graph& g, const std::vector<RValue>& inputs, const RunOptions& opts) {
  checkGraphInputs(g, inputs);
  return runGraph(g, inputs, nullptr, opts);
}

std::vector<RValue> runReferenceKernel(const Node& n, const OuterLookup& fetch) {
  std::vector<const RValue*> args;
  for (const Value* v : n.inputs) {
    const RValue* r = v ? fetch(v) : nullptr;
    AICC_CHECK(!v || r, "{}: input '{}' has no value", n.describe(), v ? v->name : "");
    args.push_back(r);
  }
  AICC_CHECK(n.def && n.def->kernel, "{}: no reference kernel", n.describe());
  KernelCtx ctx(n, std::move(args), [&](const Graph& sg, const std::vector<RValue>& in) {
    return runGraph(sg, in, nullptr, {}, &fetch);
  });
  try {
    return n.def->kernel(ctx);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", n.describe(), e.what()));
  }
}

std::vector<RValue> interpretSubgraph(const Graph& g, const std::vector<RValue>& inputs,
                                      const OuterLookup& outer, const RunOptions& opts) {
  return runGraph(g, inputs, nullptr, opts, &outer);
}

} // namespace aicc
