// fold-affine: per-channel affine maps y = x * a[c] + b[c] folded into the producing
// Conv / ConvTranspose / Gemm (constant weights, optional constant bias, result used only by the
// affine node), as new weights W' = W * a (per output channel) and bias B' = B * a + b.
// Affine nodes recognized:
//   - BatchNormalization in inference mode (training_mode = 0) with constant [C] parameters:
//     a = scale / sqrt(var + eps), b = B - mean * a;
//   - Mul / Add / Sub / Div by a constant broadcast along the channel axis only (shape [C,1,1],
//     [1,C,1,1], a scalar, ...; [N] or [1,N] for a Gemm result).
// A BatchNormalization that cannot be folded (no suitable producer, e.g. the pre-activation BN
// after a Concat in DenseNet) becomes Mul + Add by per-channel constants, which later passes
// fuse; the constants are the kernel's a and b rounded to X's type (the kernel itself computes
// x * a + b in double and rounds once, so the two differ by f32 rounding only).
#include "passes/fold_affine_into_conv.h"

#include "ir/rewrite.h"
#include "ops/helpers.h"
#include "ops/op_def.h"

#include <cmath>

namespace aicc {

namespace {

struct Affine {
  Value* x = nullptr;       // the tensor the affine map applies to
  std::vector<double> a, b; // per channel (size C) or size 1 (same for every channel)
};

bool isOp(const Node& n, const char* op) { return n.op == op && n.domain.empty(); }

// A constant's data, or the `value` of a Constant node (before constant folding turned it into
// a constant); nullptr for anything else or an elided constant.
const Tensor* constData(const Value* v) {
  if (!v) return nullptr;
  if (v->constant) return v->constant->defined() ? &*v->constant : nullptr;
  const Node* p = v->producer;
  if (!p || p->op != "Constant" || !p->domain.empty() || p->outputs.size() != 1) return nullptr;
  const Attribute* a = p->attr("value");
  const Tensor* t = a ? std::get_if<Tensor>(&a->v) : nullptr;
  return t && t->defined() ? t : nullptr;
}

bool isFoldableFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

// Per-channel values of a constant broadcast against `y` (rank r, channel axis 1): every dim of
// the constant is 1 except the channel one (C or 1); the result keeps y's shape.
std::optional<std::vector<double>> perChannel(const Tensor& c, const Value* y) {
  if (!y->type.isTensor() || !y->type.shape || c.dtype() != y->type.dtype) return std::nullopt;
  const Shape& ys = *y->type.shape;
  const int64_t r = static_cast<int64_t>(ys.size()), rc = c.rank();
  if (r < 2 || rc > r || !ys[1].isStatic()) return std::nullopt;
  for (int64_t j = 0; j < rc; ++j) {
    const int64_t axis = r - rc + j, d = c.dim(j);
    if (d == 1) continue;
    if (axis != 1 || d != ys[1].value) return std::nullopt;
  }
  return c.toF64Vector(); // numel is 1 or C, in channel order
}

// The affine map computed by `n`, if it is one of the recognized forms.
std::optional<Affine> affineOf(const Graph& g, const Node& n) {
  if (n.outputs.empty() || !n.outputs[0] || !isFoldableFloat(n.outputs[0]->type.dtype))
    return std::nullopt;
  if (isOp(n, "BatchNormalization")) {
    if (n.attrInt("training_mode") != 0 || n.inputs.size() != 5) return std::nullopt;
    for (size_t i = 1; i < n.outputs.size(); ++i)
      if (n.outputs[i] && numUses(g, n.outputs[i]) > 0) return std::nullopt;
    const Value* x = n.inputs[0];
    if (!x || !x->type.shape || x->type.shape->size() < 2 || !(*x->type.shape)[1].isStatic())
      return std::nullopt;
    const int64_t C = (*x->type.shape)[1].value;
    std::vector<std::vector<double>> p;
    for (size_t i = 1; i < 5; ++i) {
      const Tensor* t = constData(n.inputs[i]);
      if (!t || t->rank() != 1 || t->numel() != C || !isFoldableFloat(t->dtype()))
        return std::nullopt;
      p.push_back(t->toF64Vector());
    }
    const double eps = n.attrFloat("epsilon");
    Affine f{n.inputs[0], {}, {}};
    for (size_t c = 0; c < static_cast<size_t>(C); ++c) {
      const double s = std::sqrt(p[3][c] + eps);
      f.a.push_back(p[0][c] / s);
      f.b.push_back(p[1][c] - p[2][c] * p[0][c] / s);
    }
    return f;
  }
  const bool mul = isOp(n, "Mul"), add = isOp(n, "Add"), sub = isOp(n, "Sub"), div = isOp(n, "Div");
  if (!(mul || add || sub || div) || n.inputs.size() != 2 || !n.hasInput(0) || !n.hasInput(1))
    return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    if (side == 1 && (sub || div)) break; // c - x, c / x are not affine in the folding sense
    const Tensor* c = constData(n.inputs[1 - side]);
    Value* x = n.inputs[side];
    if (!c || constData(x)) continue;
    auto v = perChannel(*c, x);
    if (!v) continue;
    Affine f{x, {}, {}};
    for (double e : *v) {
      if (div && e == 0) return std::nullopt;
      f.a.push_back(mul ? e : div ? 1.0 / e : 1.0);
      f.b.push_back(add ? e : sub ? -e : 0.0);
    }
    return f;
  }
  return std::nullopt;
}

double at(const std::vector<double>& v, int64_t c) {
  return v.size() == 1 ? v[0] : v[static_cast<size_t>(c)];
}

// Folds `f` into the node producing f.x; returns whether it did.
bool foldInto(Graph& g, const Affine& f, Value* result) {
  Node* p = f.x->producer;
  if (!p || p->owner != &g || p->outputs.size() != 1 || p->outputs[0] != f.x) return false;
  const bool conv = isOp(*p, "Conv"), convT = isOp(*p, "ConvTranspose"), gemm = isOp(*p, "Gemm");
  if (!(conv || convT || gemm) || numUses(g, f.x) != 1 || isGraphOutput(g, f.x)) return false;
  if (f.x->type.dtype != result->type.dtype || !(f.x->type == result->type)) return false;
  const Tensor* W = constData(p->inputs[1]);
  const Tensor* B = p->hasInput(2) ? constData(p->inputs[2]) : nullptr;
  if (!W || (p->hasInput(2) && !B) || W->dtype() != f.x->type.dtype) return false;
  const int64_t C = (*f.x->type.shape)[1].value;
  if (f.a.size() != 1 && static_cast<int64_t>(f.a.size()) != C) return false;
  // Output channel of every weight element.
  std::function<int64_t(int64_t)> channelOf;
  if (conv) {
    if (W->rank() < 1 || W->dim(0) != C) return false;
    const int64_t per = W->numel() / std::max<int64_t>(C, 1);
    channelOf = [per](int64_t i) { return i / per; };
  } else if (convT) {
    const int64_t G = p->attrInt("group");
    if (W->rank() < 2 || G < 1 || W->dim(1) * G != C || W->dim(0) % G != 0) return false;
    const int64_t cinPerG = W->dim(0) / G, mPerG = W->dim(1),
                  inner = W->numel() / W->dim(0) / mPerG;
    channelOf = [=](int64_t i) {
      const int64_t ci = i / (mPerG * inner), m = (i / inner) % mPerG;
      return (ci / cinPerG) * mPerG + m;
    };
  } else {
    if (W->rank() != 2 || f.x->type.shape->size() != 2) return false;
    const bool tb = p->attrInt("transB") != 0;
    const int64_t K = tb ? W->dim(1) : W->dim(0);
    if ((tb ? W->dim(0) : W->dim(1)) != C) return false;
    channelOf = [tb, K, C](int64_t i) { return tb ? i / K : i % C; };
  }
  Tensor w2(W->dtype(), W->shape());
  if (W->dtype() == DType::F32 && conv) { // the common case, per output channel (no call per element)
    const float* src = W->data<float>();
    float* dst = w2.data<float>();
    const int64_t per = W->numel() / std::max<int64_t>(C, 1);
    for (int64_t c = 0; c < C; ++c) {
      const double a = at(f.a, c);
      for (int64_t i = c * per; i < (c + 1) * per; ++i) dst[i] = static_cast<float>(static_cast<double>(src[i]) * a);
    }
  } else if (W->dtype() == DType::F32) {
    const float* src = W->data<float>();
    float* dst = w2.data<float>();
    for (int64_t i = 0; i < W->numel(); ++i)
      dst[i] = static_cast<float>(static_cast<double>(src[i]) * at(f.a, channelOf(i)));
  } else {
    for (int64_t i = 0; i < W->numel(); ++i) w2.setF64(i, W->getF64(i) * at(f.a, channelOf(i)));
  }
  // New bias: Conv/ConvTranspose [C]; Gemm beta*C*a + b broadcast with [C], beta becomes 1.
  // A missing bias stays missing when b is all zero.
  bool needBias = B != nullptr;
  for (double v : f.b) needBias |= v != 0;
  Tensor b2;
  if (needBias && gemm) {
    const double beta = B ? p->attrFloat("beta") : 0.0;
    Dims shape = B ? broadcastDims(B->shape(), {C}) : Dims{C};
    b2 = Tensor(W->dtype(), shape);
    BroadcastIndexer bi(B ? B->shape() : Dims{}, shape);
    for (int64_t i = 0; i < b2.numel(); ++i) {
      const int64_t c = i % C;
      const double cv = B ? B->getF64(bi(i)) * beta : 0.0;
      b2.setF64(i, cv * at(f.a, c) + at(f.b, c));
    }
    p->attrs["beta"] = Attribute{1.0f};
  } else if (needBias) {
    if (B && (B->rank() != 1 || B->numel() != C || B->dtype() != W->dtype())) return false;
    b2 = Tensor(W->dtype(), {C});
    for (int64_t c = 0; c < C; ++c)
      b2.setF64(c, (B ? B->getF64(c) : 0.0) * at(f.a, c) + at(f.b, c));
  }
  const std::string base = p->name.empty() ? f.x->name : p->name;
  p->inputs[1] = g.addConstant(g.uniqueName(base + "_w_folded"), std::move(w2));
  if (needBias) {
    if (p->inputs.size() < 3) p->inputs.resize(3, nullptr);
    p->inputs[2] = g.addConstant(g.uniqueName(base + "_b_folded"), std::move(b2));
  }
  replaceAllUses(g, result, f.x);
  return true;
}

// A BatchNormalization that could not be folded becomes Mul + Add by [C,1,...,1] constants
// (a and b rounded to X's type).
bool batchNormToAffine(Graph& g, Node& n, const Affine& f) {
  const Value* x = f.x;
  const DType dt = x->type.dtype;
  if (!isFoldableFloat(dt) || dt != n.outputs[0]->type.dtype) return false;
  const int64_t C = static_cast<int64_t>(f.a.size());
  Dims shape(x->type.shape->size() - 1, 1);
  shape[0] = C;
  Tensor a(dt, shape), b(dt, shape);
  for (int64_t c = 0; c < C; ++c) {
    a.setF64(c, f.a[static_cast<size_t>(c)]);
    b.setF64(c, f.b[static_cast<size_t>(c)]);
  }
  bool zeroShift = true;
  for (int64_t c = 0; c < C; ++c) zeroShift &= b.getF64(c) == 0;
  const std::string base = n.name.empty() ? n.outputs[0]->name : n.name;
  Value* av = g.addConstant(g.uniqueName(base + "_scale"), std::move(a));
  Node* mul = insertNode(g, &n, "Mul", {f.x, av}, 1, base + "_mul");
  mul->outputs[0]->type = n.outputs[0]->type;
  Value* y = mul->outputs[0];
  if (!zeroShift) { // (a zero shift would be an Add of zeros for simplify to remove)
    Value* bv = g.addConstant(g.uniqueName(base + "_shift"), std::move(b));
    Node* add = insertNode(g, &n, "Add", {y, bv}, 1, base + "_add");
    add->outputs[0]->type = n.outputs[0]->type;
    y = add->outputs[0];
  }
  replaceAllUses(g, n.outputs[0], y);
  return true;
}

bool foldGraph(Graph& g) {
  bool changed = false;
  // Fold into producers first (a chain Conv -> BN -> Mul -> Add folds node by node).
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node* n = g.nodes[i].get();
    auto f = affineOf(g, *n);
    if (!f || numUses(g, n->outputs[0]) == 0 || !foldInto(g, *f, n->outputs[0])) continue;
    eraseNodes(g, {n});
    --i; // the next node moved into slot i
    changed = true;
  }
  // Then the BatchNormalizations that are left become per-channel Mul + Add.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node* n = g.nodes[i].get();
    if (!isOp(*n, "BatchNormalization") || numUses(g, n->outputs[0]) == 0) continue;
    auto f = affineOf(g, *n);
    if (!f || !batchNormToAffine(g, *n, *f)) continue;
    eraseNodes(g, {n});
    changed = true;
  }
  return changed;
}

} // namespace

bool foldAffineIntoConv(Model& m) {
  bool changed = false;
  forEachGraph(*m.graph, [&](Graph& g) { changed |= foldGraph(g); });
  return changed;
}

} // namespace aicc
