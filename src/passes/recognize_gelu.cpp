// GELU spelled out, in every association order of the product 0.5 * x * t:
//   Erf form:  t = 1 + Erf(x / sqrt(2))  (or Erf(x * 0.70710678))         -> Gelu(x)
//   Tanh form: t = 1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3))             -> Gelu(x) {tanh}
//              (x^3 = Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x))
// Constants: 0.5 and 1 exactly, sqrt(2), 1/sqrt(2), sqrt(2/pi) and 0.044715 within 1e-6 relative.
// Every intermediate must have a single use.
#include "ir/rewrite.h"
#include "passes/recognize_internal.h"

#include <cmath>

namespace aicc::recognize {

namespace {

constexpr double kRtol = 1e-6;

struct Product {
  Node* root = nullptr;
  std::vector<Node*> nodes;
};

// 0.5 * x * t as (x * t) * 0.5, (0.5 * t) * x or (x * 0.5) * t, commuted either way.
std::optional<Product> matchHalfXTimes(const Ctx& c, Value* t, Value* x) {
  Node* m1 = c.soleUser(t);
  if (!m1 || m1->op != "Mul") return std::nullopt;
  Value* o = otherInput(m1, t);
  if (!o || o == t) return std::nullopt;
  Value* m1o = m1->outputs[0];
  if (o == x || isScalar(o, x, 0.5)) {
    Node* m2 = c.soleUser(m1o);
    if (!m2 || m2->op != "Mul") return std::nullopt;
    Value* o2 = otherInput(m2, m1o);
    bool ok = o == x ? isScalar(o2, x, 0.5) : o2 == x;
    if (!ok) return std::nullopt;
    return Product{m2, {m1, m2}};
  }
  if (Node* hx = c.producer(o, "Mul"); hx && c.singleUse(o)) {
    Value* h = otherInput(hx, x);
    if (h && h != x && isScalar(h, x, 0.5)) return Product{m1, {hx, m1}};
  }
  return std::nullopt;
}

// `one_plus` = Add(v, 1) as the sole user of v.
Node* addOne(const Ctx& c, Value* v, Value* x) {
  Node* a = c.soleUser(v);
  if (!isAdd(a) || !isScalar(otherInput(a, v), x, 1.0)) return nullptr;
  return a;
}

Node* finish(Ctx& c, Value* x, Node* add1, std::vector<Node*> dead, const char* approx) {
  auto prod = matchHalfXTimes(c, add1->outputs[0], x);
  if (!prod) return nullptr;
  dead.push_back(add1);
  dead.insert(dead.end(), prod->nodes.begin(), prod->nodes.end());
  Node* gelu = c.add(prod->root, "Gelu", {x}, "gelu");
  if (std::string(approx) != "none") gelu->attrs["approximate"] = Attribute{std::string(approx)};
  c.replace(prod->root, gelu->outputs[0], dead);
  return gelu;
}

Node* tryErfGelu(Ctx& c, Node* e) {
  if (e->op != "Erf" || !e->domain.empty() || !c.singleUse(e->inputs[0])) return nullptr;
  Node* pre = e->inputs[0]->producer;
  Value* x = nullptr;
  if (c.producer(e->inputs[0], "Div")) {
    if (isScalar(pre->inputs[1], pre->inputs[0], std::sqrt(2.0), kRtol)) x = pre->inputs[0];
  } else if (c.producer(e->inputs[0], "Mul")) {
    for (int i = 0; i < 2 && !x; ++i)
      if (isScalar(pre->inputs[1 - i], pre->inputs[i], std::sqrt(0.5), kRtol)) x = pre->inputs[i];
  }
  if (!x || !isF32orF64(x)) return nullptr;
  Node* add1 = addOne(c, e->outputs[0], x);
  if (!add1) return nullptr;
  return finish(c, x, add1, {pre, e}, "none");
}

// x^3 as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x): the nodes, empty when not a cube.
std::vector<Node*> cubeOf(const Ctx& c, Value* v, Value* x) {
  if (!c.singleUse(v)) return {};
  if (Node* p = c.producer(v, "Pow"); p && p->inputs[0] == x && isExponent(p->inputs[1], x, 3.0))
    return {p};
  Node* m = c.producer(v, "Mul");
  if (!m) return {};
  Value* o = otherInput(m, x);
  if (!o) return {};
  Node* sq = c.producer(o, "Mul");
  if (sq && c.singleUse(o) && sq->inputs[0] == x && sq->inputs[1] == x) return {sq, m};
  return {};
}

Node* tryTanhGelu(Ctx& c, Node* t) {
  if (t->op != "Tanh" || !t->domain.empty() || !c.singleUse(t->inputs[0])) return nullptr;
  Node* mk = c.producer(t->inputs[0], "Mul");
  if (!mk) return nullptr;
  for (int i = 0; i < 2; ++i) {
    Value* u = mk->inputs[i];
    Node* add = u ? u->producer : nullptr;
    if (!isAdd(add) || !c.singleUse(u)) continue;
    for (int j = 0; j < 2; ++j) {
      Value* x = add->inputs[j];
      Value* m = add->inputs[1 - j];
      if (!isF32orF64(x) || !isScalar(mk->inputs[1 - i], x, std::sqrt(2.0 / M_PI), kRtol)) continue;
      Node* mc = c.producer(m, "Mul");
      if (!mc || !c.singleUse(m)) continue;
      for (int k = 0; k < 2; ++k) {
        if (!isScalar(mc->inputs[1 - k], x, 0.044715, kRtol)) continue;
        std::vector<Node*> cube = cubeOf(c, mc->inputs[k], x);
        if (cube.empty()) continue;
        Node* add1 = addOne(c, t->outputs[0], x);
        if (!add1) return nullptr;
        std::vector<Node*> dead = cube;
        dead.insert(dead.end(), {mc, add, mk, t});
        return finish(c, x, add1, dead, "tanh");
      }
    }
  }
  return nullptr;
}

} // namespace

int64_t recognizeGelu(Ctx& c) {
  return sweep(c, [](Ctx& cc, Node* n) {
    Node* r = tryErfGelu(cc, n);
    return r ? r : tryTanhGelu(cc, n);
  });
}

} // namespace aicc::recognize
