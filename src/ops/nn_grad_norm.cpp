// Gradient rules of BatchNormalization (inference mode: X, scale, B, input_mean, input_var;
// training mode: the full gradient through the batch statistics, and through the running /
// saved statistics outputs), LayerNormalization (X, Scale, B; the Mean / InvStdDev outputs too)
// and InstanceNormalization. The statistics are recomputed in X's element type.
//
// With xhat = (x - mean) * inv, inv = 1 / sqrt(var + eps), and means over the normalized axes:
//   dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),  dxhat = dy * scale.
#include "ops/helpers.h"
#include "ops/nn_grad.h"

namespace aicc::nngrad {
namespace {

std::vector<int64_t> axesFrom(int64_t from, int64_t rank, bool withBatch) {
  std::vector<int64_t> a;
  if (withBatch) a.push_back(0);
  for (int64_t i = from; i < rank; ++i) a.push_back(i);
  return a;
}

// A per-channel [C] parameter reshaped to [1, C, 1, ...] (rank `rank`) in `like`'s type.
Value* perChannel(E& e, Value* p, Value* like, int64_t rank) {
  std::vector<int64_t> s(static_cast<size_t>(rank), 1);
  s[1] = -1;
  return e.reshape(e.castLike(p, like), s);
}

void requireVector(GradCtx& c, size_t i, const char* what) {
  Value* v = c.in(i);
  AICC_CHECK(!v->type.shape || v->type.shape->size() == 1,
             "{}: unsupported: gradient with a per-activation {} of shape {} (expected [C])",
             c.node.describe(), what, formatType(v->type));
}

// 1 / (number of elements of X over `axes`), static when the dims are.
Value* invCount(E& e, Value* X, const std::vector<int64_t>& axes) {
  if (auto d = X->type.shape ? toDims(*X->type.shape) : std::nullopt) {
    int64_t n = 1;
    for (int64_t a : axes) n *= (*d)[static_cast<size_t>(a)];
    return e.k(n ? 1.0 / static_cast<double>(n) : 0.0, X);
  }
  Value* dims = e.op("Gather", {e.shape(X), e.ints(axes)});
  Value* n =
      e.cast(e.op("ReduceProd", {dims}, {{"keepdims", Attribute{int64_t{0}}}}), X->type.dtype);
  return e.div(e.k(1, X), n);
}

struct Stats {
  Value *d, *inv, *xhat; // x - mean, 1/sqrt(var + eps), d * inv
};

Stats batchStats(E& e, Value* X, const std::vector<int64_t>& axes, double eps) {
  Value* m = e.reduceMean(X, axes, true);
  Value* d = e.sub(X, m);
  Value* v = e.reduceMean(e.mul(d, d), axes, true);
  Value* inv = e.div(e.k(1, X), e.op("Sqrt", {e.add(v, e.k(eps, X))}));
  return {d, inv, e.mul(d, inv)};
}

// dx of a normalization over `axes` with batch statistics, from dxhat = dy * scale.
Value* normBackward(E& e, const Stats& s, Value* dxhat, const std::vector<int64_t>& axes) {
  Value* a = e.reduceMean(dxhat, axes, true);
  Value* b = e.reduceMean(e.mul(dxhat, s.xhat), axes, true);
  return e.mul(s.inv, e.sub(e.sub(dxhat, a), e.mul(s.xhat, b)));
}

// Adds the gradient flowing into the statistics themselves: dMean (of the mean) and dVar (of the
// biased variance), both broadcastable against x.
Value* addStatGrads(E& e, Value* dx, const Stats& s, Value* X, const std::vector<int64_t>& axes,
                    Value* dMean, Value* dVar) {
  if (!dMean && !dVar) return dx;
  Value* ic = invCount(e, X, axes);
  if (dMean) dx = e.add(dx, e.mul(dMean, ic));
  if (dVar) dx = e.add(dx, e.mul(e.mul(dVar, e.k(2, X)), e.mul(s.d, ic)));
  return dx;
}

// Sums optional terms (nullptr = zero); nullptr when all are.
Value* addOpt(E& e, Value* a, Value* b) { return !a ? b : !b ? a : e.add(a, b); }

void batchNormGrad(GradCtx& c) {
  E e{c};
  Value *X = c.in(0), *dy = c.dout(0);
  const int64_t rank = c.rankOf(X);
  AICC_CHECK(rank >= 2, "{}: input X has rank {}", c.node.describe(), rank);
  for (size_t i = 1; i <= 4; ++i)
    requireVector(c, i, i == 1 ? "scale" : i == 2 ? "B" : i == 3 ? "mean" : "var");
  const double eps = c.node.attrFloat("epsilon"), mom = c.node.attrFloat("momentum");
  const bool training = c.node.attrInt("training_mode") != 0;
  const auto axes = axesFrom(2, rank, true);
  Value* scale = perChannel(e, c.in(1), X, rank);
  auto toParam = [&](Value* g, size_t i) {
    return e.reshape(e.castLike(g, c.in(i)), e.shape(c.in(i)));
  };
  if (!training) {
    Value* mean = perChannel(e, c.in(3), X, rank);
    Value* var = perChannel(e, c.in(4), X, rank);
    Value* inv = e.div(e.k(1, X), e.op("Sqrt", {e.add(var, e.k(eps, X))}));
    if (!dy) dy = c.zerosLike(X);
    Value* d = e.sub(X, mean);
    if (c.needs(0)) c.give(0, e.mul(dy, e.mul(scale, inv)));
    if (c.needs(1)) c.give(1, toParam(e.reduceSum(e.mul(dy, e.mul(d, inv)), axes, false), 1));
    if (c.needs(2)) c.give(2, toParam(e.reduceSum(dy, axes, false), 2));
    if (c.needs(3))
      c.give(3, toParam(e.neg(e.mul(e.reduceSum(dy, axes, true), e.mul(scale, inv))), 3));
    if (c.needs(4)) {
      Value* inv3 = e.mul(inv, e.mul(inv, inv));
      Value* g = e.mul(e.reduceSum(e.mul(dy, d), axes, true), e.mul(scale, inv3));
      c.give(4, toParam(e.mul(g, e.k(-0.5, X)), 4));
    }
    return;
  }
  Stats s = batchStats(e, X, axes, eps);
  // Gradients flowing into the batch mean / variance through the running and saved statistics.
  auto stat = [&](size_t out) {
    return c.dout(out) ? perChannel(e, c.dout(out), X, rank) : nullptr;
  };
  auto scaled = [&](Value* v, double f) { return v ? e.mul(v, e.k(f, X)) : nullptr; };
  Value* dMean = addOpt(e, scaled(stat(1), 1 - mom), stat(3));
  Value* dVar = addOpt(e, scaled(stat(2), 1 - mom), stat(4));
  if (c.needs(0)) {
    Value* dx = dy ? normBackward(e, s, e.mul(dy, scale), axes) : c.zerosLike(X);
    c.give(0, addStatGrads(e, dx, s, X, axes, dMean, dVar));
  }
  if (!dy) dy = c.zerosLike(X);
  if (c.needs(1)) c.give(1, toParam(e.reduceSum(e.mul(dy, s.xhat), axes, false), 1));
  if (c.needs(2)) c.give(2, toParam(e.reduceSum(dy, axes, false), 2));
  // running = input * momentum + batch * (1 - momentum).
  for (size_t i : {size_t{3}, size_t{4}})
    if (c.needs(i))
      c.give(i,
           c.dout(i - 2) ? e.mul(c.dout(i - 2), e.k(mom, c.dout(i - 2))) : c.zerosLike(c.in(i)));
}

void layerNormGrad(GradCtx& c) {
  E e{c};
  Value *X = c.in(0), *scale = c.in(1), *dy = c.doutOrZeros(0);
  const int64_t rank = c.rankOf(X);
  const int64_t axis = normAxis(c.node.attrInt("axis"), rank);
  const auto axes = axesFrom(axis, rank, false);
  Stats s = batchStats(e, X, axes, c.node.attrFloat("epsilon"));
  if (c.needs(0)) {
    Value* dx = normBackward(e, s, e.mul(dy, scale), axes);
    Value* dMean = c.dout(1) ? e.castLike(c.dout(1), X) : nullptr;
    Value* dVar = nullptr;
    if (c.dout(2)) { // InvStdDev = (var + eps)^-1/2
      Value* inv3 = e.mul(s.inv, e.mul(s.inv, s.inv));
      dVar = e.mul(e.mul(e.castLike(c.dout(2), X), inv3), e.k(-0.5, X));
    }
    c.give(0, addStatGrads(e, dx, s, X, axes, dMean, dVar));
  }
  if (c.needs(1)) c.give(1, c.sumToShape(e.mul(dy, s.xhat), scale));
  if (c.needs(2)) c.give(2, c.sumToShape(dy, c.in(2)));
}

void instanceNormGrad(GradCtx& c) {
  E e{c};
  Value *X = c.in(0), *dy = c.doutOrZeros(0);
  const int64_t rank = c.rankOf(X);
  AICC_CHECK(rank >= 2, "{}: input X has rank {}", c.node.describe(), rank);
  const auto axes = axesFrom(2, rank, false), paramAxes = axesFrom(2, rank, true);
  Stats s = batchStats(e, X, axes, c.node.attrFloat("epsilon"));
  Value* scale = perChannel(e, c.in(1), X, rank);
  if (c.needs(0)) c.give(0, normBackward(e, s, e.mul(dy, scale), axes));
  auto toParam = [&](Value* g, size_t i) {
    return e.reshape(e.castLike(g, c.in(i)), e.shape(c.in(i)));
  };
  if (c.needs(1)) c.give(1, toParam(e.reduceSum(e.mul(dy, s.xhat), paramAxes, false), 1));
  if (c.needs(2)) c.give(2, toParam(e.reduceSum(dy, paramAxes, false), 2));
}

} // namespace

void registerNormGrads(OpRegistry& r) {
  r.at("BatchNormalization").grad = batchNormGrad;
  r.at("LayerNormalization").grad = layerNormGrad;
  r.at("InstanceNormalization").grad = instanceNormGrad;
}

} // namespace aicc::nngrad
