// Gradient rules of the elementwise arithmetic ops (Add Sub Mul Div Pow Neg Abs Sqrt Reciprocal
// Exp Log Sin Cos Tan Sinh Cosh Asin Acos Atan Asinh Acosh Atanh Tanh Erf, Max Min Sum Mean,
// Where, Clip, Identity, Cast, CastLike, and the piecewise-constant Sign Floor Ceil Round), plus
// the helpers shared with the other elementwise_grad_*.cpp files (activations, reductions and
// softmax, data movement, einsum).
#include "ops/elementwise_grad.h"

#include "ops/helpers.h"

#include <cmath>

namespace aicc {

namespace grad {

std::optional<std::vector<int64_t>> constInts(GradCtx& c, size_t i) {
  Value* v = c.in(i);
  if (!v || !v->isConstant() || !isInteger(v->constant->dtype())) return std::nullopt;
  return v->constant->toI64Vector();
}

Value* scatterBack(GradCtx& c, Value* x, Value* dy,
                   const std::function<Value*(Value* iota, Value* fill)>& moveIndices,
                   Value** fillGrad) {
  B b{c};
  Value* n = b.op("Size", {x}); // rank-0 i64
  Value* one = c.scalar(1, DType::I64);
  Value* iota = b.reshape(b.op("Range", {c.scalar(0, DType::I64), n, one}), b.shape(x));
  Value* idx = moveIndices(iota, n);
  Value* flatIdx = b.reshape(idx, b.ints({-1}));
  Value* flatDy = b.reshape(dy, b.ints({-1}));
  Value* n1 = b.op("Unsqueeze", {n, b.ints({0})});
  Value* len = fillGrad ? b.add(n1, b.ints({1})) : n1;
  Tensor zero(x->type.dtype, {1});
  Value* zeros = b.op("ConstantOfShape", {len}, {{"value", Attribute{zero}}});
  Value* acc =
      b.op("ScatterElements", {zeros, flatIdx, flatDy},
           {{"axis", Attribute{int64_t{0}}}, {"reduction", Attribute{std::string("add")}}});
  if (fillGrad) {
    *fillGrad = b.op("Slice", {acc, n1, len});
    acc = b.op("Slice", {acc, b.ints({0}), n1});
  }
  return b.reshape(acc, b.shape(x));
}

namespace {

using UnaryFn = std::function<Value*(B& b, Value* x, Value* y, Value* dy)>;

// y = f(x): dx = rule(x, y, dy).
void unary(OpRegistry& r, const char* op, UnaryFn fn) {
  OpBuilder(r.at(op)).grad([fn](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    c.give(0, fn(b, c.in(0), c.out(0), c.doutOrZeros(0)));
  });
}

// Gradient of input i of a broadcasting op: `g` is shaped like the output.
void giveReduced(GradCtx& c, size_t i, Value* g) {
  if (c.needs(i)) c.give(i, c.sumToShape(g, c.in(i)));
}

void registerBinary(OpRegistry& r) {
  OpBuilder(r.at("Add")).grad([](GradCtx& c) {
    Value* dy = c.doutOrZeros(0);
    giveReduced(c, 0, dy);
    giveReduced(c, 1, dy);
  });
  OpBuilder(r.at("Sub")).grad([](GradCtx& c) {
    B b{c};
    Value* dy = c.doutOrZeros(0);
    giveReduced(c, 0, dy);
    if (c.needs(1)) giveReduced(c, 1, b.neg(dy));
  });
  OpBuilder(r.at("Mul")).grad([](GradCtx& c) {
    B b{c};
    Value* dy = c.doutOrZeros(0);
    if (c.needs(0)) giveReduced(c, 0, b.mul(dy, c.in(1)));
    if (c.needs(1)) giveReduced(c, 1, b.mul(dy, c.in(0)));
  });
  OpBuilder(r.at("Div")).grad([](GradCtx& c) {
    B b{c};
    Value* dy = c.doutOrZeros(0);
    Value* gy = b.div(dy, c.in(1)); // d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b
    if (c.needs(0)) giveReduced(c, 0, gy);
    if (c.needs(1)) giveReduced(c, 1, b.neg(b.mul(gy, c.out(0))));
  });
  OpBuilder(r.at("Pow")).grad([](GradCtx& c) {
    B b{c};
    Value *x = c.in(0), *p = c.in(1), *y = c.out(0), *dy = c.doutOrZeros(0);
    if (c.needs(0)) {
      // p * x^(p-1), and 0 where p == 0 (x^-1 would be inf at x = 0).
      Value* pf = b.castLike(p, x);
      Value* d = b.mul(pf, b.op("Pow", {x, b.sub(pf, b.k(1, x))}));
      d = b.where(b.equal(pf, b.k(0, x)), b.k(0, x), d);
      giveReduced(c, 0, b.mul(dy, d));
    }
    if (c.needs(1)) {
      // y * log(x); 0 where x == 0 (the limit for p > 0); NaN for x < 0 (undefined).
      Value* d = b.mul(y, b.un("Log", x));
      d = b.where(b.equal(x, b.k(0, x)), b.k(0, x), d);
      giveReduced(c, 1, b.castLike(b.mul(dy, d), p));
    }
  });
}

void registerUnary(OpRegistry& r) {
  unary(r, "Neg", [](B& b, Value*, Value*, Value* dy) { return b.neg(dy); });
  unary(r, "Abs", [](B& b, Value* x, Value*, Value* dy) { return b.mul(dy, b.un("Sign", x)); });
  unary(r, "Sqrt",
        [](B& b, Value*, Value* y, Value* dy) { return b.div(b.mul(dy, b.k(0.5, y)), y); });
  unary(r, "Reciprocal",
        [](B& b, Value*, Value* y, Value* dy) { return b.neg(b.mul(dy, b.mul(y, y))); });
  unary(r, "Exp", [](B& b, Value*, Value* y, Value* dy) { return b.mul(dy, y); });
  unary(r, "Log", [](B& b, Value* x, Value*, Value* dy) { return b.div(dy, x); });
  unary(r, "Sin", [](B& b, Value* x, Value*, Value* dy) { return b.mul(dy, b.un("Cos", x)); });
  unary(r, "Cos",
        [](B& b, Value* x, Value*, Value* dy) { return b.neg(b.mul(dy, b.un("Sin", x))); });
  unary(r, "Tanh",
        [](B& b, Value*, Value* y, Value* dy) { return b.mul(dy, b.sub(b.k(1, y), b.mul(y, y))); });
  unary(r, "Erf", [](B& b, Value* x, Value*, Value* dy) { // 2/sqrt(pi) exp(-x^2)
    Value* e = b.un("Exp", b.neg(b.mul(x, x)));
    return b.mul(dy, b.mul(e, b.k(2.0 / std::sqrt(M_PI), x)));
  });
  unary(r, "Tan", [](B& b, Value*, Value* y, Value* dy) { // 1 + tan^2
    return b.mul(dy, b.add(b.k(1, y), b.mul(y, y)));
  });
  unary(r, "Sinh", [](B& b, Value* x, Value*, Value* dy) { return b.mul(dy, b.un("Cosh", x)); });
  unary(r, "Cosh", [](B& b, Value* x, Value*, Value* dy) { return b.mul(dy, b.un("Sinh", x)); });
  unary(r, "Atan",
        [](B& b, Value* x, Value*, Value* dy) { return b.div(dy, b.add(b.k(1, x), b.mul(x, x))); });
  unary(r, "Atanh",
        [](B& b, Value* x, Value*, Value* dy) { return b.div(dy, b.sub(b.k(1, x), b.mul(x, x))); });
  unary(r, "Asin", [](B& b, Value* x, Value*, Value* dy) { // 1/sqrt(1 - x^2)
    return b.div(dy, b.un("Sqrt", b.sub(b.k(1, x), b.mul(x, x))));
  });
  unary(r, "Acos", [](B& b, Value* x, Value*, Value* dy) {
    return b.neg(b.div(dy, b.un("Sqrt", b.sub(b.k(1, x), b.mul(x, x)))));
  });
  unary(r, "Asinh", [](B& b, Value* x, Value*, Value* dy) {
    return b.div(dy, b.un("Sqrt", b.add(b.mul(x, x), b.k(1, x))));
  });
  unary(r, "Acosh", [](B& b, Value* x, Value*, Value* dy) {
    return b.div(dy, b.un("Sqrt", b.sub(b.mul(x, x), b.k(1, x))));
  });
  unary(r, "Identity", [](B&, Value*, Value*, Value* dy) { return dy; });
  unary(r, "Cast", [](B& b, Value* x, Value*, Value* dy) { return b.castLike(dy, x); });
  // Piecewise constant: zero gradient (almost everywhere).
  for (const char* op : {"Sign", "Floor", "Ceil", "Round"})
    unary(r, op, [](B& b, Value* x, Value*, Value*) { return b.c.zerosLike(x); });
  OpBuilder(r.at("CastLike")).grad([](GradCtx& c) {
    B b{c};
    if (c.needs(0)) c.give(0, b.castLike(c.doutOrZeros(0), c.in(0)));
    if (c.needs(1)) c.give(1, c.zerosLike(c.in(1))); // only its type is used
  });
}

void registerVariadic(OpRegistry& r) {
  OpBuilder(r.at("Sum")).grad([](GradCtx& c) {
    Value* dy = c.doutOrZeros(0);
    for (size_t i = 0; i < c.node.inputs.size(); ++i) giveReduced(c, i, dy);
  });
  OpBuilder(r.at("Mean")).grad([](GradCtx& c) {
    B b{c};
    Value* dy = c.doutOrZeros(0);
    Value* g = b.div(dy, b.k(static_cast<double>(c.node.inputs.size()), dy));
    for (size_t i = 0; i < c.node.inputs.size(); ++i) giveReduced(c, i, g);
  });
  // Max/Min: the gradient goes to the inputs equal to the result, shared equally between ties.
  for (const char* op : {"Max", "Min"})
    OpBuilder(r.at(op)).grad([](GradCtx& c) {
      B b{c};
      Value *y = c.out(0), *dy = c.doutOrZeros(0);
      size_t n = c.node.inputs.size();
      if (n == 1) return giveReduced(c, 0, dy);
      std::vector<Value*> masks, fmasks;
      for (size_t i = 0; i < n; ++i) {
        masks.push_back(b.equal(c.in(i), y)); // broadcasts to y's shape
        fmasks.push_back(b.cast(masks.back(), y->type.dtype));
      }
      Value* count = c.emitN("Sum", fmasks, 1)[0];
      Value* share = b.div(dy, count);
      for (size_t i = 0; i < n; ++i)
        if (c.needs(i)) giveReduced(c, i, b.where(masks[i], share, b.k(0, y)));
    });
  OpBuilder(r.at("Where")).grad([](GradCtx& c) {
    B b{c};
    Value *cond = c.in(0), *dy = c.doutOrZeros(0);
    Value* zero = b.k(0, dy);
    if (c.needs(1)) giveReduced(c, 1, b.where(cond, dy, zero));
    if (c.needs(2)) giveReduced(c, 2, b.where(cond, zero, dy));
  });
  // Clip: y = min(max(x, lo), hi).
  OpBuilder(r.at("Clip")).grad([](GradCtx& c) {
    B b{c};
    Value *x = c.in(0), *dy = c.doutOrZeros(0);
    Value *lo = c.node.hasInput(1) ? c.in(1) : nullptr,
          *hi = c.node.hasInput(2) ? c.in(2) : nullptr;
    Value* zero = b.k(0, dy);
    Value* m = lo ? b.op("Max", {x, lo}) : x;
    Value* passHi = hi ? b.less(m, hi) : nullptr; // max(x, lo) below hi: it flows through
    if (c.needs(0)) {
      Value* keep = lo ? b.greater(x, lo) : nullptr;
      if (passHi) keep = keep ? b.and_(keep, passHi) : passHi;
      c.give(0, keep ? b.where(keep, dy, zero) : dy);
    }
    if (c.needs(1)) {
      Value* keep = b.less(x, lo);
      if (passHi) keep = b.and_(keep, passHi);
      giveReduced(c, 1, b.where(keep, dy, zero));
    }
    if (c.needs(2)) giveReduced(c, 2, b.where(passHi, zero, dy));
  });
}

} // namespace

void registerArithmeticGrads(OpRegistry& r) {
  registerBinary(r);
  registerUnary(r);
  registerVariadic(r);
}

} // namespace grad

void registerElementwiseGrads(OpRegistry& r) {
  grad::registerArithmeticGrads(r);
  grad::registerActivationGrads(r);
  grad::registerReductionGrads(r);
  grad::registerDataMovementGrads(r);
  grad::registerEinsumGrad(r);
}

} // namespace aicc
