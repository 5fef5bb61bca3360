// Shared pieces of the gradient rules of the neural-network, linear-algebra, loss and recurrent
// ops (src/ops/nn_grad*.cpp). Rules emit standard ONNX ops only, in the forward tensors' element
// types, so a differentiated model runs on any ONNX engine, in f32 or f64.
#pragma once

#include "autodiff/grad_ctx.h"

namespace aicc::nngrad {

// Small emit helpers over a GradCtx: E e{c}; e.mul(x, y), e.k(0.5, x) (a scalar of x's type)...
struct E {
  GradCtx& c;

  Value* op(const std::string& o, std::vector<Value*> ins, AttrMap attrs = {}) {
    return c.emit(o, std::move(ins), std::move(attrs));
  }
  Value* add(Value* a, Value* b) { return op("Add", {a, b}); }
  Value* sub(Value* a, Value* b) { return op("Sub", {a, b}); }
  Value* mul(Value* a, Value* b) { return op("Mul", {a, b}); }
  Value* div(Value* a, Value* b) { return op("Div", {a, b}); }
  Value* neg(Value* a) { return op("Neg", {a}); }
  Value* where(Value* cond, Value* a, Value* b) { return op("Where", {cond, a, b}); }
  Value* matmul(Value* a, Value* b) { return op("MatMul", {a, b}); }
  Value* cast(Value* a, DType to);
  Value* castLike(Value* a, Value* like) {
    return a->type.dtype == like->type.dtype ? a : cast(a, like->type.dtype);
  }
  // A rank-0 constant of `like`'s element type.
  Value* k(double v, Value* like) { return c.scalar(v, like->type.dtype); }
  Value* ints(const std::vector<int64_t>& v) { return c.ints(v); }
  Value* i64(int64_t v) { return c.scalar(static_cast<double>(v), DType::I64); }
  // Shape(a)[start:end] (end = -1 for the rest).
  Value* shape(Value* a, int64_t start = 0, int64_t end = INT64_MAX);
  Value* reshape(Value* a, Value* shape) { return op("Reshape", {a, shape}); }
  Value* reshape(Value* a, const std::vector<int64_t>& s) { return reshape(a, ints(s)); }
  Value* transpose(Value* a, const std::vector<int64_t>& perm);
  Value* concat(std::vector<Value*> vs, int64_t axis);
  Value* reduceSum(Value* a, const std::vector<int64_t>& axes, bool keepdims);
  Value* reduceMean(Value* a, const std::vector<int64_t>& axes, bool keepdims);
  Value* unsqueeze(Value* a, const std::vector<int64_t>& axes) {
    return op("Unsqueeze", {a, ints(axes)});
  }
  Value* squeeze(Value* a, const std::vector<int64_t>& axes) {
    return op("Squeeze", {a, ints(axes)});
  }
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

// Static dims of v; throws naming the node and `what` when unknown.
Dims staticDims(GradCtx& c, Value* v, const char* what);
// The constant contents of input i (constant tensor), else nullptr.
const Tensor* constInput(GradCtx& c, size_t i);

void registerLinalgGrads(OpRegistry& r); // nn_grad.cpp: MatMul, Gemm, Dropout
void registerConvGrads(OpRegistry& r);   // nn_grad_conv.cpp: Conv, ConvTranspose
void registerPoolGrads(OpRegistry& r);   // nn_grad_pool.cpp: MaxPool, AveragePool, Global*Pool
void registerNormGrads(OpRegistry& r);   // nn_grad_norm.cpp: Batch/Layer/InstanceNormalization
void registerLossGrads(OpRegistry& r);   // nn_grad_loss.cpp: SoftmaxCrossEntropy, NLL losses
void registerRnnGrads(OpRegistry& r);    // nn_grad_rnn.cpp: RNN, GRU, LSTM

} // namespace aicc::nngrad
