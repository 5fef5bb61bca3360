#include "autodiff/remat.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"
#include "passes/dead_code_elimination.h"
#include "passes/memory_schedule.h"
#include "passes/shape_inference.h"

#include <functional>
#include <map>

namespace aicc {
namespace {

constexpr int kMaxChain = 3; // longest chain of cheap ops recomputed for one value

bool hasSubgraph(const Node& n) {
  for (const auto& [_, a] : n.attrs)
    if (a.kind() == Attribute::Kind::Graph || a.kind() == Attribute::Kind::Graphs) return true;
  return false;
}

// Elementwise or injective, deterministic, one output: recomputing it costs one pass over memory.
bool isCheap(const Node& n) {
  if (!n.def || n.outputs.size() != 1 || !n.outputs[0] || hasSubgraph(n)) return false;
  const uint32_t p = n.def->props;
  return (p & (kElementwise | kInjective)) && !(p & (kNondeterministic | kShapeOnly));
}

// Forward values read by the backward nodes.
std::set<const Value*> savedValues(const std::vector<Node*>& backward,
                                   const std::set<const Node*>& forward) {
  std::set<const Value*> saved;
  for (const Node* b : backward)
    for (const Value* v : b->inputs)
      if (v && v->producer && forward.count(v->producer)) saved.insert(v);
  return saved;
}

int64_t totalBytes(const std::set<const Value*>& vs) {
  int64_t sum = 0;
  for (const Value* v : vs) {
    auto d = v->type.isTensor() && v->type.shape ? toDims(*v->type.shape) : std::nullopt;
    if (d && v->type.dtype != DType::String)
      sum += checkedNumel(*d) * static_cast<int64_t>(dtypeSize(v->type.dtype));
  }
  return sum;
}

} // namespace

RematStats rematerialize(Model& m, const std::set<const Node*>& forwardNodes) {
  Graph& g = *m.graph;
  RematStats st;
  // Only nodes still in the graph (the set may hold addresses of erased nodes, which new nodes
  // could reuse).
  std::set<const Node*> forward;
  for (const auto& n : g.nodes)
    if (forwardNodes.count(n.get())) forward.insert(n.get());
  st.peakBytesBefore = peakMemoryBytes(g);
  std::vector<Node*> backward;
  for (const auto& n : g.nodes)
    if (!forward.count(n.get())) backward.push_back(n.get());
  const std::set<const Value*> saved = savedValues(backward, forward);
  st.savedValuesBefore = static_cast<int64_t>(saved.size());
  st.savedBytesBefore = totalBytes(saved);
  const std::set<const Value*> outputs(g.outputs.begin(), g.outputs.end());

  // Values the backward part has without keeping a forward result alive for it.
  auto available = [&](const Value* v) {
    return !v->producer || !forward.count(v->producer) || outputs.count(v) || saved.count(v);
  };
  std::function<bool(const Value*, int)> recomputable = [&](const Value* v, int depth) {
    const Node* p = v->producer;
    if (depth > kMaxChain || !p || !forward.count(p) || outputs.count(v) || !isCheap(*p))
      return false;
    for (const Value* u : p->inputs)
      if (u && !available(u) && !recomputable(u, depth + 1)) return false;
    return true;
  };
  std::set<const Value*> recompute;
  for (const Value* v : saved)
    if (recomputable(v, 1)) recompute.insert(v);
  st.recomputedValues = static_cast<int64_t>(recompute.size());
  if (recompute.empty()) {
    st.savedValuesAfter = st.savedValuesBefore;
    st.savedBytesAfter = st.savedBytesBefore;
    st.peakBytesAfter = st.peakBytesBefore;
    return st;
  }

  // The recomputed copy of v, created before `before` (the first backward reader asking for it;
  // backward nodes are visited in order, so every later reader comes after the copy).
  std::map<const Value*, Value*> copy;
  std::function<Value*(Value*, Node*)> materialize = [&](Value* v, Node* before) -> Value* {
    if (auto it = copy.find(v); it != copy.end()) return it->second;
    if (available(v) && !recompute.count(v)) return v;
    Node* p = v->producer;
    std::vector<Value*> ins;
    for (Value* u : p->inputs) ins.push_back(u ? materialize(u, before) : nullptr);
    Node* n = insertNode(g, before, p->op, std::move(ins), 1, "remat/" + v->name, p->domain);
    n->name = "remat/" + (p->name.empty() ? v->name : p->name);
    n->attrs = p->attrs;
    n->outputs[0]->type = v->type;
    ++st.addedNodes;
    return copy[v] = n->outputs[0];
  };
  for (Node* b : backward)
    for (Value*& in : b->inputs)
      if (in && recompute.count(in)) in = materialize(in, b);

  inferShapes(g);
  eliminateDeadCode(m);
  std::vector<Node*> backwardAfter;
  for (const auto& n : g.nodes)
    if (!forward.count(n.get())) backwardAfter.push_back(n.get());
  const std::set<const Value*> savedAfter = savedValues(backwardAfter, forward);
  st.savedValuesAfter = static_cast<int64_t>(savedAfter.size());
  st.savedBytesAfter = totalBytes(savedAfter);
  st.peakBytesAfter = peakMemoryBytes(g);
  return st;
}

} // namespace aicc
