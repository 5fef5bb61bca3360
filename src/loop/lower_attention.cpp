// Attention (ai.onnx, opset 23; the form the recognize pass produces: 4-D Q/K/V [B, H, S, D])
// as one call of the runtime's attention micro-kernel (kernels/attention.h):
//   @attention_<gemm desc>(Q, K, V, mask | 0, Y, B, Hq, Hkv, Sq, Skv, D, Dv, maskKind,
//       maskStrideB, maskStrideH, maskStrideI, maskStrideJ, causal, scale)
// maskKind: 0 none, 1 additive f32, 2 bool. Covered: f32, no past key/value or padding lengths,
// no softcap / window / extra outputs, a mask whose last dim is the key length. Anything else
// declines (the node falls back to the reference kernel).
#include "kernels/registry.h"
#include "loop/lower_ops.h"

#include <cmath>

namespace aicc::loop::detail {

std::optional<LoweredNode> lowerAttentionFamily(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  if (!n.domain.empty() || n.op != "Attention") return std::nullopt;
  if (!o.runtimeKernels) no("Attention is lowered only to the runtime's micro-kernel");
  for (size_t i = 4; i < n.inputs.size(); ++i)
    if (n.hasInput(i)) no("Attention with past key/value or padding lengths");
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i]) no("Attention with present key/value or QK outputs");
  if (n.attrFloat("softcap") != 0.0f) no("Attention with softcap");
  if (n.attrInt("left_window_size") != -1 || n.attrInt("right_window_size") != -1)
    no("Attention with a local window");
  if (n.attr("softmax_precision") && n.attrInt("softmax_precision") != 1)
    no("Attention with a softmax precision other than float");
  const Value *q = n.inputs.at(0), *k = n.inputs.at(1), *v = n.inputs.at(2);
  for (const Value* x : {q, k, v})
    if (x->type.dtype != DType::F32) no("Attention is lowered for f32 only");
  Dims qd = staticDims(q, "Q"), kd = staticDims(k, "K"), vd = staticDims(v, "V");
  if (qd.size() != 4 || kd.size() != 4 || vd.size() != 4) no("Attention with 3-D inputs");
  const int64_t B = qd[0], Hq = qd[1], Sq = qd[2], D = qd[3], Hkv = kd[1], Skv = kd[2];
  const int64_t Dv = vd[3];
  if (kd[0] != B || vd[0] != B || kd[3] != D || vd[1] != Hkv || vd[2] != Skv || Hkv <= 0 ||
      Hq % Hkv != 0)
    no("Attention operands do not match");
  FuncBuilder b(n, name, "attention");
  std::string Y = b.output(0);
  std::string Q = b.input(q), K = b.input(k), V = b.input(v);
  int64_t maskKind = 0;
  std::vector<int64_t> st(4, 0);
  CallArg mask{"", nullptr, intImm(0)};
  if (n.hasInput(3)) {
    const Value* m = n.inputs[3];
    Dims md = staticDims(m, "attn_mask");
    if (md.empty() || md.size() > 4 || md.back() != Skv) no("an attn_mask not of the key length");
    if (m->type.dtype == DType::F32)
      maskKind = 1;
    else if (m->type.dtype == DType::Bool)
      maskKind = 2;
    else
      no("an attn_mask of type " + std::string(dtypeName(m->type.dtype)));
    const int64_t want[4] = {B, Hq, Sq, Skv};
    std::vector<int64_t> s = strides(md);
    for (size_t i = 0; i < md.size(); ++i) {
      size_t d = 4 - md.size() + i;
      if (md[i] != 1 && md[i] != want[d]) no("an attn_mask that does not broadcast");
      st[d] = md[i] == 1 ? 0 : s[i];
    }
    mask = bufferArg(b.input(m));
  }
  float scale = n.attr("scale") ? n.attrFloat("scale") : 1.0f / std::sqrt(float(D));
  const auto& gk = kernels::defaultKernel(kernels::KernelOp::Gemm, o.kernelIsa);
  std::vector<CallArg> args = {bufferArg(Q), bufferArg(K), bufferArg(V), mask, bufferArg(Y)};
  for (int64_t x : {B, Hq, Hkv, Sq, Skv, D, Dv, maskKind, st[0], st[1], st[2], st[3],
                    n.attrInt("is_causal") != 0 ? int64_t(1) : int64_t(0)})
    args.push_back(intArg(x));
  args.push_back(CallArg{"", nullptr, floatImm(scale, DType::F32)});
  Schedule sched;
  markKernel(sched, gk.name);
  sched["parallel"] = std::vector<std::string>{"batch*heads"};
  return b.finish({Stmt::callKernel(std::string("attention_") + gk.name, args)}, std::move(sched),
                  o);
}

} // namespace aicc::loop::detail
