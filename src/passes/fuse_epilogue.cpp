#include "passes/fuse_epilogue.h"

#include "ir/rewrite.h"
#include "passes/fuse_group.h"

#include <set>

namespace aicc {

namespace {

bool isHead(const Node& n) {
  static const std::set<std::string> kHeads = {"Conv", "ConvTranspose", "Gemm", "MatMul"};
  const bool blocked = n.domain == kAiccDomain && n.op == "ConvNchwc"; // passes/assign_layout.h
  if (!blocked && (!n.domain.empty() || !kHeads.count(n.op) || hasSubgraphs(n))) return false;
  if (n.outputs.size() != 1 || !n.outputs[0]) return false;
  const Type& t = n.outputs[0]->type;
  return t.isTensor() && t.shape && !t.shape->empty() && t.dtype != DType::Undefined;
}

bool isActivation(const Node& n) {
  static const std::set<std::string> kActs = {
      "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu",           "Swish",
      "Elu",  "Selu",      "Celu",    "Softplus",    "Softsign",  "Mish", "ThresholdedRelu"};
  return n.domain.empty() && kActs.count(n.op) && n.inputs.size() == 1;
}

// Does constant `c` broadcast along `axis` of `out` only (or is it a scalar), without growing it?
bool perChannel(const Value* c, const Shape& out, size_t axis) {
  if (!c->isConstant() || !c->type.shape) return false;
  const Shape& cs = *c->type.shape;
  if (cs.size() > out.size()) return false;
  for (size_t j = 0; j < cs.size(); ++j) {
    size_t a = out.size() - cs.size() + j;
    if (!cs[j].isStatic()) return false;
    if (cs[j].value == 1) continue;
    if (a != axis || !out[a].isStatic() || out[a].value != cs[j].value) return false;
  }
  return true;
}

struct Scope {
  Graph& g;
  std::map<const Value*, int64_t> counts;
  std::map<const Value*, std::vector<Node*>> users; // direct node inputs in g
  mutable ShapeOracle shapes;

