// fold-qdq: the QDQ form of quantized models (what ONNX Runtime's quantize_static, NNCF and most
// toolkits write: float ops between DequantizeLinear and QuantizeLinear) becomes the integer ops
// the backend has int8 kernels for:
//   DQ(x), DQ(w const) [, DQ(b int32 const) | b f32 const] -> Conv [-> Relu | Clip] -> Q
//       => QLinearConv
//   DQ(a), DQ(b const) -> MatMul -> Q                    => QLinearMatMul
//   DQ(a), DQ(b) -> Add | Mul -> Q                       => com.microsoft.QLinearAdd | QLinearMul
//   DQ(x) -> GlobalAveragePool -> Q                      => com.microsoft.QLinearGlobalAveragePool
//   DQ(x [M, K]), DQ(w const) [, b] -> Gemm -> Q         => Reshape -> 1x1 QLinearConv over M
//                                                           images -> Reshape
//   MatMulInteger(a, b) -> Cast(f32) -> Mul(s)          => com.microsoft.MatMulIntegerToFloat
//       (ONNX Runtime's quantize_dynamic; exact: the same sums, conversion and product)
//   DQ(x...) -> MaxPool | Concat | Reshape | Flatten | Transpose | Squeeze | Unsqueeze | Slice |
//       Identity | Resize (nearest) -> Q, every DQ with the Q's scale, zero point and type
//       => the op on the quantized values (exact: it only moves or selects them); a Concat input
//       of another scale is requantized first, Q(DQ(x)) (exact: Q is elementwise)
// A bias reached through Identity (ONNX Runtime shares equal biases so), or a DQ bias of another
// scale, is requantized with x_scale * w_scale.
// Scales and zero points must be constants (x, y per tensor; weights per tensor or per output
// channel), the float op's result used only by the Q (through the activation). A Relu or Clip is
// dropped only where the Q's saturation already does what it does (its bounds lie outside the
// quantized range, within half a step). Numerics: the integer ops accumulate exactly and
// requantize once, the QDQ graph rounds in float: results agree within one quantization step of
// the output scale (docs/backend.md).
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool foldQdq(Model& m);

} // namespace aicc
