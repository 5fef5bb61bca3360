// The "simplify" pass driver: pattern families (simplify_patterns_*.cpp) applied over every
// graph until no pattern fires, then the nodes the rewrites made dead are erased (dead code that
// was there before is left to dce). Also the shared matching/rewriting helpers.
#include "passes/algebraic_simplify.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"
#include "passes/shape_inference.h"
#include "passes/simplify_patterns.h"

#include <set>

namespace aicc {

namespace simplify {

// A constant's data, or the `value` of a Constant node (before constant folding turned it into
// a constant); nullptr for anything else or an elided constant.
const Tensor* constData(const Value* v) {
  if (!v) return nullptr;
  if (v->constant) return v->constant->defined() ? &*v->constant : nullptr;
  const Node* p = v->producer;
  if (!p || p->op != "Constant" || !p->domain.empty() || p->outputs.size() != 1) return nullptr;
  const Attribute* a = p->attr("value");
  const Tensor* t = a ? std::get_if<Tensor>(&a->v) : nullptr;
  return t && t->defined() ? t : nullptr;
}

bool allEqual(const Tensor& t, double x) {
  if (t.numel() == 0 || t.dtype() == DType::String || isComplex(t.dtype())) return false;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.getF64(i) != x) return false;
  return true;
}

std::optional<std::vector<int64_t>> constInts(const Value* v) {
  const Tensor* t = constData(v);
  if (!t || !isInteger(t->dtype()) || t->rank() > 1) return std::nullopt;
  return t->toI64Vector();
}

Node* producerOf(const Graph& g, const Value* v, const char* op) {
  if (!v || !v->producer || v->producer->owner != &g) return nullptr;
  Node* p = v->producer;
  return p->op == op && p->domain.empty() ? p : nullptr;
}

DType dtypeOf(const Value* v) { return v && v->type.isTensor() ? v->type.dtype : DType::Undefined; }

std::optional<Shape> knownShape(const Value* v) {
  if (!v || !v->type.isTensor() || !v->type.shape) return std::nullopt;
  for (const Dim& d : *v->type.shape)
    if (!d.isStatic() && d.symbol.empty()) return std::nullopt;
  return v->type.shape;
}

std::optional<Dims> staticDims(const Value* v) {
  if (!v || !v->type.isTensor() || !v->type.shape) return std::nullopt;
  return toDims(*v->type.shape);
}

std::optional<int64_t> rankOf(const Value* v) {
  if (!v || !v->type.isTensor() || !v->type.shape) return std::nullopt;
  return static_cast<int64_t>(v->type.shape->size());
}

bool sameKnownShape(const Value* a, const Value* b) {
  auto sa = knownShape(a), sb = knownShape(b);
  return sa && sb && *sa == *sb;
}

std::optional<std::vector<int64_t>> transposePerm(const Node& n) {
  if (const Attribute* a = n.attr("perm")) {
    if (const auto* p = std::get_if<std::vector<int64_t>>(&a->v)) {
      // Validate: a permutation of 0..r-1.
      std::vector<bool> seen(p->size(), false);
      for (int64_t x : *p) {
        if (x < 0 || x >= static_cast<int64_t>(p->size()) || seen[static_cast<size_t>(x)])
          return std::nullopt;
        seen[static_cast<size_t>(x)] = true;
      }
      auto r = rankOf(n.inputs[0]);
      if (r && *r != static_cast<int64_t>(p->size())) return std::nullopt;
      return *p;
    }
    return std::nullopt;
  }
  auto r = rankOf(n.inputs[0]);
  if (!r) return std::nullopt;
  std::vector<int64_t> p;
  for (int64_t i = *r - 1; i >= 0; --i) p.push_back(i);
  return p;
}

bool isIdentityPerm(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

bool replaceValue(Graph& g, Value* from, Value* to) {
  if (!from || !to || from == to || numUses(g, from) == 0) return false;
  const bool isOut = isGraphOutput(g, from);
  if (isOut && !(to->producer && to->owner == &g && !isGraphOutput(g, to))) return false;
  Type outType = from->type;
  replaceAllUses(g, from, to);
  if (isOut) to->type = outType;
  return true;
}

Value* addConstant(Graph& g, Tensor t, const std::string& base) {
  return g.addConstant(g.uniqueName(base), std::move(t));
}

void inferNodeTypes(Node& n) {
  if (!n.def || !n.def->infer) return;
  ShapeValues sv;
  InferCtx ctx(n, sv);
  n.def->infer(ctx);
}

std::string hintFor(const Node& n) {
  if (!n.name.empty()) return n.name;
  if (!n.outputs.empty() && n.outputs[0]) return n.outputs[0]->name;
  return n.op;
}

} // namespace simplify

namespace {

using namespace simplify;

const std::vector<PatternFamily>& families() {
  static const std::vector<PatternFamily> kFamilies = {identityOpPatterns(), arithmeticPatterns(),
                                                       shapeChainPatterns(), castChainPatterns(),
                                                       sinkingPatterns()};
  return kFamilies;
}

// A node whose outputs are all unused (a node with no outputs at all is never "dead").
bool isDead(const Node& n, const std::map<const Value*, int64_t>& uses) {
  bool any = false;
  for (const Value* o : n.outputs) {
    if (!o) continue;
    any = true;
    auto it = uses.find(o);
    if (it != uses.end() && it->second > 0) return false;
  }
  return any;
}

std::set<const Node*> deadNodes(const Graph& g) {
  auto uses = useCounts(g);
  std::set<const Node*> dead;
  for (const auto& n : g.nodes)
    if (isDead(*n, uses)) dead.insert(n.get());
  return dead;
}

// Erases the nodes that are dead now but were not dead before the pass (cascading backwards).
void eraseNewlyDead(Graph& g, const std::set<const Node*>& deadBefore) {
  auto uses = useCounts(g);
  std::vector<Node*> erase;
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    Node* n = it->get();
    if (deadBefore.count(n) || !isDead(*n, uses)) continue;
    erase.push_back(n);
    for (const Value* in : n->inputs)
      if (in) --uses[in];
  }
  if (!erase.empty()) eraseNodes(g, erase);
}

bool sweep(Graph& g) {
  bool changed = false;
  auto uses = useCounts(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = *g.nodes[i];
    if (isDead(n, uses)) continue; // nothing to gain; erased at the end of the round
    bool fired = false;
    for (const auto& fam : families()) {
      for (const auto& p : fam.patterns)
        if ((fired = p.fn(g, n))) break;
      if (fired) break;
    }
    if (fired) {
      changed = true; // the node was rewritten; later nodes see the new graph
      uses = useCounts(g);
    }
  }
  return changed;
}

} // namespace

bool simplifyAlgebra(Model& m) {
  std::map<const Graph*, std::set<const Node*>> deadBefore;
  forEachGraph(*m.graph, [&](Graph& g) { deadBefore[&g] = deadNodes(g); });
  bool changed = false;
  for (int iter = 0; iter < 64; ++iter) {
    bool round = false;
    forEachGraph(*m.graph, [&](Graph& g) {
      if (!sweep(g)) return;
      round = true;
      eraseNewlyDead(g, deadBefore[&g]);
    });
    if (!round) break;
    changed = true;
  }
  return changed;
}

} // namespace aicc
