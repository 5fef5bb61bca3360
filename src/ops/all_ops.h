// Every op family registers its ops here. Adding a family = one line in all_ops.cpp.
#pragma once

namespace aicc {
class OpRegistry;

void registerAllOps(OpRegistry& r);

void registerElementwiseOps(OpRegistry& r);  // ops/elementwise.cpp: unary/binary math, activations, Cast
void registerNnOps(OpRegistry& r);           // ops/nn.cpp: Conv, pooling, normalization
void registerLinalgOps(OpRegistry& r);       // ops/linalg.cpp: MatMul, Gemm, Einsum
void registerReductionOps(OpRegistry& r);    // ops/reduction.cpp: Reduce*, ArgMax, Softmax, TopK
void registerShapeOps(OpRegistry& r);        // ops/shape_ops.cpp: Reshape, Transpose, Slice, Gather, ...
void registerControlFlowOps(OpRegistry& r);  // ops/control_flow.cpp: If, Loop, Scan, sequences, optionals
void registerRnnOps(OpRegistry& r);          // ops/rnn.cpp: LSTM, GRU, RNN
void registerQuantOps(OpRegistry& r);        // ops/quant.cpp: Q/DQ, QLinear*, com.microsoft int8 ops
void registerAttentionOps(OpRegistry& r);    // ops/attention.cpp: Attention, RotaryEmbedding, ...
void registerLossOps(OpRegistry& r);         // ops/loss.cpp: SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss
void registerSignalOps(OpRegistry& r);       // ops/signal.cpp: DFT, STFT, window functions, MelWeightMatrix
void registerMiscOps(OpRegistry& r);         // ops/misc.cpp: NonMaxSuppression, BitCast, random ops, ...
void registerTextOps(OpRegistry& r);         // ops/text.cpp: string ops
void registerMlOps(OpRegistry& r);           // ops/ml.cpp: the ai.onnx.ml domain
void registerTrainingOps(OpRegistry& r);
void registerAutodiffOps(OpRegistry& r);     // autodiff/gradient_op.cpp: ai.onnx.preview.training.Gradient
void registerLayoutOps(OpRegistry& r);       // ops/layout.cpp: aicc.Reorder (blocked layouts)
void registerFusedOps(OpRegistry& r);        // ops/fused.cpp: aicc.Fused (groups made by fusion passes)     // ops/training.cpp: ai.onnx.preview.training optimizers

// Gradient rules (autodiff), attached to the registered ops by family.
void registerElementwiseGrads(OpRegistry& r); // ops/elementwise_grad.cpp (+ reductions, shape ops)
void registerNnGrads(OpRegistry& r);          // ops/nn_grad.cpp (conv, pooling, normalization, losses, ...)
} // namespace aicc
