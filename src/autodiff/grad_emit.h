// Small emit helpers over a GradCtx for writing gradient rules: GradEmit e{c}; e.mul(x, y),
// e.k(0.5, x) (a rank-0 constant of x's element type), e.reshape(a, {2, -1}), ... Every helper
// appends one standard ONNX node (through GradCtx::emit) and returns its output.
#pragma once

#include "autodiff/grad_ctx.h"

#include <climits>

namespace aicc {

struct GradEmit {
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
  Value* matmul(Value* a, Value* b) { return op("MatMul", {a, b}); }
  Value* cast(Value* a, DType to);
  Value* castLike(Value* a, Value* like) {
    return a->type.dtype == like->type.dtype ? a : cast(a, like->type.dtype);
  }
  // A rank-0 constant of `like`'s element type.
  Value* k(double v, Value* like) { return c.scalar(v, like->type.dtype); }
  Value* ints(const std::vector<int64_t>& v) { return c.ints(v); }
  Value* i64(int64_t v) { return c.scalar(static_cast<double>(v), DType::I64); }
  // Shape(a)[start:end] (the whole shape by default).
  Value* shape(Value* a, int64_t start = 0, int64_t end = INT64_MAX);
  Value* reshape(Value* a, Value* shape) { return op("Reshape", {a, shape}); }
  Value* reshape(Value* a, const std::vector<int64_t>& s) { return reshape(a, ints(s)); }
  Value* expand(Value* a, Value* shape) { return op("Expand", {a, shape}); }
  Value* transpose(Value* a, const std::vector<int64_t>& perm);
  Value* concat(std::vector<Value*> vs, int64_t axis);
  Value* reduceSum(Value* a, const std::vector<int64_t>& axes, bool keepdims);
  Value* reduceMean(Value* a, const std::vector<int64_t>& axes, bool keepdims);
  Value* unsqueeze(Value* a, const std::vector<int64_t>& axes) { return op("Unsqueeze", {a, ints(axes)}); }
  Value* squeeze(Value* a, const std::vector<int64_t>& axes) { return op("Squeeze", {a, ints(axes)}); }
  // a[index] along `axis` (the axis is removed).
  Value* pick(Value* a, int64_t index, int64_t axis) {
    return op("Gather", {a, i64(index)}, {{"axis", Attribute{axis}}});
  }
  Value* slice(Value* a, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
               const std::vector<int64_t>& axes) {
    return op("Slice", {a, ints(starts), ints(ends), ints(axes)});
  }
  std::vector<Value*> split(Value* a, int64_t axis, const std::vector<int64_t>& sizes);
  // Stacks same-shaped values along a new leading axis.
  Value* stack(const std::vector<Value*>& vs);
};

} // namespace aicc
