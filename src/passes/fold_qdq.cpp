// fold-qdq (see fold_qdq.h). Each QuantizeLinear is tried as the end of a pattern; a match
// inserts the integer node before it and redirects the Q's uses to the new node's output. The
// DequantizeLinear nodes are left for DCE (other consumers may still read them).
#include "passes/fold_qdq.h"

#include "ir/rewrite.h"

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>

namespace aicc {

namespace {

bool isOp(const Node* n, const char* op) { return n && n->op == op && n->domain.empty(); }

// A DequantizeLinear's operands: the quantized tensor, its scale and zero point (null = 0).
struct Dq {
  Value *q, *scale, *zp;
  int64_t axis;
};

// v, or what the Identity chain producing it forwards (ONNX Runtime's quantizer shares equal
// bias tensors through Identity nodes).
const Value* throughIdentity(const Value* v) {
  while (v && v->producer && isOp(v->producer, "Identity") && v->producer->hasInput(0))
    v = v->producer->inputs[0];
  return v;
}

std::optional<Dq> dqOf(const Value* v) {
  v = throughIdentity(v);
  const Node* n = v ? v->producer : nullptr;
  if (!isOp(n, "DequantizeLinear") || !n->hasInput(0) || !n->hasInput(1)) return std::nullopt;
  if (n->attrInt("block_size") != 0 || !n->inputs[1]->constant) return std::nullopt;
  if (n->hasInput(2) && !n->inputs[2]->constant) return std::nullopt;
  if (n->inputs[1]->type.dtype != DType::F32 || v->type.dtype != DType::F32) return std::nullopt;
  return Dq{n->inputs[0], n->inputs[1], n->hasInput(2) ? n->inputs[2] : nullptr,
            n->attrInt("axis")};
}

int64_t count(const Value* v) { return v && v->constant ? v->constant->numel() : 0; }

// The zero point as a value of the quantized type (when omitted, new zeros: a scalar, or n of
// them for a per-channel scale of n values).
Value* zeroPoint(Graph& g, Value* zp, DType t, int64_t n = 1) {
  if (zp) return zp;
  Tensor z(t, n == 1 ? Dims{} : Dims{n});
  for (int64_t i = 0; i < n; ++i) z.setI64(i, 0);
  return g.addConstant(g.uniqueName("qdq_zero"), std::move(z));
}

// Per-tensor quantization of an activation (scalar scale and zero point, u8/i8).
bool perTensor(const Dq& d) {
  return isQ8(d.q->type.dtype) && count(d.scale) == 1 && (!d.zp || count(d.zp) == 1);
}

// Whether Relu / Clip(lo, hi) before a Q with scale s, zero point z and range [qmin, qmax] is a
// no-op after the Q's own saturation: lo <= s * (qmin - z) and hi >= s * (qmax - z), each within
// half a step (a value clipped to the bound still rounds to the end of the range).
bool activationAbsorbed(const Node& act, double s, double z, double qmin, double qmax) {
  double lo = 0, hi = std::numeric_limits<double>::infinity();
  if (isOp(&act, "Clip")) {
    auto bound = [&](size_t i, double dflt) -> std::optional<double> {
      const char* attr = i == 1 ? "min" : "max"; // Clip before opset 11
      if (act.attr(attr)) return double(act.attrFloat(attr));
      if (!act.hasInput(i)) return dflt;
      if (!act.inputs[i]->constant || act.inputs[i]->constant->numel() != 1) return std::nullopt;
      return act.inputs[i]->constant->getF64(0);
    };
    auto l = bound(1, -std::numeric_limits<double>::infinity()), h = bound(2, hi);
    if (!l || !h) return false;
    lo = *l, hi = *h;
  }
  return lo < s * (qmin - z) + 0.5 * s && hi > s * (qmax - z) - 0.5 * s;
}

// The int32 bias of a QLinearConv: DQ(int32 const, scale xs * ws[m], zero point 0) as it is, or
// a float constant (or the value of a DQ of a constant with other scales: ONNX Runtime's quantizer
// shares equal biases between convolutions, quantized for the first) quantized with that scale;
// null when neither.
Value* convBias(Graph& g, Value* b, double xs, const std::vector<double>& ws, int64_t M) {
  auto scaleAt = [&](int64_t m) { return xs * ws[ws.size() == 1 ? 0 : size_t(m)]; };
  std::vector<double> value; // the float bias
  if (auto d = dqOf(b)) {
    if (!isInteger(d->q->type.dtype) || !d->q->constant || count(d->q) != M) return nullptr;
    const std::vector<double> bs = d->scale->constant->toF64Vector();
    const std::vector<double> zs =
        d->zp ? d->zp->constant->toF64Vector() : std::vector<double>(1, 0.0);
    if ((bs.size() != 1 && int64_t(bs.size()) != M) || (zs.size() != 1 && int64_t(zs.size()) != M))
      return nullptr;
    bool same = d->q->type.dtype == DType::I32;
    for (int64_t m = 0; m < M; ++m) {
      const double sm = bs[bs.size() == 1 ? 0 : size_t(m)], zm = zs[zs.size() == 1 ? 0 : size_t(m)];
      same = same && zm == 0 && std::fabs(sm - scaleAt(m)) <= 1e-6 * std::fabs(scaleAt(m));
      value.push_back((d->q->constant->getF64(m) - zm) * sm);
    }
    if (same) return d->q;
  } else {
    b = const_cast<Value*>(throughIdentity(b));
    if (!b->constant || b->type.dtype != DType::F32 || count(b) != M) return nullptr;
    value = b->constant->toF64Vector();
  }
  Tensor q(DType::I32, {M});
  for (int64_t m = 0; m < M; ++m) {
    const double v = std::nearbyint(value[size_t(m)] / scaleAt(m));
    if (!(std::fabs(v) < 2147483647.0)) return nullptr;
    q.setI64(m, static_cast<int64_t>(v));
  }
  return g.addConstant(g.uniqueName(b->name + "_quantized"), std::move(q));
}

// DQ(x [M, K]), DQ(w const) [, bias] -> Gemm (alpha = beta = 1, no transA) -> Q as a 1x1
// QLinearConv over M images of K channels, between two Reshapes (views): the weights [N, K]
// (transB) or [K, N] (transposed here, its per-column scales becoming per-channel ones) as
// [N, K, 1, 1]. Returns the last Reshape, or null.
Node* gemmAsConv(Graph& g, Node& qn, Node& op, const Dq& x, const Dq& w, Value* xz, Value* wz,
                 Value* ys, Value* yz, const std::string& base) {
  const Type& xt = x.q->type;
  if (op.attrInt("transA") != 0 || op.attrFloat("alpha") != 1.0f || op.attrFloat("beta") != 1.0f ||
      !xt.shape || xt.shape->size() != 2 || !(*xt.shape)[0].isStatic() ||
      !(*xt.shape)[1].isStatic() || w.q->constant->rank() != 2)
    return nullptr;
  const bool transB = op.attrInt("transB") != 0;
  const Tensor& W = *w.q->constant;
  const int64_t M = (*xt.shape)[0].value, K = (*xt.shape)[1].value;
  const int64_t N = transB ? W.dim(0) : W.dim(1), ns = count(w.scale);
  if ((transB ? W.dim(1) : W.dim(0)) != K || count(wz) != ns ||
      (ns != 1 && (ns != N || w.axis != (transB ? 0 : 1))))
    return nullptr;
  Value* bias = nullptr;
  if (op.hasInput(2)) {
    bias = convBias(g, op.inputs[2], x.scale->constant->getF64(0), w.scale->constant->toF64Vector(),
                    N);
    if (!bias) return nullptr;
  }
  Tensor wc(W.dtype(), {N, K, 1, 1});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wc.setI64(n * K + k, W.getI64(transB ? n * K + k : k * N + n));
  Value* wv = g.addConstant(g.uniqueName(w.q->name + "_nk11"), std::move(wc));
  Node* r1 =
      insertNode(g, &qn, "Reshape",
                 {x.q, g.addConstant(g.uniqueName(base + "_shape"), Tensor::fromI64({M, K, 1, 1}))},
                 1, base + "_rows");
  r1->outputs[0]->type =
      Type::tensor(xt.dtype, Shape{Dim::known(M), Dim::known(K), Dim::known(1), Dim::known(1)});
  std::vector<Value*> in = {r1->outputs[0], x.scale, xz, wv, w.scale, wz, ys, yz};
  if (bias) in.push_back(bias);
  Node* c = insertNode(g, &qn, "QLinearConv", std::move(in), 1, base + "_quant");
  c->attrs["kernel_shape"] = Attribute{Dims{1, 1}};
  c->outputs[0]->type = Type::tensor(
      qn.outputs[0]->type.dtype, Shape{Dim::known(M), Dim::known(N), Dim::known(1), Dim::known(1)});
  return insertNode(
      g, &qn, "Reshape",
      {c->outputs[0], g.addConstant(g.uniqueName(base + "_shape"), Tensor::fromI64({M, N}))}, 1,
      base + "_out");
}

// The integer node replacing the float op `op` that feeds Q node `qn` (through `act` or not).
Node* integerNode(Graph& g, Node& qn, Node& op, const Node* act) {
  Value* yq = qn.outputs[0];
  const DType yt = yq->type.dtype;
  Value* ys = qn.inputs[1];
  Value* yz = zeroPoint(g, qn.hasInput(2) ? qn.inputs[2] : nullptr, yt);
  if (act) {
    const double qmin = yt == DType::U8 ? 0 : -128, qmax = yt == DType::U8 ? 255 : 127;
    if (!activationAbsorbed(*act, ys->constant->getF64(0), yz->constant->getF64(0), qmin, qmax))
      return nullptr;
  }
  const std::string base = op.name.empty() ? yq->name : op.name;
  if (isOp(&op, "Add") || isOp(&op, "Mul")) {
    auto a = dqOf(op.inputs[0]), b = dqOf(op.inputs[1]);
    if (act || !a || !b || !perTensor(*a) || !perTensor(*b) || a->q->type.dtype != yt ||
        b->q->type.dtype != yt)
      return nullptr;
    return insertNode(
        g, &qn, "QLinear" + op.op,
        {a->q, a->scale, zeroPoint(g, a->zp, yt), b->q, b->scale, zeroPoint(g, b->zp, yt), ys, yz},
        1, base + "_quant", "com.microsoft");
  }
  auto x = dqOf(op.inputs[0]);
  auto w = op.inputs.size() > 1 ? dqOf(op.inputs[1]) : std::nullopt;
  if (!x || !w || !perTensor(*x) || !isQ8(w->q->type.dtype)) return nullptr;
  // Two run-time operands (a transformer's attention: Q K^T, P V) only as a MatMul, both per
  // tensor, of rank >= 2: QLinearMatMul over the batch.
  const auto rank = [](const Value* v) { return v->type.shape ? v->type.shape->size() : 0; };
  if (!w->q->constant &&
      (!isOp(&op, "MatMul") || act || !perTensor(*w) || rank(x->q) < 2 || rank(w->q) < 2))
    return nullptr;
  Value* xz = zeroPoint(g, x->zp, x->q->type.dtype);
  Value* wz = zeroPoint(g, w->zp, w->q->type.dtype, count(w->scale));
  if (isOp(&op, "MatMul")) {
    // b per tensor, or per column (axis 1 of a 2-D constant b).
    const int64_t N = !w->q->constant               ? 1
                      : w->q->constant->rank() == 2 ? w->q->constant->dim(1)
                                                    : -1;
    const int64_t ns = count(w->scale);
    if (act || N < 0 || (ns != 1 && (ns != N || w->axis != 1)) || count(wz) != ns) return nullptr;
    return insertNode(g, &qn, "QLinearMatMul", {x->q, x->scale, xz, w->q, w->scale, wz, ys, yz}, 1,
                      base + "_quant");
  }
  if (isOp(&op, "Gemm")) return gemmAsConv(g, qn, op, *x, *w, xz, wz, ys, yz, base);
  // Conv: weights per tensor or per output channel (axis 0).
  const Tensor& W = *w->q->constant;
  const int64_t M = W.rank() >= 1 ? W.dim(0) : 0, ns = count(w->scale);
  if (M <= 0 || (ns != 1 && (ns != M || w->axis != 0)) || count(wz) != ns) return nullptr;
  std::vector<Value*> in = {x->q, x->scale, xz, w->q, w->scale, wz, ys, yz};
  if (op.hasInput(2)) {
    Value* b = convBias(g, op.inputs[2], x->scale->constant->getF64(0),
                        w->scale->constant->toF64Vector(), M);
    if (!b) return nullptr;
    in.push_back(b);
  }
  Node* n = insertNode(g, &qn, "QLinearConv", std::move(in), 1, base + "_quant");
  for (const auto& [k, a] : op.attrs) n->attrs[k] = a;
  return n;
}

// Ops that only move or select their data input's values: between a DQ and a Q of the same
// scale, zero point and type they run on the quantized values as they are (exactly: Q(DQ(x)) is
// x, and the max of dequantized values is the dequantized max). Data inputs first (Concat: all).
bool movesValues(const Node& op) {
  static const std::set<std::string> kOps = {"MaxPool", "Reshape",   "Flatten",  "Transpose",
                                             "Squeeze", "Unsqueeze", "Identity", "Slice",
                                             "Concat",  "Resize"};
  if (!op.domain.empty() || !kOps.count(op.op)) return false;
  if (op.op == "MaxPool") return op.outputs.size() == 1; // no Indices
  if (op.op == "Resize") return !op.attr("mode") || op.attrString("mode") == "nearest";
  return true;
}

// Whether DQ d has exactly the scale, zero point and type of the Q node qn (per tensor).
bool sameQuantization(const Dq& d, const Node& qn) {
  const DType t = qn.outputs[0]->type.dtype;
  if (!perTensor(d) || d.q->type.dtype != t) return false;
  const double zq = qn.hasInput(2) ? qn.inputs[2]->constant->getF64(0) : 0.0;
  const double zd = d.zp ? d.zp->constant->getF64(0) : 0.0;
  return d.scale->constant->getF64(0) == qn.inputs[1]->constant->getF64(0) && zd == zq;
}

// The value-moving op, or a global average pool, on quantized values: op's copy with its data
// inputs replaced by the DQs' quantized tensors, or com.microsoft QLinearGlobalAveragePool (the
// mean requantized in float, as ONNX Runtime's kernel does).
Node* quantizedMove(Graph& g, Node& qn, Node& op) {
  const std::string base = (op.name.empty() ? qn.outputs[0]->name : op.name) + "_quant";
  if (isOp(&op, "GlobalAveragePool")) {
    auto x = dqOf(op.inputs[0]);
    if (!x || !perTensor(*x) || x->q->type.dtype != qn.outputs[0]->type.dtype) return nullptr;
    const DType t = x->q->type.dtype;
    Node* n = insertNode(g, &qn, "QLinearGlobalAveragePool",
                         {x->q, x->scale, zeroPoint(g, x->zp, t), qn.inputs[1],
                          zeroPoint(g, qn.hasInput(2) ? qn.inputs[2] : nullptr, t)},
                         1, base, "com.microsoft");
    for (const auto& [k, a] : op.attrs) n->attrs[k] = a;
    return n;
  }
  if (!movesValues(op)) return nullptr;
  std::vector<Value*> in = op.inputs;
  const bool concat = op.op == "Concat";
  const size_t data = concat ? in.size() : 1;
  std::vector<bool> requantize(data, false);
  for (size_t i = 0; i < data; ++i) {
    auto d = i < in.size() ? dqOf(in[i]) : std::nullopt;
    // A Concat input of another scale or zero point is requantized to the Q's on its own (Q is
    // elementwise: Q(Concat(..., DQ(x), ...)) = Concat(..., Q(DQ(x)), ...), one u8 -> u8 pass).
    requantize[i] = concat && d && perTensor(*d) && d->q->type.dtype == qn.outputs[0]->type.dtype &&
                    !sameQuantization(*d, qn);
    if (!d || (!requantize[i] && !sameQuantization(*d, qn))) return nullptr;
    if (!requantize[i]) in[i] = d->q;
  }
  for (size_t i = 0; i < data; ++i) {
    if (!requantize[i]) continue;
    std::vector<Value*> qin = {in[i], qn.inputs[1]};
    if (qn.hasInput(2)) qin.push_back(qn.inputs[2]);
    Node* r = insertNode(g, &qn, "QuantizeLinear", std::move(qin), 1, base + "_requant");
    Type t = in[i]->type;
    t.dtype = qn.outputs[0]->type.dtype;
    r->outputs[0]->type = t;
    in[i] = r->outputs[0];
  }
  Node* n = insertNode(g, &qn, op.op, std::move(in), 1, base);
  n->attrs = op.attrs;
  return n;
}

// The shape of v when static.
std::optional<Dims> dimsOf(const Value* v) {
  return v && v->type.isTensor() && v->type.shape ? toDims(*v->type.shape) : std::nullopt;
}

int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// MatMulInteger(a, b) -> Cast(to f32) -> Mul(s) (ONNX Runtime's quantize_dynamic writes it with
// s = Mul(a_scale, b_scale)) => com.microsoft.MatMulIntegerToFloat: the same int32 sums, the same
// conversion and f32 product, so exactly the same result. s per tensor or one value per column
// of b; the Mul(x, y) producing it becomes a_scale (the scalar) and b_scale, any other s is
// multiplied by 1 (a_scale when s is per column, b_scale otherwise). The zero points must be per
// tensor for a (the op's), per tensor or per column for b. The backend runs it as one int8 GEMM
// with an f32 epilogue.
Node* scaledMatMulInteger(Graph& g, Node& mul) {
  if (!isOp(&mul, "Mul") || mul.inputs.size() != 2 || mul.outputs[0]->type.dtype != DType::F32)
    return nullptr;
  for (size_t side : {0, 1}) {
    Value* c = mul.inputs[side];
    Node* cast = c ? c->producer : nullptr;
    if (!isOp(cast, "Cast") || cast->owner != &g || c->type.dtype != DType::F32 ||
        numUses(g, c) != 1)
      continue;
    Value* acc = cast->inputs[0];
    Node* mmi = acc ? acc->producer : nullptr;
    if (!isOp(mmi, "MatMulInteger") || mmi->owner != &g || numUses(g, acc) != 1) continue;
    auto bd = dimsOf(mmi->inputs[1]), out = dimsOf(mul.outputs[0]), ad = dimsOf(acc);
    if (!bd || bd->size() != 2 || !out || !ad || *out != *ad) continue;
    const int64_t N = (*bd)[1];
    auto perColumn = [&](const Value* v) {
      auto d = dimsOf(v);
      return d && (numel(*d) == 1 ? d->size() <= 1 : *d == Dims{N});
    };
    auto scalar = [&](const Value* v) {
      auto d = dimsOf(v);
      return d && d->size() <= 1 && numel(*d) == 1;
    };
    Value* s = mul.inputs[1 - side];
    if (!s || s->type.dtype != DType::F32 || !perColumn(s)) continue;
    if ((mmi->hasInput(2) && !scalar(mmi->inputs[2])) ||
        (mmi->hasInput(3) && !perColumn(mmi->inputs[3])))
      continue;
    Value *as = s, *bs = nullptr;
    const Node* sp = s->producer;
    if (isOp(sp, "Mul") && sp->inputs.size() == 2) {
      Value *x = sp->inputs[0], *y = sp->inputs[1];
      if (x && y && x->type.dtype == DType::F32 && y->type.dtype == DType::F32) {
        if (scalar(x) && perColumn(y))
          as = x, bs = y;
        else if (scalar(y) && perColumn(x))
          as = y, bs = x;
      }
    }
    if (!bs) { // s itself, times 1 (exact)
      Tensor one(DType::F32, {});
      one.data<float>()[0] = 1.0f;
      Value* unit = g.addConstant(g.uniqueName("unit_scale"), std::move(one));
      (scalar(s) ? bs : as) = unit;
      if (!scalar(s)) bs = s;
    }
    std::vector<Value*> in = {mmi->inputs[0],
                              mmi->inputs[1],
                              as,
                              bs,
                              mmi->hasInput(2) ? mmi->inputs[2] : nullptr,
                              mmi->hasInput(3) ? mmi->inputs[3] : nullptr};
    while (!in.back()) in.pop_back();
    Node* n = insertNode(g, &mul, "MatMulIntegerToFloat", std::move(in), 1,
                         mmi->name.empty() ? "matmul_integer" : mmi->name, "com.microsoft");
    n->outputs[0]->type = mul.outputs[0]->type;
    replaceAllUses(g, mul.outputs[0], n->outputs[0]);
    eraseNodes(g, {&mul, cast, mmi});
    return n;
  }
  return nullptr;
}

// One match: the first QuantizeLinear that ends a pattern, rewritten; false when none does.
bool foldOne(Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (scaledMatMulInteger(g, *g.nodes[i])) return true;
    Node* qn = g.nodes[i].get();
    // A Q per tensor to u8/i8 with an f32 scale: what every pattern ends in.
    if (!isOp(qn, "QuantizeLinear") || !qn->hasInput(1) || !qn->inputs[1]->constant ||
        (qn->hasInput(2) && !qn->inputs[2]->constant) || qn->attrInt("block_size") != 0 ||
        !isQ8(qn->outputs[0]->type.dtype) || count(qn->inputs[1]) != 1 ||
        (qn->hasInput(2) && count(qn->inputs[2]) != 1) || qn->inputs[1]->type.dtype != DType::F32)
      continue;
    Value* yf = qn->inputs[0];
    Node* act = yf->producer && (isOp(yf->producer, "Relu") || isOp(yf->producer, "Clip"))
                    ? yf->producer
                    : nullptr;
    Value* opOut = act ? act->inputs[0] : yf;
    Node* op = opOut ? opOut->producer : nullptr;
    if (!op || op->owner != &g || op->outputs.size() != 1 || numUses(g, opOut) != 1 ||
        (act && numUses(g, yf) != 1))
      continue;
    Node* n = nullptr;
    if (isOp(op, "Conv") || isOp(op, "MatMul") || isOp(op, "Add") || isOp(op, "Mul") ||
        isOp(op, "Gemm"))
      n = integerNode(g, *qn, *op, act);
    else if (!act)
      n = quantizedMove(g, *qn, *op);
    if (!n) continue;
    n->outputs[0]->type = qn->outputs[0]->type;
    replaceAllUses(g, qn->outputs[0], n->outputs[0]);
    std::vector<Node*> dead = {qn, op};
    if (act) dead.push_back(act);
    eraseNodes(g, dead);
    return true;
  }
  return false;
}

} // namespace

bool foldQdq(Model& m) {
  bool changed = false;
  forEachGraph(*m.graph, [&](Graph& g) {
    while (foldOne(g)) changed = true;
  });
  return changed;
}

} // namespace aicc
