// Attention family: Attention (attention.cpp), RotaryEmbedding and TensorScatter
// (attention_rope.cpp), LinearAttention and CausalConvWithState (attention_linear.cpp),
// ai.onnx.preview FlexAttention (attention_flex.cpp), and the small pieces they share.
#pragma once

#include "ops/op_def.h"

#include <vector>

namespace aicc {

void registerRopeOps(OpRegistry& r);            // RotaryEmbedding, TensorScatter
void registerLinearAttentionOps(OpRegistry& r); // LinearAttention, CausalConvWithState
void registerFlexAttentionOps(OpRegistry& r);   // ai.onnx.preview.FlexAttention

namespace attn {

// Rounds v to the precision of the float type t (f64: unchanged; f32: to float; reduced floats:
// through their bit pattern). The kernels compute in double and round where the op's function
// body (or reference) materializes a tensor of type t, so reduced-float results match.
double roundTo(DType t, double v);

// A tensor's elements as doubles / a tensor of type t made from doubles.
std::vector<double> toDoubles(const Tensor& t);
Tensor fromDoubles(DType t, Dims shape, const std::vector<double>& v);

// One float element type among `allowed`, naming input i.
void requireFloat(const KernelCtx& c, size_t i, std::initializer_list<DType> allowed);

// Symbolic dim arithmetic for inference: unknown when an operand is unknown (x * 1 and x / 1 keep
// the symbol).
Dim dimMul(const Dim& a, int64_t k);
Dim dimDiv(const Dim& a, int64_t k);
Dim dimAdd(const Dim& a, const Dim& b);
// Fails when two static dims differ (`what` names them).
void checkSameDim(const Dim& a, const Dim& b, const char* what);

} // namespace attn
} // namespace aicc
