#include "ir/rewrite.h"

#include "ops/op_def.h"

#include <algorithm>
#include <functional>
#include <set>

namespace aicc {

void forEachGraph(Graph& g, const std::function<void(Graph&)>& f) {
  f(g);
  for (const auto& n : g.nodes)
    for (auto& [_, a] : n->attrs) {
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) forEachGraph(**sg, f);
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (auto& s : *sgs) forEachGraph(*s, f);
    }
}

std::vector<Use> usesOf(const Graph& g, const Value* v) {
  std::vector<Use> uses;
  forEachGraph(const_cast<Graph&>(g), [&](Graph& sg) {
    for (const auto& n : sg.nodes)
      for (size_t i = 0; i < n->inputs.size(); ++i)
        if (n->inputs[i] == v) uses.push_back({n.get(), i});
  });
  return uses;
}

std::map<const Value*, int64_t> useCounts(const Graph& g) {
  std::map<const Value*, int64_t> counts;
  forEachGraph(const_cast<Graph&>(g), [&](Graph& sg) {
    for (const auto& n : sg.nodes)
      for (const Value* v : n->inputs)
        if (v) ++counts[v];
    for (const Value* v : sg.outputs) ++counts[v];
  });
  return counts;
}

bool isGraphOutput(const Graph& g, const Value* v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

int64_t numUses(const Graph& g, const Value* v) {
  return static_cast<int64_t>(usesOf(g, v).size()) +
         std::count(g.outputs.begin(), g.outputs.end(), v);
}

void replaceAllUses(Graph& g, Value* from, Value* to) {
  if (from == to) return;
  forEachGraph(g, [&](Graph& sg) {
    for (const auto& n : sg.nodes)
      for (auto& in : n->inputs)
        if (in == from) in = to;
    if (&sg != &g) // subgraph outputs that are outer-scope values
      for (auto& o : sg.outputs)
        if (o == from) o = to;
  });
  if (!isGraphOutput(g, from)) return;
  bool plainNodeOutput = to->producer && to->owner == &g && !isGraphOutput(g, to);
  std::string outName = from->name;
  g.renameValue(from, g.uniqueName(outName + "_replaced"));
  Value* named = to;
  if (plainNodeOutput) {
    g.renameValue(to, outName);
  } else {
    Node* id = insertNode(g, nullptr, "Identity", {to}, 1, outName);
    named = id->outputs[0];
    g.renameValue(named, outName);
    named->type = to->type;
  }
  for (auto& o : g.outputs)
    if (o == from) o = named;
}

Node* insertNode(Graph& g, Node* before, const std::string& op, std::vector<Value*> inputs, int numOutputs,
                 const std::string& baseName, const std::string& domain) {
  std::vector<std::string> names;
  for (int i = 0; i < numOutputs; ++i) names.push_back(g.uniqueName(baseName));
  size_t pos = before ? nodeIndex(g, before) : g.nodes.size();
  Node* n = g.addNode(op, std::move(inputs), names, domain);
  n->def = OpRegistry::instance().find(domain, op);
  AICC_CHECK(n->def, "internal: op {} is not registered", op);
  auto owned = std::move(g.nodes.back());
  g.nodes.pop_back();
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(pos), std::move(owned));
  return n;
}

size_t nodeIndex(const Graph& g, const Node* n) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].get() == n) return i;
  fail("internal: node is not in graph '{}'", g.name);
}

void eraseNodes(Graph& g, const std::vector<Node*>& nodes) {
  std::set<const Node*> dead(nodes.begin(), nodes.end());
  std::erase_if(g.nodes, [&](const std::unique_ptr<Node>& n) { return dead.count(n.get()) > 0; });
  g.eraseUnusedValues();
}

std::string freshName(Graph& g, const std::string& base) {
  for (;;) {
    std::string n = g.uniqueName(base);
    bool clash = false;
    forEachGraph(g, [&](Graph& sg) { clash = clash || (&sg != &g && sg.lookupLocal(n)); });
    if (!clash) return n;
  }
}

bool canRedirectUses(const Graph& g, const Value* from, const Value* to) {
  bool ok = true;
  forEachGraph(const_cast<Graph&>(g), [&](Graph& sg) {
    if (&sg == &g || !ok) return;
    bool uses = std::find(sg.outputs.begin(), sg.outputs.end(), from) != sg.outputs.end();
    for (const auto& n : sg.nodes)
      uses = uses || std::find(n->inputs.begin(), n->inputs.end(), from) != n->inputs.end();
    if (!uses) return;
    for (const Graph* s = &sg; s && s != to->owner; s = s->parent)
      if (s->lookupLocal(to->name) && s->lookupLocal(to->name) != to) ok = false;
  });
  return ok;
}

Value* replaceByConstant(Graph& g, Value* v, Tensor t) {
  AICC_CHECK(v->owner == &g, "internal: value '{}' is not in graph '{}'", v->name, g.name);
  Value* c = nullptr;
  if (isGraphOutput(g, v)) {
    c = g.addConstant(freshName(g, v->name), std::move(t));
  } else {
    std::string name = v->name;
    g.renameValue(v, freshName(g, name + "_folded"));
    c = g.addConstant(name, std::move(t));
  }
  replaceAllUses(g, v, c);
  return c;
}

} // namespace aicc
