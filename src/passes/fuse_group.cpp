#include "passes/fuse_group.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"

#include <algorithm>
#include <set>

namespace aicc {

bool hasSubgraphs(const Node& n) {
  for (const auto& [_, a] : n.attrs)
    if (a.kind() == Attribute::Kind::Graph || a.kind() == Attribute::Kind::Graphs) return true;
  return false;
}

bool isFusedNode(const Node& n) { return n.domain == kAiccDomain && n.op == "Fused"; }

std::vector<Graph*> fusionScopes(Graph& g) {
  std::vector<Graph*> out{&g};
  for (const auto& n : g.nodes) {
    if (isFusedNode(*n)) continue;
    for (auto& [_, a] : n->attrs) {
      std::vector<GraphPtr> subs;
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) subs.push_back(*sg);
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v)) subs = *sgs;
      for (const auto& s : subs)
        if (s)
          for (Graph* x : fusionScopes(*s)) out.push_back(x);
    }
  }
  return out;
}

bool isProvableShape(const Type& t) {
  if (!t.isTensor() || !t.shape) return false;
  for (const Dim& d : *t.shape)
    if (!d.isStatic() && d.symbol.empty()) return false;
  return true;
}

bool sameProvableShape(const Type& a, const Type& b) {
  return isProvableShape(a) && isProvableShape(b) && *a.shape == *b.shape;
}

static bool sameDim(const Dim& a, const Dim& b) {
  return a.isStatic() ? b.isStatic() && a.value == b.value
                      : !a.symbol.empty() && a.symbol == b.symbol;
}

const Value* ShapeOracle::source(const Node& n) {
  if (n.outputs.size() != 1 || n.inputs.empty()) return nullptr;
  if (n.domain.empty() && n.op == "Identity") return n.inputs[0];
  if (!n.def || !(n.def->props & kElementwise)) return nullptr;
  if (n.op == "CastLike" || n.inputs.size() == 1) return n.inputs[0]; // output shape = input 0
  for (const Value* cand : n.inputs) {
    if (!cand || !cand->type.isTensor() || !cand->type.shape) continue;
    const Shape& cs = *cand->type.shape;
    bool dominates = true;
    for (const Value* o : n.inputs) {
      if (!o || o == cand) continue;
      if (!o->type.isTensor() || !o->type.shape || o->type.shape->size() > cs.size()) {
        dominates = false;
        break;
      }
      const Shape& os = *o->type.shape;
      for (size_t j = 0; j < os.size() && dominates; ++j) {
        const Dim& d = os[j];
        dominates = (d.isStatic() && d.value == 1) || sameDim(d, cs[cs.size() - os.size() + j]);
      }
      if (!dominates) dominates = same(o, cand);
      if (!dominates) break;
    }
    if (dominates) return cand;
  }
  return nullptr;
}

const Value* ShapeOracle::canon(const Value* v) {
  auto it = canon_.find(v);
  if (it != canon_.end()) return it->second;
  const Value* s = v->producer ? source(*v->producer) : nullptr;
  const Value* c = s ? canon(s) : v; // sources are defined earlier: this terminates
  canon_[v] = c;
  return c;
}

bool ShapeOracle::same(const Value* a, const Value* b) {
  if (!a || !b || !a->type.isTensor() || !b->type.isTensor() || !a->type.shape || !b->type.shape)
    return false;
  if (a->type.shape->size() != b->type.shape->size()) return false;
  if (sameProvableShape(a->type, b->type)) return true;
  const Value* ca = canon(a);
  const Value* cb = canon(b);
  return ca == cb || sameProvableShape(ca->type, cb->type);
}

namespace {

bool copyIntoBody(const Value* v) {
  return v->isConstant() && v->constant->defined() && v->constant->numel() <= kMaxBodyConstantElems;
}

// `name` if it is free in the body, else a fresh name derived from it.
std::string bodyName(Graph& body, const std::string& name) {
  return body.lookupLocal(name) ? body.uniqueName(name) : name;
}

} // namespace

Node* fuseGroup(Graph& g, std::vector<Node*> group, const std::string& kind,
                std::map<const Value*, int64_t>& counts) {
  AICC_CHECK(!group.empty(), "internal: empty fusion group");
  std::map<const Node*, size_t> pos;
  for (size_t i = 0; i < g.nodes.size(); ++i) pos[g.nodes[i].get()] = i;
  for (Node* n : group) AICC_CHECK(pos.count(n), "internal: fusion group node is not in the graph");
  std::sort(group.begin(), group.end(), [&](Node* a, Node* b) { return pos[a] < pos[b]; });
  Node* last = group.back();
  std::set<const Node*> inGroup(group.begin(), group.end());

  // Uses of each value by group nodes (input slots).
  std::map<const Value*, int64_t> groupUses;
  for (Node* n : group)
    for (Value* v : n->inputs)
      if (v) ++groupUses[v];

  // Values produced in the group and used outside it: only the last node's may be.
  std::vector<Value*> escaping;
  for (Node* n : group)
    for (Value* o : n->outputs) {
      if (!o) continue;
      auto it = counts.find(o);
      int64_t total = it == counts.end() ? 0 : it->second;
      if (total > groupUses[o]) {
        if (n != last) return nullptr;
        escaping.push_back(o);
      }
    }
  if (escaping.empty()) return nullptr; // dead group: leave it to DCE

  auto body = std::make_shared<Graph>();
  body->name = kind;
  body->parent = &g;
  std::map<const Value*, Value*> vm;
  std::vector<Value*> extInputs;
  for (Node* n : group) {
    std::vector<Value*> ins;
    for (Value* v : n->inputs) {
      if (!v) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = vm.find(v);
      if (it == vm.end()) { // read from outside the group
        Value* bv = copyIntoBody(v) ? body->addConstant(bodyName(*body, v->name), *v->constant)
                                    : body->addInput(bodyName(*body, v->name), v->type);
        if (!copyIntoBody(v)) extInputs.push_back(v);
        it = vm.emplace(v, bv).first;
      }
      ins.push_back(it->second);
    }
    std::vector<std::string> outNames;
    for (Value* o : n->outputs) outNames.push_back(o ? bodyName(*body, o->name) : "");
    Node* bn = body->addNode(n->op, std::move(ins), outNames, n->domain);
    bn->def = n->def;
    bn->name = n->name;
    bn->attrs = n->attrs;
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) {
        bn->outputs[i]->type = n->outputs[i]->type;
        vm[n->outputs[i]] = bn->outputs[i];
      }
  }
  for (Value* o : escaping) body->outputs.push_back(vm.at(o));

  // The Fused node takes over the escaping values (same names, types and outside uses).
  Node* fused = g.addNode("Fused", extInputs, {}, kAiccDomain);
  fused->def = OpRegistry::instance().find(kAiccDomain, "Fused");
  AICC_CHECK(fused->def, "internal: aicc.Fused is not registered");
  fused->name = group.front()->name;
  fused->attrs["body"].v = body;
  fused->attrs["kind"].v = kind;
  for (Value* o : escaping) {
    for (Value*& lo : last->outputs)
      if (lo == o) lo = nullptr;
    o->producer = fused;
    fused->outputs.push_back(o);
  }
  auto owned = std::move(g.nodes.back());
  g.nodes.pop_back();
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(pos[last]), std::move(owned));

  for (Value* v : extInputs) counts[v] += 1 - groupUses[v];
  for (const auto& [v, k] : groupUses)
    if (copyIntoBody(v)) counts[v] -= k;
  eraseNodes(g, group);
  return fused;
}

} // namespace aicc
