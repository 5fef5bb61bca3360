// Shared pieces of the gradient rules of the elementwise, reduction, softmax and data-movement
// ops (src/ops/elementwise_grad*.cpp). Rules emit standard ONNX ops only, in the input's element
// type, so a differentiated model runs on any ONNX engine and in f32 or f64.
#pragma once

#include "autodiff/grad_ctx.h"

#include <functional>

namespace aicc::grad {

// Small emit helpers over a GradCtx: B b{c}; b.mul(x, y), b.k(0.5, x) (a scalar of x's type), ...
struct B {
  GradCtx& c;

  Value* op(const std::string& o, std::vector<Value*> ins, AttrMap attrs = {}) {
    return c.emit(o, std::move(ins), std::move(attrs));
  }
  Value* add(Value* a, Value* b) { return op("Add", {a, b}); }
  Value* sub(Value* a, Value* b) { return op("Sub", {a, b}); }
  Value* mul(Value* a, Value* b) { return op("Mul", {a, b}); }
  Value* div(Value* a, Value* b) { return op("Div", {a, b}); }
  Value* neg(Value* a) { return op("Neg", {a}); }
  Value* un(const std::string& o, Value* a) { return op(o, {a}); }
  Value* where(Value* cond, Value* a, Value* b) { return op("Where", {cond, a, b}); }
  Value* less(Value* a, Value* b) { return op("Less", {a, b}); }
  Value* greater(Value* a, Value* b) { return op("Greater", {a, b}); }
  Value* equal(Value* a, Value* b) { return op("Equal", {a, b}); }
  Value* and_(Value* a, Value* b) { return op("And", {a, b}); }
  Value* cast(Value* a, DType to) {
    return op("Cast", {a}, {{"to", Attribute{static_cast<int64_t>(to)}}});
  }
  Value* castLike(Value* a, Value* like) {
    return a->type.dtype == like->type.dtype ? a : cast(a, like->type.dtype);
  }
  // A rank-0 constant of `like`'s element type.
  Value* k(double v, Value* like) { return c.scalar(v, like->type.dtype); }
  Value* shape(Value* a) { return op("Shape", {a}); }
  Value* reshape(Value* a, Value* shape) { return op("Reshape", {a, shape}); }
  Value* expand(Value* a, Value* shape) { return op("Expand", {a, shape}); }
  Value* ints(const std::vector<int64_t>& v) { return c.ints(v); }
};


// The constant contents of input i (a constant integer tensor), else nullopt.
std::optional<std::vector<int64_t>> constInts(GradCtx& c, size_t i);

// Gradient of a pure data-movement op y = f(x) (every y element is a copy of one x element, or a
// fill value): `moveIndices` applies f to a tensor of x's flat element indices (i64, shaped like
// x) and returns where each y element came from (-1 or any value outside [0, numel(x)) is not
// allowed; use `fill` for fill positions: numel(x) when `withFill`). The result scatter-adds dy
// into zeros shaped like x. With withFill, the fill positions' sum is returned in *fillGrad.
Value* scatterBack(GradCtx& c, Value* x, Value* dy,
                   const std::function<Value*(Value* iota, Value* fill)>& moveIndices,
                   Value** fillGrad = nullptr);

void registerArithmeticGrads(OpRegistry& r);   // elementwise_grad.cpp
void registerActivationGrads(OpRegistry& r);   // elementwise_grad_act.cpp
void registerReductionGrads(OpRegistry& r);    // elementwise_grad_reduce.cpp
void registerDataMovementGrads(OpRegistry& r); // elementwise_grad_shape.cpp
void registerEinsumGrad(OpRegistry& r);        // elementwise_grad_einsum.cpp

} // namespace aicc::grad
