// Scaled dot-product attention spelled out (rank r = 2..4, batch / head dims leading):
//   s = MatMul(Q [* a], KT [* b]) [* c | / c]; [s = Add(s, mask)]; p = Softmax(s, -1); MatMul(p, V)
// -> Attention(Q, K, V[, mask]) {scale = a * b * c} in its 4-D form [B, H, S, D]; ranks 2 and 3
// are unsqueezed to 4-D (the leading dims act as heads) and the result squeezed back.
// K = KT with its last two axes swapped: an existing Transpose is composed with the swap, else
// one is inserted. The head-splitting reshapes / transposes around the core stay as they are.
// Conditions: f32 (the compiled Attention is f32; an f64 chain stays MatMul / Softmax, which
// compile), the Softmax on the last axis, single-use intermediates, leading dims of
// Q, KT and V provably equal (no broadcasting), scale > 0, and a mask of Q's type whose dims are 1
// or equal to the scores' (its last dim equal to the key length) and which is provably finite
// (Attention returns 0 for a row whose mask is -inf everywhere, where Softmax returns NaN).
#include "ir/rewrite.h"
#include "passes/recognize_internal.h"

#include <cfloat>
#include <cmath>
#include <numeric>

namespace aicc::recognize {

namespace {

// Strips Mul / Div by one-element constants off v (single-use links), multiplying `scale`.
Value* peelScale(const Ctx& c, Value* v, double& scale, std::vector<Node*>& nodes) {
  for (;;) {
    if (!c.singleUse(v)) return v;
    if (Node* d = c.producer(v, "Div")) {
      auto s = scalarOf(d->inputs[1], d->inputs[0]);
      if (!s || *s == 0) return v;
      scale /= *s, v = d->inputs[0], nodes.push_back(d);
      continue;
    }
    Node* m = c.producer(v, "Mul");
    if (!m) return v;
    int i = 0;
    std::optional<double> s;
    for (; i < 2 && !s; ++i) s = scalarOf(m->inputs[1 - i], m->inputs[i]);
    if (!s) return v;
    scale *= *s, v = m->inputs[i - 1], nodes.push_back(m);
  }
}

// An upper bound of |v| when v is provably finite (constants, casts from integers, and
// Add / Sub / Mul / Where / shape ops over those); nullopt otherwise.
std::optional<double> magnitude(const Ctx& c, const Value* v, int depth = 0) {
  if (!v || depth > 24) return std::nullopt;
  if (const Tensor* t = constTensor(v)) {
    if (!isFloat(t->dtype()) && !isInteger(t->dtype()) && t->dtype() != DType::Bool)
      return std::nullopt;
    double m = 0;
    for (int64_t i = 0; i < t->numel(); ++i) {
      double x = t->getF64(i);
      if (!std::isfinite(x)) return std::nullopt;
      m = std::max(m, std::fabs(x));
    }
    return m;
  }
  const Node* p = v->producer;
  if (!p || !p->domain.empty() || v->owner != &c.g) return std::nullopt;
  auto in = [&](size_t i) {
    return magnitude(c, p->hasInput(i) ? p->inputs[i] : nullptr, depth + 1);
  };
  const std::string& op = p->op;
  if (op == "Cast") {
    const DType t = p->inputs[0]->type.isTensor() ? p->inputs[0]->type.dtype : DType::Undefined;
    if (t == DType::Bool) return 1.0;
    if (isInteger(t))
      return std::ldexp(1.0, 8 * static_cast<int>(std::max<size_t>(dtypeSize(t), 1)));
    return in(0);
  }
  if (op == "Identity" || op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" ||
      op == "Expand" || op == "Transpose" || op == "Flatten" || op == "Neg")
    return in(0);
  if (op == "Add" || op == "Sub" || op == "Mul") {
    auto a = in(0), b = in(1);
    if (!a || !b) return std::nullopt;
    return op == "Mul" ? *a * *b : *a + *b;
  }
  if (op == "Where") {
    auto a = in(1), b = in(2);
    if (!a || !b) return std::nullopt;
    return std::max(*a, *b);
  }
  return std::nullopt;
}

bool maskOk(const Ctx& c, const Value* mask, const Value* q, const Shape& scores) {
  auto mr = rankOf(mask);
  if (!mr || !mask->type.isTensor() || mask->type.dtype != q->type.dtype ||
      *mr > static_cast<int64_t>(scores.size()) || *mr == 0)
    return false;
  const Shape& ms = *mask->type.shape;
  const size_t off = scores.size() - ms.size();
  for (size_t j = 0; j < ms.size(); ++j) {
    const Dim& want = scores[off + j];
    const bool last = off + j == scores.size() - 1;
    if (!sameDim(ms[j], want) && (last || !(ms[j].isStatic() && ms[j].value == 1))) return false;
  }
  auto m = magnitude(c, mask);
  const double limit = q->type.dtype == DType::F32 ? FLT_MAX : DBL_MAX;
  return m && *m <= limit;
}

Shape permuted(const Shape& s, const std::vector<int64_t>& perm) {
  Shape r;
  for (int64_t p : perm) r.push_back(s[static_cast<size_t>(p)]);
  return r;
}

Node* tryAttention(Ctx& c, Node* m2) {
  if (m2->op != "MatMul" || !m2->domain.empty()) return nullptr;
  Node* sm = c.producer(m2->inputs[0], "Softmax");
  if (!sm || !c.singleUse(m2->inputs[0])) return nullptr;
  Value* V = m2->inputs[1];
  auto r = rankOf(sm->inputs[0]);
  if (!r || *r < 2 || *r > 4 || rankOf(V) != r || rankOf(m2->outputs[0]) != r) return nullptr;
  int64_t axis = sm->attrInt("axis");
  if (axis < 0) axis += *r;
  if (axis != *r - 1) return nullptr;
  std::vector<Node*> dead = {sm};
  Value* sc = sm->inputs[0];
  Value* mask = nullptr;
  double scale = 1;
  if (Node* add = c.producer(sc, "Add"); add && c.singleUse(sc)) {
    for (int i = 0; i < 2 && !mask; ++i) {
      double s = 1;
      std::vector<Node*> probe;
      Value* core = peelScale(c, add->inputs[i], s, probe);
      if (c.producer(core, "MatMul") && c.singleUse(core)) {
        mask = add->inputs[1 - i];
        sc = add->inputs[i];
      }
    }
    if (!mask) return nullptr;
    dead.push_back(add);
  }
  sc = peelScale(c, sc, scale, dead);
  Node* m1 = c.producer(sc, "MatMul");
  if (!m1 || !c.singleUse(sc)) return nullptr;
  dead.push_back(m1);
  Value* q = peelScale(c, m1->inputs[0], scale, dead);
  Value* kt = peelScale(c, m1->inputs[1], scale, dead);
  if (!(scale > 0) || !std::isfinite(scale) || rankOf(q) != r || rankOf(kt) != r) return nullptr;
  if (q->type.dtype != DType::F32 || kt->type.dtype != q->type.dtype ||
      V->type.dtype != q->type.dtype)
    return nullptr;
  const Shape &qs = *q->type.shape, &ks = *kt->type.shape, &vs = *V->type.shape;
  const size_t R = static_cast<size_t>(*r);
  for (size_t i = 0; i + 2 < R; ++i)
    if (!sameDim(qs[i], ks[i]) || !sameDim(qs[i], vs[i])) return nullptr;
  Shape scores(qs.begin(), qs.end() - 1);
  scores.push_back(ks[R - 1]);
  if (mask && !maskOk(c, mask, q, scores)) return nullptr;

  // K: KT with the last two axes swapped, composed with KT's own Transpose when it has one.
  std::vector<int64_t> swap(R);
  std::iota(swap.begin(), swap.end(), 0);
  std::swap(swap[R - 1], swap[R - 2]);
  Value* kSrc = kt;
  std::vector<int64_t> perm = swap;
  if (Node* tr = c.producer(kt, "Transpose"); tr && c.singleUse(kt)) {
    std::vector<int64_t> tp = tr->attrInts("perm", {});
    if (tp.empty())
      for (size_t i = R; i-- > 0;) tp.push_back(static_cast<int64_t>(i));
    if (tp.size() == R && rankOf(tr->inputs[0]) == r) {
      kSrc = tr->inputs[0];
      for (size_t i = 0; i < R; ++i) perm[i] = tp[static_cast<size_t>(swap[i])];
      dead.push_back(tr);
    }
  }
  Value* K = kSrc;
  bool identity = true;
  for (size_t i = 0; i < R; ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (!identity) {
    Node* t = c.add(m2, "Transpose", {kSrc}, "attn_k");
    t->attrs["perm"] = Attribute{perm};
    t->outputs[0]->type = Type::tensor(q->type.dtype, permuted(*kSrc->type.shape, perm));
    K = t->outputs[0];
  }
  // To 4-D.
  std::vector<int64_t> axes;
  for (size_t i = R; i < 4; ++i) axes.push_back(static_cast<int64_t>(i - R));
  Value* axesV = axes.empty() ? nullptr : c.addConst("attn_axes", Tensor::fromI64(axes));
  auto to4 = [&](Value* v) {
    if (!axesV) return v;
    Node* u = c.add(m2, "Unsqueeze", {v, axesV}, v->name + "_4d");
    Shape s(4 - R, Dim::known(1));
    s.insert(s.end(), v->type.shape->begin(), v->type.shape->end());
    u->outputs[0]->type = Type::tensor(v->type.dtype, s);
    return u->outputs[0];
  };
  std::vector<Value*> ins = {to4(q), to4(K), to4(V)};
  if (mask) ins.push_back(mask);
  Node* att = c.add(m2, "Attention", ins, "attention");
  att->attrs["scale"] = Attribute{static_cast<float>(scale)};
  Value* out = att->outputs[0];
  if (axesV) {
    Shape s(4 - R, Dim::known(1));
    const Shape& os = *m2->outputs[0]->type.shape;
    s.insert(s.end(), os.begin(), os.end());
    out->type = Type::tensor(q->type.dtype, s);
    out = c.add(m2, "Squeeze", {out, axesV}, "attention_out")->outputs[0];
  }
  dead.push_back(m2);
  c.replace(m2, out, dead);
  return att;
}

} // namespace

int64_t recognizeAttention(Ctx& c) { return sweep(c, tryAttention); }

} // namespace aicc::recognize
