// Shared helpers of the "recognize" pass (see recognize_internal.h).
#include "ir/rewrite.h"
#include "passes/recognize_internal.h"

#include <algorithm>
#include <cmath>

namespace aicc::recognize {

Ctx::Ctx(Graph& graph) : g(graph) { refresh(); }

void Ctx::refresh() { uses = useCounts(g); }

Node* Ctx::producer(const Value* v, const char* op) const {
  if (!v || !v->producer || v->owner != &g) return nullptr;
  Node* n = v->producer;
  return n->op == op && n->domain.empty() ? n : nullptr;
}

bool Ctx::singleUse(const Value* v) const {
  if (!v || !v->producer || v->owner != &g) return false;
  auto it = uses.find(v);
  return it != uses.end() && it->second == 1;
}

std::vector<Node*> Ctx::users(const Value* v) const {
  std::vector<Node*> r;
  for (const auto& n : g.nodes)
    for (const Value* in : n->inputs)
      if (in == v) r.push_back(n.get());
  return r;
}

Node* Ctx::soleUser(const Value* v) const {
  if (!singleUse(v)) return nullptr;
  auto u = users(v);
  return u.size() == 1 ? u[0] : nullptr; // the use may sit in a subgraph: then not ours
}

void Ctx::replace(Node* root, Value* repl, const std::vector<Node*>& dead) {
  repl->type = root->outputs[0]->type;
  replaceAllUses(g, root->outputs[0], repl);
  eraseNodes(g, dead);
  ++rewrites;
  refresh();
}

Node* Ctx::add(Node* before, const std::string& op, std::vector<Value*> inputs,
               const std::string& base) {
  return insertNode(g, before, op, std::move(inputs), 1, base);
}

Value* Ctx::addConst(const std::string& base, Tensor t) {
  return g.addConstant(g.uniqueName(base), std::move(t));
}

const Tensor* constTensor(const Value* v) {
  if (!v) return nullptr;
  if (v->isConstant()) return v->constant->defined() ? &*v->constant : nullptr;
  const Node* p = v->producer;
  if (!p || !p->domain.empty()) return nullptr;
  // CastLike(c, x) to c's own element type is c (function bodies spell constants this way).
  if (p->op == "CastLike" && p->inputs.size() == 2 && p->inputs[1] &&
      p->inputs[1]->type.isTensor()) {
    const Tensor* t = constTensor(p->inputs[0]);
    return t && t->dtype() == p->inputs[1]->type.dtype ? t : nullptr;
  }
  if (p->op != "Constant") return nullptr;
  const Attribute* a = p->attr("value");
  if (!a) return nullptr;
  const Tensor* t = std::get_if<Tensor>(&a->v);
  return t && t->defined() ? t : nullptr;
}

std::optional<double> scalarConst(const Value* v) {
  const Tensor* t = constTensor(v);
  if (!t || t->numel() != 1 || !isFloat(t->dtype())) return std::nullopt;
  return t->getF64(0);
}

std::optional<int64_t> rankOf(const Value* v) {
  if (!v || !v->type.isTensor() || !v->type.shape) return std::nullopt;
  return static_cast<int64_t>(v->type.shape->size());
}

std::optional<double> scalarOf(const Value* c, const Value* other) {
  const Tensor* t = constTensor(c);
  auto r = rankOf(other);
  if (!t || !r || !other->type.isTensor() || t->dtype() != other->type.dtype) return std::nullopt;
  if (t->rank() > *r) return std::nullopt;
  return scalarConst(c);
}

bool isScalar(const Value* c, const Value* other, double want, double rtol) {
  auto v = scalarOf(c, other);
  if (!v) return false;
  if (rtol == 0) return *v == want;
  return std::fabs(*v - want) <= rtol * std::fabs(want);
}

bool isExponent(const Value* c, const Value* other, double want) {
  const Tensor* t = constTensor(c);
  auto r = rankOf(other);
  if (!t || !r || t->numel() != 1 || t->rank() > *r) return false;
  if (!isFloat(t->dtype()) && !isInteger(t->dtype())) return false;
  return t->getF64(0) == want;
}

bool isAdd(const Node* n) {
  return n && n->domain.empty() &&
         (n->op == "Add" ||
          (n->op == "Sum" && n->inputs.size() == 2 && n->inputs[0] && n->inputs[1]));
}

Value* otherInput(const Node* n, const Value* v) {
  if (n->inputs.size() != 2) return nullptr;
  if (n->inputs[0] == v) return n->inputs[1];
  if (n->inputs[1] == v) return n->inputs[0];
  return nullptr;
}

bool isF32orF64(const Value* v) {
  return v && v->type.isTensor() && (v->type.dtype == DType::F32 || v->type.dtype == DType::F64);
}

bool sameDim(const Dim& a, const Dim& b) {
  if (a.isStatic() || b.isStatic()) return a.isStatic() && b.isStatic() && a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

int64_t sweep(Ctx& c, Node* (*fn)(Ctx&, Node*)) {
  int64_t k = 0;
  for (size_t i = 0; i < c.g.nodes.size();) {
    if (Node* nn = fn(c, c.g.nodes[i].get())) {
      ++k;
      i = nodeIndex(c.g, nn) + 1;
    } else {
      ++i;
    }
  }
  return k;
}

} // namespace aicc::recognize
