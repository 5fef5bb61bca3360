// Gradient rules of the neural-network family: shared emit helpers (ops/nn_grad.h), MatMul, Gemm
// and Dropout here; convolutions, pooling, normalizations, losses and recurrent ops in
// ops/nn_grad_*.cpp.
#include "ops/nn_grad.h"

#include "ops/helpers.h"

namespace aicc {

namespace nngrad {

Dims staticDims(GradCtx& c, Value* v, const char* what) {
  auto d = v->type.shape ? toDims(*v->type.shape) : std::nullopt;
  AICC_CHECK(d, "{}: unsupported: the gradient needs the static shape of {} '{}', it is {}",
             c.node.describe(), what, v->name, formatType(v->type));
  return *d;
}

const Tensor* constInput(GradCtx& c, size_t i) {
  Value* v = c.in(i);
  return v && v->isConstant() ? &*v->constant : nullptr;
}

namespace {

std::vector<int64_t> swapLast(int64_t rank) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < rank; ++i) p.push_back(i);
  std::swap(p[static_cast<size_t>(rank - 2)], p[static_cast<size_t>(rank - 1)]);
  return p;
}

// MatMul (numpy semantics): 1-D operands are promoted to matrices ([K] -> [1, K] for A,
// [K] -> [K, 1] for B), batch dims broadcast; gradients are summed back to the operands' shapes.
void matmulGrad(GradCtx& c) {
  E e{c};
  Value *A = c.in(0), *B = c.in(1), *dy = c.doutOrZeros(0);
  const int64_t ra = c.rankOf(A), rb = c.rankOf(B);
  Value* a = ra == 1 ? e.unsqueeze(A, {0}) : A;
  Value* b = rb == 1 ? e.unsqueeze(B, {1}) : B;
  Value* g = dy;
  if (ra == 1 && rb == 1)
    g = e.reshape(dy, {1, 1});
  else if (ra == 1)
    g = e.unsqueeze(dy, {-2});
  else if (rb == 1)
    g = e.unsqueeze(dy, {-1});
  if (c.needs(0)) {
    Value* ga = c.sumToShape(e.matmul(g, e.transpose(b, swapLast(std::max<int64_t>(rb, 2)))), a);
    c.give(0, ra == 1 ? e.squeeze(ga, {0}) : ga);
  }
  if (c.needs(1)) {
    Value* gb = c.sumToShape(e.matmul(e.transpose(a, swapLast(std::max<int64_t>(ra, 2))), g), b);
    c.give(1, rb == 1 ? e.squeeze(gb, {1}) : gb);
  }
}

// Gemm: Y = alpha * op(A) op(B) + beta * C. The operand gradients are Gemms themselves.
void gemmGrad(GradCtx& c) {
  E e{c};
  const Node& n = c.node;
  const int64_t ta = n.attrInt("transA") != 0, tb = n.attrInt("transB") != 0;
  const float alpha = n.attrFloat("alpha"), beta = n.attrFloat("beta");
  Value *A = c.in(0), *B = c.in(1), *dy = c.doutOrZeros(0);
  auto gemm = [&](Value* x, Value* y, int64_t tx, int64_t ty) {
    return e.op("Gemm", {x, y},
                {{"alpha", Attribute{alpha}},
                 {"beta", Attribute{1.0f}},
                 {"transA", Attribute{tx}},
                 {"transB", Attribute{ty}}});
  };
  if (c.needs(0)) c.give(0, ta ? gemm(B, dy, tb, 1) : gemm(dy, B, 0, 1 - tb));
  if (c.needs(1)) c.give(1, tb ? gemm(dy, A, 1, ta) : gemm(A, dy, 1 - ta, 0));
  if (c.needs(2)) {
    Value* g = beta == 1.0f ? dy : e.mul(dy, e.k(static_cast<double>(beta), dy));
    c.give(2, c.sumToShape(g, c.in(2)));
  }
}

// Dropout: the identity in inference mode; in training mode y = x * mask / (1 - ratio) (0 when
// ratio is 1). The mask is the forward node's second output, added to the node when the model
// did not ask for it (a recomputation would draw a different mask).
void dropoutGrad(GradCtx& c) {
  E e{c};
  Value *X = c.in(0), *dy = c.doutOrZeros(0);
  const Tensor* tm = constInput(c, 2);
  const bool hasTraining = c.node.hasInput(2);
  if (!hasTraining || (tm && tm->numel() == 1 && tm->getI64(0) == 0)) {
    c.give(0, dy);
    if (c.needs(1)) c.give(1, c.zerosLike(c.in(1)));
    return;
  }
  Value* mask = c.out(1);
  if (!mask) {
    mask = c.graph.addValue(
        c.graph.uniqueName((c.node.name.empty() ? "dropout" : c.node.name) + "_mask"),
        Type::tensor(DType::Bool, X->type.shape));
    mask->producer = &c.node;
    c.node.outputs.resize(2, nullptr);
    c.node.outputs[1] = mask;
  }
  // s = 1 / (1 - ratio) (0 when ratio == 1) in training mode, 1 otherwise.
  Value* s;
  const Tensor* rt = constInput(c, 1);
  if (!c.node.hasInput(1) || rt) {
    double ratio = rt ? rt->getF64(0) : 0.5;
    s = e.k(ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0, X);
  } else {
    Value* r = e.castLike(c.in(1), X);
    Value* one = e.k(1, X);
    s = e.where(e.op("Less", {r, one}), e.div(one, e.sub(one, r)), e.k(0, X));
  }
  if (!tm) s = e.where(c.in(2), s, e.k(1, X));
  Value* zero = e.k(0, X);
  c.give(0, e.where(mask, e.mul(dy, s), zero));
  if (c.needs(1)) {
    // d/d ratio of x * s(ratio) with the mask held fixed: x * s^2 (training mode only).
    Value* g = e.reduceSum(e.where(mask, e.mul(dy, X), zero), {}, false);
    g = e.mul(g, e.mul(s, s));
    if (!tm) g = e.where(c.in(2), g, zero);
    c.give(1, e.reshape(e.castLike(g, c.in(1)), e.shape(c.in(1))));
  }
}

} // namespace

void registerLinalgGrads(OpRegistry& r) {
  r.at("MatMul").grad = matmulGrad;
  r.at("Gemm").grad = gemmGrad;
  r.at("Dropout").grad = dropoutGrad;
}

} // namespace nngrad

void registerNnGrads(OpRegistry& r) {
  nngrad::registerLinalgGrads(r);
  nngrad::registerConvGrads(r);
  nngrad::registerPoolGrads(r);
  nngrad::registerNormGrads(r);
  nngrad::registerLossGrads(r);
  nngrad::registerRnnGrads(r);
}

} // namespace aicc
