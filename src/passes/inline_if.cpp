// inline-if: an If whose condition is a constant is replaced by the nodes of the branch it takes;
// the other branch is dropped. Exporters emit such Ifs around shape checks (silero-vad's "squeeze
// if dim 0 is 1"): once the input shapes are known, fold-shapes and constant-fold turn their
// conditions into constants, and inlining them gives the later passes, and the backend, one flat
// graph with static shapes.
//
// The branch's values move into the enclosing graph (Graph::adoptValue keeps every pointer, so
// references from nested subgraphs still hold) under their names, or fresh ones where those are
// taken; its nodes take the If's place, in order, and the If's results are replaced by the
// branch's results. Nodes moved in are visited next, so nested Ifs on constants go too.
#include "passes/inline_if.h"

#include "ir/rewrite.h"

namespace aicc {
namespace {

// The branch a constant-condition If takes, or nullptr.
GraphPtr takenBranch(const Node& n) {
  if (n.op != "If" || !n.domain.empty() || !n.hasInput(0)) return nullptr;
  const Value* c = n.inputs[0];
  if (!c->constant || c->constant->numel() != 1) return nullptr;
  const Attribute* a = n.attr(c->constant->getF64(0) != 0 ? "then_branch" : "else_branch");
  const GraphPtr* g = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
  if (!g || !*g || !(*g)->inputs.empty() || (*g)->outputs.size() != n.outputs.size()) return nullptr;
  return *g;
}

void inlineBranch(Graph& g, size_t at, GraphPtr branch) {
  Node* n = g.nodes[at].get();
  n->attrs.erase("then_branch"); // detached first: freshName must not see the branch's names
  n->attrs.erase("else_branch");
  std::vector<Value*> results = branch->outputs;
  branch->outputs.clear();
  std::vector<Value*> values;
  for (const auto& v : branch->values()) values.push_back(v.get());
  for (Value* v : values) { // keep the name where nothing in g's scope or subgraphs has it
    bool clash = g.lookup(v->name) != nullptr;
    forEachGraph(g, [&](Graph& sg) { clash = clash || (&sg != &g && sg.lookupLocal(v->name)); });
    g.adoptValue(*branch, v, clash ? freshName(g, v->name) : v->name);
  }
  std::vector<std::unique_ptr<Node>> moved = std::move(branch->nodes);
  for (auto& m : moved) {
    m->owner = &g;
    for (auto& [_, a] : m->attrs) {
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) (*sg)->parent = &g;
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (auto& s : *sgs) s->parent = &g;
    }
  }
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at),
                 std::make_move_iterator(moved.begin()), std::make_move_iterator(moved.end()));
  for (size_t i = 0; i < n->outputs.size(); ++i) {
    Value* out = n->outputs[i];
    if (!out) continue;
    Value* to = results[i];
    if (!canRedirectUses(g, out, to)) // a subgraph shadows the result's name: go through a copy
      to = insertNode(g, n, "Identity", {to}, 1, out->name)->outputs[0];
    replaceAllUses(g, out, to);
  }
  eraseNodes(g, {n});
}

bool inlineIn(Graph& g) {
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size();) {
    if (GraphPtr b = takenBranch(*g.nodes[i])) {
      inlineBranch(g, i, std::move(b)); // the branch's first node (if any) now sits at i
      changed = true;
      continue;
    }
    for (auto& [_, a] : g.nodes[i]->attrs) {
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) changed |= inlineIn(**sg);
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (auto& s : *sgs) changed |= inlineIn(*s);
    }
    ++i;
  }
  return changed;
}

} // namespace

bool inlineConstantIfs(Model& m) { return inlineIn(*m.graph); }

} // namespace aicc
