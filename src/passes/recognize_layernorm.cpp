// LayerNorm spelled out, over the trailing axes A of x (keepdims everywhere):
//   mean = ReduceMean(x, A); d = Sub(x, mean); sq = Pow(d, 2) | Mul(d, d)
//   var = ReduceMean(sq, A); ve = Add(var, eps); sd = Sqrt(ve) | Pow(ve, 0.5)
//   n = Div(d, sd) | Mul(d, Reciprocal(sd)); [Mul(n, gamma)]; [Add(., beta)]
// -> LayerNormalization(x, gamma | ones, beta | omitted) {axis = rank - |A|, epsilon = eps}.
// eps must be a one-element constant added to the variance (not to the standard deviation);
// gamma / beta must be constants that broadcast to the normalized shape without growing x.
#include "ir/rewrite.h"
#include "passes/recognize_internal.h"

#include <algorithm>

namespace aicc::recognize {

namespace {

// The trailing axes a keepdims ReduceMean reduces, as the count of trailing axes (0: no match).
int64_t trailingAxes(const Ctx& c, const Node* r, int64_t rank) {
  if (r->attrInt("keepdims") != 1) return 0;
  std::vector<int64_t> axes;
  if (r->hasInput(1)) {
    const Tensor* t = constTensor(r->inputs[1]);
    if (!t) return 0;
    axes = t->toI64Vector();
  }
  if (axes.empty()) {
    if (r->attrInt("noop_with_empty_axes") != 0) return 0;
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return 0;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return 0;
  const int64_t k = static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < k; ++i)
    if (axes[static_cast<size_t>(i)] != rank - k + i) return 0;
  (void)c;
  return k;
}

// gamma / beta as a tensor of the normalized shape `norm` (nullptr when it does not fit: not a
// constant, another element type, or a shape that would broadcast x to something larger).
Value* affineParam(Ctx& c, Value* p, const Value* x, const Dims& norm, const char* base) {
  const Tensor* t = constTensor(p);
  if (!t || t->dtype() != x->type.dtype) return nullptr;
  Dims s = t->shape();
  while (!s.empty() && s.front() == 1 && s.size() > norm.size()) s.erase(s.begin());
  if (s.size() > norm.size()) return nullptr;
  const size_t off = norm.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != 1 && s[i] != norm[off + i]) return nullptr;
  if (t->shape() == norm) return p;
  // Broadcast the values to the normalized shape.
  Tensor out(t->dtype(), norm);
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = 0, stride = 1;
    for (size_t d = norm.size(); d-- > 0;) {
      const int64_t idx = rem % norm[d];
      rem /= norm[d];
      if (d >= off) {
        const int64_t sd = s[d - off];
        if (sd != 1) src += idx * stride;
        stride *= sd;
      }
    }
    out.setF64(i, t->getF64(src));
  }
  return c.addConst(base, out);
}

Node* tryLayerNorm(Ctx& c, Node* r1) {
  if (r1->op != "ReduceMean" || !r1->domain.empty() || !r1->hasInput(0)) return nullptr;
  Value* x = r1->inputs[0];
  auto rank = rankOf(x);
  if (!isF32orF64(x) || !rank || *rank == 0) return nullptr;
  const int64_t k = trailingAxes(c, r1, *rank);
  if (k == 0) return nullptr;
  Value* mean = r1->outputs[0];
  Node* sub = c.soleUser(mean);
  if (!sub || sub->op != "Sub" || sub->inputs[0] != x || sub->inputs[1] != mean) return nullptr;
  Value* d = sub->outputs[0];
  if (!d->producer || isGraphOutput(c.g, d)) return nullptr;
  // d feeds exactly the square and the division.
  Node *sq = nullptr, *div = nullptr;
  std::vector<Node*> dUsers = c.users(d);
  if (static_cast<int64_t>(dUsers.size()) != c.uses.at(d)) return nullptr; // subgraph uses
  for (Node* u : dUsers) {
    if (u->op == "Pow" && u->inputs[0] == d && isExponent(u->inputs[1], d, 2.0))
      sq = u;
    else if (u->op == "Mul" && u->inputs[0] == d && u->inputs[1] == d)
      sq = u;
    else if ((u->op == "Div" && u->inputs[0] == d) || u->op == "Mul")
      div = u;
    else
      return nullptr;
  }
  const size_t want = sq && sq->op == "Mul" ? 3 : 2;
  if (!sq || !div || dUsers.size() != want) return nullptr;
  Node* r2 = c.soleUser(sq->outputs[0]);
  if (!r2 || r2->op != "ReduceMean" || r2->inputs[0] != sq->outputs[0] ||
      trailingAxes(c, r2, *rank) != k)
    return nullptr;
  Node* addEps = c.soleUser(r2->outputs[0]);
  if (!isAdd(addEps)) return nullptr;
  Value* epsV = otherInput(addEps, r2->outputs[0]);
  auto eps = scalarOf(epsV, x);
  if (!eps || !(*eps >= 0)) return nullptr;
  Node* sqrt = c.soleUser(addEps->outputs[0]);
  if (!sqrt ||
      !(sqrt->op == "Sqrt" || (sqrt->op == "Pow" && sqrt->inputs[0] == addEps->outputs[0] &&
                               isExponent(sqrt->inputs[1], x, 0.5))))
    return nullptr;
  std::vector<Node*> dead = {r1, sub, sq, r2, addEps, sqrt};
  if (div->op == "Div") {
    if (div->inputs[1] != sqrt->outputs[0] || !c.singleUse(sqrt->outputs[0])) return nullptr;
  } else {
    Node* rcp = c.soleUser(sqrt->outputs[0]);
    if (!rcp || rcp->op != "Reciprocal" || otherInput(div, d) != rcp->outputs[0] ||
        !c.singleUse(rcp->outputs[0]))
      return nullptr;
    dead.push_back(rcp);
  }
  dead.push_back(div);
  // The normalized shape must be static (for gamma / beta and the constant ones).
  const Shape& xs = *x->type.shape;
  Dims norm;
  for (int64_t i = *rank - k; i < *rank; ++i) {
    if (!xs[static_cast<size_t>(i)].isStatic()) return nullptr;
    norm.push_back(xs[static_cast<size_t>(i)].value);
  }
  Node* root = div;
  Value *gamma = nullptr, *beta = nullptr;
  if (Node* mul = c.soleUser(div->outputs[0]); mul && mul->op == "Mul") {
    if ((gamma = affineParam(c, otherInput(mul, div->outputs[0]), x, norm, "ln_scale"))) {
      root = mul;
      dead.push_back(mul);
    }
  }
  if (Node* add = c.soleUser(root->outputs[0]); add && add->op == "Add") {
    if ((beta = affineParam(c, otherInput(add, root->outputs[0]), x, norm, "ln_bias"))) {
      root = add;
      dead.push_back(add);
    }
  }
  if (!gamma) {
    Tensor ones(x->type.dtype, norm);
    for (int64_t i = 0; i < ones.numel(); ++i) ones.setF64(i, 1.0);
    gamma = c.addConst("ln_scale", ones);
  }
  std::vector<Value*> ins = {x, gamma};
  if (beta) ins.push_back(beta);
  Node* ln = c.add(root, "LayerNormalization", ins, "layer_norm");
  ln->attrs["axis"] = Attribute{*rank - k};
  ln->attrs["epsilon"] = Attribute{static_cast<float>(*eps)};
  c.replace(root, ln->outputs[0], dead);
  return ln;
}

} // namespace

int64_t recognizeLayerNorm(Ctx& c) { return sweep(c, tryLayerNorm); }

} // namespace aicc::recognize
