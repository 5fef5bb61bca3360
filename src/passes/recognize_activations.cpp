// Piecewise-linear and sigmoid activations spelled out:
//   Clip(x * a + b, 0, 1) | Clip(x + b, 0, 1)              -> HardSigmoid(x) {alpha = a, beta = b}
//   Div(Clip(x + 3, 0, 6), 6) | Mul(Clip(x + 3, 0, 6), 1/6)  -> HardSigmoid(x) {alpha = 1/6, beta =
//   0.5} Mul(x, HardSigmoid(x) {alpha = 1/6, beta = 0.5})         -> HardSwish(x) Div(Mul(x, Clip(x
//   + 3, 0, 6)), 6) | Mul(., 1/6)          -> HardSwish(x) Mul(x, Sigmoid(x)) | Mul(x,
//   Sigmoid(Mul(x, a)))          -> Swish(x) {alpha = 1 | a}
// Constants 0, 1, 3, 6 and 0.5 exactly, 1/6 within 1e-6 relative; single-use intermediates.
#include "ir/rewrite.h"
#include "passes/recognize_internal.h"

namespace aicc::recognize {

namespace {

constexpr double kRtol = 1e-6;

bool clipBounds(const Node* clip, double lo, double hi) {
  return clip->inputs.size() == 3 && clip->hasInput(1) && clip->hasInput(2) &&
         isScalar(clip->inputs[1], clip->inputs[0], lo) &&
         isScalar(clip->inputs[2], clip->inputs[0], hi);
}

// v = Clip(Add(x, 3), 0, 6) with single-use intermediates: returns x and appends the nodes.
Value* relu6Plus3(const Ctx& c, Value* v, std::vector<Node*>& nodes) {
  Node* clip = c.producer(v, "Clip");
  if (!clip || !c.singleUse(v) || !clipBounds(clip, 0, 6)) return nullptr;
  Node* add = c.producer(clip->inputs[0], "Add");
  if (!add || !c.singleUse(clip->inputs[0])) return nullptr;
  for (int i = 0; i < 2; ++i) {
    Value* x = add->inputs[i];
    if (isF32orF64(x) && isScalar(add->inputs[1 - i], x, 3.0)) {
      nodes.insert(nodes.end(), {add, clip});
      return x;
    }
  }
  return nullptr;
}

// n = Div(v, 6) or Mul(v, 1/6) (either order): returns v.
Value* dividedBySix(const Node* n) {
  if (n->op == "Div" && isScalar(n->inputs[1], n->inputs[0], 6.0)) return n->inputs[0];
  if (n->op == "Mul")
    for (int i = 0; i < 2; ++i)
      if (isScalar(n->inputs[1 - i], n->inputs[i], 1.0 / 6.0, kRtol)) return n->inputs[i];
  return nullptr;
}

Node* emit(Ctx& c, Node* root, const char* op, Value* x, std::vector<Node*> dead,
           std::vector<std::pair<const char*, float>> attrs = {}) {
  Node* n = c.add(root, op, {x}, op == std::string("Swish") ? "swish" : "hard_act");
  for (auto& [k, v] : attrs) n->attrs[k] = Attribute{v};
  dead.push_back(root);
  c.replace(root, n->outputs[0], dead);
  return n;
}

Node* tryHardSigmoid(Ctx& c, Node* n) {
  if (!n->domain.empty()) return nullptr;
  if (n->op == "Clip" && clipBounds(n, 0, 1)) {
    Node* add = c.producer(n->inputs[0], "Add");
    if (!add || !c.singleUse(n->inputs[0])) return nullptr;
    for (int i = 0; i < 2; ++i) {
      Value* p = add->inputs[i];
      auto b = scalarOf(add->inputs[1 - i], p);
      if (!b || !isF32orF64(p)) continue;
      Node* mul = c.producer(p, "Mul");
      if (mul && c.singleUse(p)) {
        for (int j = 0; j < 2; ++j) {
          Value* x = mul->inputs[j];
          auto a = scalarOf(mul->inputs[1 - j], x);
          if (a && isF32orF64(x))
            return emit(c, n, "HardSigmoid", x, {mul, add},
                        {{"alpha", static_cast<float>(*a)}, {"beta", static_cast<float>(*b)}});
        }
      }
      return emit(c, n, "HardSigmoid", p, {add},
                  {{"alpha", 1.0f}, {"beta", static_cast<float>(*b)}});
    }
    return nullptr;
  }
  if (Value* v = dividedBySix(n)) {
    std::vector<Node*> dead;
    if (Value* x = relu6Plus3(c, v, dead))
      return emit(c, n, "HardSigmoid", x, dead,
                  {{"alpha", static_cast<float>(1.0 / 6.0)}, {"beta", 0.5f}});
  }
  return nullptr;
}

Node* tryHardSwish(Ctx& c, Node* n) {
  if (!n->domain.empty()) return nullptr;
  if (n->op == "Mul") {
    for (int i = 0; i < 2; ++i) {
      Value* h = n->inputs[i];
      Node* hs = c.producer(h, "HardSigmoid");
      if (hs && c.singleUse(h) && hs->inputs[0] == n->inputs[1 - i] && isF32orF64(h) &&
          std::abs(hs->attrFloat("alpha") - 1.0 / 6.0) <= kRtol / 6.0 &&
          hs->attrFloat("beta") == 0.5f)
        return emit(c, n, "HardSwish", hs->inputs[0], {hs});
    }
  }
  if (Value* v = dividedBySix(n)) {
    Node* m = c.producer(v, "Mul");
    if (!m || !c.singleUse(v)) return nullptr;
    for (int i = 0; i < 2; ++i) {
      std::vector<Node*> dead = {m};
      Value* x = relu6Plus3(c, m->inputs[i], dead);
      if (x && m->inputs[1 - i] == x) return emit(c, n, "HardSwish", x, dead);
    }
  }
  return nullptr;
}

Node* trySwish(Ctx& c, Node* n) {
  if (n->op != "Mul" || !n->domain.empty()) return nullptr;
  for (int i = 0; i < 2; ++i) {
    Value* s = n->inputs[i];
    Value* x = n->inputs[1 - i];
    Node* sig = c.producer(s, "Sigmoid");
    if (!sig || !c.singleUse(s) || !isF32orF64(x) || s == x) continue;
    if (sig->inputs[0] == x) return emit(c, n, "Swish", x, {sig});
    Node* mul = c.producer(sig->inputs[0], "Mul");
    if (!mul || !c.singleUse(sig->inputs[0])) continue;
    Value* a = otherInput(mul, x);
    auto alpha = a && a != x ? scalarOf(a, x) : std::nullopt;
    if (alpha) return emit(c, n, "Swish", x, {mul, sig}, {{"alpha", static_cast<float>(*alpha)}});
  }
  return nullptr;
}

} // namespace

int64_t recognizeHardSigmoid(Ctx& c) { return sweep(c, tryHardSigmoid); }
int64_t recognizeHardSwish(Ctx& c) { return sweep(c, tryHardSwish); }
int64_t recognizeSwish(Ctx& c) { return sweep(c, trySwish); }

} // namespace aicc::recognize
