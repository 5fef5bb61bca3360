// Gradient rules of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (reduction none / sum /
// mean, class weights, ignore_index). With lp = x (NLL) or LogSoftmax(x, axis=1) (SCE), each
// element's loss is -w_e * lp[n, t_e, d...] where w_e = weight[t_e] (1 without weights, 0 where
// t_e == ignore_index); "mean" divides the sum by sum(w_e). So
//   dlp = onehot(t) * (-w_e * g_e),  g_e = dOut_e (none), dOut (sum), dOut / sum(w) (mean),
// and for SCE dx = dlp - softmax(x) * sum_c(dlp) (plus the log_prob output's gradient in dlp).
// The class weights get their gradient too (they are float constants of the model).
#include "ops/helpers.h"
#include "ops/nn_grad.h"

namespace aicc::nngrad {
namespace {

void lossGrad(GradCtx& c, bool softmax) {
  if (!c.needs(0) && !c.needs(2)) return;
  E e{c};
  const Node& n = c.node;
  Value *X = c.in(0), *T = c.in(1), *W = n.hasInput(2) ? c.in(2) : nullptr;
  const int64_t rank = c.rankOf(X);
  AICC_CHECK(rank >= 2, "{}: input 0 has rank {}", n.describe(), rank);
  const std::string red = n.attrString("reduction");
  AICC_CHECK(red == "none" || red == "sum" || red == "mean", "{}: unknown reduction '{}'",
             n.describe(), red);
  Value* t = T->type.dtype == DType::I64 ? T : e.cast(T, DType::I64);
  Value* valid = nullptr;
  if (n.attr("ignore_index"))
    valid = e.op("Not", {e.op("Equal", {t, e.i64(n.attrInt("ignore_index"))})});
  Value* tsafe = valid ? e.where(valid, t, e.i64(0)) : t;
  // w_e (nullptr = 1 everywhere).
  Value* w = W ? e.castLike(e.op("Gather", {W, tsafe}), X) : nullptr;
  if (valid) w = e.where(valid, w ? w : e.k(1, X), e.k(0, X));
  // One-hot of the targets over axis 1, in X's type.
  std::vector<int64_t> cshape(static_cast<size_t>(rank), 1);
  cshape[1] = -1;
  Value* numClasses = e.reshape(e.shape(X, 1, 2), std::vector<int64_t>{});
  Value* classes = e.reshape(e.op("Range", {e.i64(0), numClasses, e.i64(1)}), cshape);
  Value* onehot = e.cast(e.op("Equal", {e.unsqueeze(tsafe, {1}), classes}), X->type.dtype);

  Value* dOut = c.dout(0);
  Value* wsum = nullptr; // sum of w_e (reduction mean)
  if (red == "mean") {
    Value* all = w ? w : e.op("ConstantOfShape", {e.shape(T)}, {{"value", Attribute{[&] {
                                                                   Tensor one(X->type.dtype, {1});
                                                                   one.setF64(0, 1.0);
                                                                   return one;
                                                                 }()}}});
    wsum = e.reduceSum(all, {}, false);
  }
  // g_e, shaped like the targets (none) or a scalar.
  Value* g = dOut && wsum ? e.div(dOut, wsum) : dOut;
  Value* lp = softmax ? e.op("LogSoftmax", {X}, {{"axis", Attribute{int64_t{1}}}}) : X;

  if (c.needs(0)) {
    Value* dlp = nullptr;
    if (g) {
      Value* coef = e.neg(w ? e.mul(w, g) : g);
      bool scalar = red != "none" && !w;
      dlp = e.mul(onehot, scalar ? coef : e.unsqueeze(coef, {1}));
    }
    if (softmax && c.dout(1)) dlp = dlp ? e.add(dlp, c.dout(1)) : c.dout(1);
    if (!dlp) dlp = c.zerosLike(X);
    Value* dx = dlp;
    if (softmax) {
      Value* sm = e.op("Softmax", {X}, {{"axis", Attribute{int64_t{1}}}});
      dx = e.sub(dlp, e.mul(sm, e.reduceSum(dlp, {1}, true)));
    }
    c.give(0, dx);
  }
  if (c.needs(2)) {
    // d/dw_c = sum over elements with target c of -lp_e * g_e ("mean": (-lp_e - loss) * g_e).
    Value* dw;
    if (!g) {
      dw = c.zerosLike(W);
    } else {
      Value* lpe = e.reduceSum(e.mul(onehot, lp), {1}, false); // lp at the target
      Value* q = e.neg(lpe);
      if (wsum) q = e.sub(q, c.out(0));
      q = e.mul(q, g);
      if (valid) q = e.where(valid, q, e.k(0, X));
      std::vector<int64_t> axes{0};
      for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
      dw = e.reduceSum(e.mul(onehot, e.unsqueeze(q, {1})), axes, false);
    }
    c.give(2, e.castLike(dw, W));
  }
}

} // namespace

void registerLossGrads(OpRegistry& r) {
  r.at("NegativeLogLikelihoodLoss").grad = [](GradCtx& c) { lossGrad(c, false); };
  r.at("SoftmaxCrossEntropyLoss").grad = [](GradCtx& c) { lossGrad(c, true); };
}

} // namespace aicc::nngrad