  explicit Scope(Graph& graph) : g(graph) { refresh(); }
  void refresh() {
    counts = useCounts(g);
    shapes.clear();
    users.clear();
    for (const auto& n : g.nodes)
      for (Value* v : n->inputs)
        if (v) users[v].push_back(n.get());
  }
  int64_t count(const Value* v) const {
    auto it = counts.find(v);
    return it == counts.end() ? 0 : it->second;
  }
  // The node that is the only user of v (a direct input, in g), else nullptr.
  Node* soleUser(const Value* v) const {
    auto it = users.find(v);
    if (count(v) != 1 || it == users.end() || it->second.size() != 1) return nullptr;
    return it->second[0];
  }
};

// Can node u (the sole user of `cur`) extend the epilogue of a head with output type `ht`?
bool acceptsStep(const Scope& sc, const Node& u, const Value* cur, const Value* head, size_t axis) {
  if (!u.domain.empty() || hasSubgraphs(u) || u.outputs.size() != 1 || !u.outputs[0]) return false;
  const Type& ht = head->type;
  if (u.outputs[0]->type.dtype != ht.dtype || !sc.shapes.same(u.outputs[0], head)) return false;
  if (u.inputs.empty() || u.inputs[0] == nullptr) return false;
  const Shape& s = *ht.shape;
  if (isActivation(u)) return u.inputs[0] == cur;
  if (u.op == "Clip") {
    if (u.inputs[0] != cur) return false;
    for (size_t i = 1; i < u.inputs.size(); ++i)
      if (u.inputs[i] && !u.inputs[i]->isConstant()) return false;
    return true;
  }
  if (u.op == "PRelu")
    return u.inputs.size() == 2 && u.inputs[0] == cur && u.inputs[1] &&
           perChannel(u.inputs[1], s, axis);
  if (u.op == "Add" || u.op == "Sub" || u.op == "Mul" || u.op == "Div") {
    if (u.inputs.size() != 2 || !u.inputs[1]) return false;
    size_t self = u.inputs[0] == cur ? 0 : 1;
    const Value* other = u.inputs[1 - self];
    if (u.inputs[self] != cur || other == cur) return false;
    if (u.op == "Div" && self != 0) return false;
    if (other->isConstant()) return perChannel(other, s, axis);
    // Residual: Add with a tensor of exactly the head's shape and dtype.
    return u.op == "Add" && other->type.dtype == ht.dtype && sc.shapes.same(other, head);
  }
  return false;
}

// Mul(x, Sigmoid(x)) (SiLU) starting at `cur`, which must have exactly these two users.
std::vector<Node*> matchSiLU(const Scope& sc, const Value* cur, const Value* head) {
  auto it = sc.users.find(cur);
  if (sc.count(cur) != 2 || it == sc.users.end() || it->second.size() != 2) return {};
  for (int k = 0; k < 2; ++k) {
    Node* sig = it->second[k];
    Node* mul = it->second[1 - k];
    if (sig->op != "Sigmoid" || !sig->domain.empty() || sig->inputs.size() != 1 || sig == mul)
      continue;
    if (!sig->outputs[0] || sc.soleUser(sig->outputs[0]) != mul) continue;
    if (mul->op != "Mul" || !mul->domain.empty() || mul->inputs.size() != 2 || !mul->outputs[0])
      continue;
    bool ok = (mul->inputs[0] == cur && mul->inputs[1] == sig->outputs[0]) ||
              (mul->inputs[1] == cur && mul->inputs[0] == sig->outputs[0]);
    if (!ok || !sc.shapes.same(mul->outputs[0], head) ||
        mul->outputs[0]->type.dtype != head->type.dtype)
      continue;
    return {sig, mul};
  }
  return {};
}

// The epilogue chain after `head` (empty when there is none).
std::vector<Node*> epilogueChain(const Scope& sc, const Node& head) {
  const Type& ht = head.outputs[0]->type;
  // A blocked convolution's channels are split over two dims: scalar constants only (an axis
  // past the shape admits no other).
  const bool blocked = head.domain == kAiccDomain;
  size_t axis = blocked                                             ? ht.shape->size()
                : (head.op == "Conv" || head.op == "ConvTranspose") ? 1
                                                                    : ht.shape->size() - 1;
  if (!blocked && axis >= ht.shape->size()) return {};
  std::vector<Node*> chain;
  const Value* cur = head.outputs[0];
  for (;;) {
    if (isGraphOutput(sc.g, cur)) break;
    if (Node* u = sc.soleUser(cur); u && acceptsStep(sc, *u, cur, head.outputs[0], axis)) {
      chain.push_back(u);
      cur = u->outputs[0];
      continue;
    }
    std::vector<Node*> silu = matchSiLU(sc, cur, head.outputs[0]);
    if (silu.empty()) break;
    chain.insert(chain.end(), silu.begin(), silu.end());
    cur = silu.back()->outputs[0];
  }
  return chain;
}

bool fuseInGraph(Graph& g) {
  Scope sc(g);
  std::vector<Node*> order;
  for (const auto& n : g.nodes) order.push_back(n.get());
  std::set<const Node*> gone;
  bool changed = false;
  for (Node* head : order) {
    if (gone.count(head) || !isHead(*head)) continue;
    std::vector<Node*> chain = epilogueChain(sc, *head);
    if (chain.empty()) continue;
    std::vector<Node*> group{head};
    group.insert(group.end(), chain.begin(), chain.end());
    if (!fuseGroup(g, group, "epilogue", sc.counts)) continue;
    gone.insert(group.begin(), group.end());
    changed = true;
    sc.refresh();
  }
  return changed;
}

} // namespace

bool fuseEpilogue(Model& m) {
  bool changed = false;
  for (Graph* g : fusionScopes(*m.graph)) changed |= fuseInGraph(*g);
  return changed;
}

} // namespace aicc
