// Shared pieces of the gradient rules of the neural-network, linear-algebra, loss and recurrent
// ops (src/ops/nn_grad*.cpp). Rules emit standard ONNX ops only, in the forward tensors' element
// types, so a differentiated model runs on any ONNX engine, in f32 or f64.
#pragma once

#include "autodiff/grad_emit.h"

namespace aicc::nngrad {

// The emit helpers (autodiff/grad_emit.h): E e{c}; e.mul(x, y), e.k(0.5, x), ...
using E = GradEmit;

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
