// Gradient rules of the reductions (ReduceSum Mean Max Min Prod L1 L2 LogSum LogSumExp
// SumSquare, with the axes input, keepdims and noop_with_empty_axes), Softmax, LogSoftmax and
// CumSum.
#include "ops/elementwise_grad.h"

#include "ops/helpers.h"

#include <algorithm>

namespace aicc::grad {

namespace {

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// The reduction's axes when they are known statically: absent input = all axes (empty list).
std::optional<std::vector<int64_t>> staticAxes(GradCtx& c) {
  if (!c.node.hasInput(1)) return std::vector<int64_t>{};
  return constInts(c, 1);
}

// Brings a reduction result (y or dy) to its keepdims=1 form, which broadcasts against x.
Value* keepDims(GradCtx& c, Value* v) {
  if (c.node.attrInt("keepdims") != 0) return v;
  B b{c};
  auto axes = staticAxes(c);
  if (axes) {
    if (axes->empty()) return v; // reduced to a scalar
    int64_t r = c.rankOf(c.in(0));
    std::vector<int64_t> a = normAxes(*axes, r);
    std::sort(a.begin(), a.end());
    return b.op("Unsqueeze", {v, b.ints(a)});
  }
  // Axes known at run time only: the keepdims shape is that of the same reduction with keepdims.
  Value* kept = b.op("ReduceSum", {c.in(0), c.in(1)},
                     {{"keepdims", Attribute{int64_t{1}}},
                      {"noop_with_empty_axes", Attribute{c.node.attrInt("noop_with_empty_axes")}}});
  return b.reshape(v, b.shape(kept));
}

void reduceGrad(OpRegistry& r, const char* op, Red k) {
  OpBuilder(r.at(op)).grad([k](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    Value *x = c.in(0), *y = c.out(0), *dy = c.doutOrZeros(0);
    bool noop = c.node.attrInt("noop_with_empty_axes") != 0;
    auto axes = staticAxes(c);
    if (noop && axes && axes->empty()) {
      // No reduction. aicc's kernel returns x; the ONNX reference applies the elementwise part
      // (x^2, |x|, log x) instead. Only where both agree is the gradient certain.
      bool mapIsIdentity = k != Red::L1 && k != Red::L2 && k != Red::LogSum && k != Red::SumSquare;
      AICC_CHECK(mapIsIdentity,
                 "{} with noop_with_empty_axes=1 and empty axes: no gradient (the op's result is "
                 "ambiguous: x or its elementwise map)",
                 c.node.op);
      return c.give(0, dy);
    }
    bool linearOrSelect = k == Red::Sum || k == Red::Mean || k == Red::Max || k == Red::Min;
    AICC_CHECK(!noop || axes || linearOrSelect,
               "{} with noop_with_empty_axes=1 needs constant axes for its gradient", c.node.op);
    Value* dyk = keepDims(c, dy);
    Value* zero = b.k(0, x);
    Value* g = nullptr;
    switch (k) {
    case Red::Sum:
      g = b.expand(dyk, b.shape(x));
      break;
    case Red::Mean: {
      Value* ratio =
          b.div(b.cast(b.op("Size", {y}), x->type.dtype), b.cast(b.op("Size", {x}), x->type.dtype));
      g = b.mul(b.expand(dyk, b.shape(x)), ratio);
      break;
    }
    case Red::Max:
    case Red::Min: { // shared equally between the elements equal to the extreme
      Value* fm = b.cast(b.equal(x, keepDims(c, y)), x->type.dtype);
      std::vector<Value*> ins{fm};
      if (c.node.hasInput(1)) ins.push_back(c.in(1));
      Value* count = b.op("ReduceSum", ins,
                          {{"keepdims", Attribute{int64_t{1}}},
                           {"noop_with_empty_axes", Attribute{int64_t{noop ? 1 : 0}}}});
      g = b.mul(fm, b.div(dyk, count));
      break;
    }
    case Red::Prod: {
      // prod of the others: yk / x without zeros; with one zero only that element gets the
      // product of the rest; with two or more, all zero.
      Value* isZero = b.equal(x, zero);
      Value* safe = b.where(isZero, b.k(1, x), x);
      std::vector<Value*> pin{safe}, zin{b.cast(isZero, x->type.dtype)};
      if (c.node.hasInput(1)) pin.push_back(c.in(1)), zin.push_back(c.in(1));
      AttrMap keep{{"keepdims", Attribute{int64_t{1}}},
                   {"noop_with_empty_axes", Attribute{int64_t{noop ? 1 : 0}}}};
      Value* prodNz = b.op("ReduceProd", pin, keep);
      Value* zeros = b.op("ReduceSum", zin, keep);
      Value* forZero = b.where(b.equal(zeros, b.k(1, x)), prodNz, zero);
      Value* forOther = b.where(b.equal(zeros, zero), b.div(prodNz, safe), zero);
      g = b.mul(dyk, b.where(isZero, forZero, forOther));
      break;
    }
    case Red::L1:
      g = b.mul(dyk, b.un("Sign", x));
      break;
    case Red::L2: {
      Value* yk = keepDims(c, y);
      g = b.mul(dyk, b.where(b.equal(yk, zero), zero, b.div(x, yk)));
      break;
    }
    case Red::LogSum:
      g = b.expand(b.div(dyk, b.un("Exp", keepDims(c, y))), b.shape(x));
      break;
    case Red::LogSumExp:
      g = b.mul(dyk, b.un("Exp", b.sub(x, keepDims(c, y))));
      break;
    case Red::SumSquare:
      g = b.mul(dyk, b.mul(x, b.k(2, x)));
      break;
    }
    c.give(0, g);
  });
}

} // namespace

void registerReductionGrads(OpRegistry& r) {
  reduceGrad(r, "ReduceSum", Red::Sum);
  reduceGrad(r, "ReduceMean", Red::Mean);
  reduceGrad(r, "ReduceMax", Red::Max);
  reduceGrad(r, "ReduceMin", Red::Min);
  reduceGrad(r, "ReduceProd", Red::Prod);
  reduceGrad(r, "ReduceL1", Red::L1);
  reduceGrad(r, "ReduceL2", Red::L2);
  reduceGrad(r, "ReduceLogSum", Red::LogSum);
  reduceGrad(r, "ReduceLogSumExp", Red::LogSumExp);
  reduceGrad(r, "ReduceSumSquare", Red::SumSquare);

  OpBuilder(r.at("Softmax")).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    Value *y = c.out(0), *dy = c.doutOrZeros(0);
    Value* axis = b.ints({c.node.attrInt("axis")});
    Value* s = b.op("ReduceSum", {b.mul(dy, y), axis}, {{"keepdims", Attribute{int64_t{1}}}});
    c.give(0, b.mul(y, b.sub(dy, s)));
  });
  OpBuilder(r.at("LogSoftmax")).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    Value *y = c.out(0), *dy = c.doutOrZeros(0);
    Value* axis = b.ints({c.node.attrInt("axis")});
    Value* s = b.op("ReduceSum", {dy, axis}, {{"keepdims", Attribute{int64_t{1}}}});
    c.give(0, b.sub(dy, b.mul(b.un("Exp", y), s)));
  });
  // CumSum: the adjoint of a (reverse) scan is the scan in the other direction.
  OpBuilder(r.at("CumSum")).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    AttrMap attrs{{"exclusive", Attribute{c.node.attrInt("exclusive")}},
                  {"reverse", Attribute{int64_t{c.node.attrInt("reverse") != 0 ? 0 : 1}}}};
    c.give(0, b.op("CumSum", {c.doutOrZeros(0), c.in(1)}, attrs));
  });
}

} // namespace aicc::grad
