// Dead-code elimination. Liveness flows backwards from each graph's outputs: a node is live when
// one of its outputs is live; a live node makes its inputs live and, for its subgraphs (cleaned
// first, recursively), every outer-scope value they still refer to. Dead nodes (random ops
// included: ONNX ops have no side effects) and constants nothing refers to are removed.
#include "passes/dead_code_elimination.h"

#include "ir/rewrite.h"

#include <set>

namespace aicc {
namespace {

struct Counts {
  size_t nodes = 0, constants = 0;
};

void subgraphsOf(Node& n, std::vector<Graph*>& out) {
  for (auto& [_, a] : n.attrs) {
    if (auto* sg = std::get_if<GraphPtr>(&a.v)) out.push_back(sg->get());
    if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
      for (auto& s : *sgs) out.push_back(s.get());
  }
}

// Values referred to from inside `sg` (node inputs, outputs, nested graphs) that are defined
// outside it.
void freeValues(Graph& sg, std::set<const Value*>& out) {
  std::set<const Graph*> inside;
  forEachGraph(sg, [&](Graph& g) { inside.insert(&g); });
  forEachGraph(sg, [&](Graph& g) {
    for (const auto& n : g.nodes)
      for (const Value* v : n->inputs)
        if (v && !inside.count(v->owner)) out.insert(v);
    for (const Value* v : g.outputs)
      if (v && !inside.count(v->owner)) out.insert(v);
  });
}

void count(Graph& root, Counts& c) {
  forEachGraph(root, [&](Graph& g) {
    c.nodes += g.nodes.size();
    c.constants += g.constants.size();
  });
}

void eliminate(Graph& g) {
  std::set<const Value*> live(g.outputs.begin(), g.outputs.end());
  std::vector<Node*> dead;
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    Node& n = **it;
    bool isLive = false;
    for (const Value* o : n.outputs) isLive = isLive || (o && live.count(o));
    if (!isLive) {
      dead.push_back(&n);
      continue;
    }
    live.insert(n.inputs.begin(), n.inputs.end());
    std::vector<Graph*> subs;
    subgraphsOf(n, subs);
    for (Graph* sg : subs) {
      eliminate(*sg);
      freeValues(*sg, live);
    }
  }
  if (!dead.empty())
    eraseNodes(g, dead);
  else
    g.eraseUnusedValues();
}

} // namespace

bool eliminateDeadCode(Model& m) {
  Counts before, after;
  count(*m.graph, before);
  eliminate(*m.graph);
  count(*m.graph, after);
  return before.nodes != after.nodes || before.constants != after.constants;
}

} // namespace aicc
