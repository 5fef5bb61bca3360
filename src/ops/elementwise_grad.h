// Shared pieces of the gradient rules of the elementwise, reduction, softmax and data-movement
// ops (src/ops/elementwise_grad*.cpp). Rules emit standard ONNX ops only, in the input's element
// type, so a differentiated model runs on any ONNX engine and in f32 or f64.
#pragma once

#include "autodiff/grad_emit.h"

#include <functional>

namespace aicc::grad {

// The emit helpers (autodiff/grad_emit.h): B b{c}; b.mul(x, y), b.k(0.5, x), ...
using B = GradEmit;


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
