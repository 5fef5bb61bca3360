// Dispatch of the non-elementwise lowerings (lower_*.cpp) for lowerNode (loop/lower.h).
#include "loop/lower_ops.h"
#include "ops/op_def.h"

namespace aicc::loop {

bool lowerNonElementwise(const Node& n, const std::string& funcName, const LowerOptions& opts,
                         std::optional<LoweredNode>& result, std::string* whyNot) {
  using namespace detail;
  CandidateChoice choice = opts.chooseCandidate ? opts.chooseCandidate(n) : CandidateChoice();
  const std::string& cand = choice.name;
  try {
    std::optional<LoweredNode> r;
    // f16 / bf16 tensors (16-bit storage, f32 arithmetic rounded per op) and 4/2-bit integers
    // (a byte each): only the lowerings that move elements take them. The others accumulate in
    // their output's type (a sum rounded to f16 at every step, where the reference kernels
    // accumulate wider) or call f32 kernels; scatter reductions would wrap 4-bit sums the
    // reference saturates.
    auto narrow = [](const Value* v) {
      return v && (isReducedFloat(v->type.dtype) || isSubByteInt(v->type.dtype));
    };
    const bool reduced = std::any_of(n.inputs.begin(), n.inputs.end(), narrow) ||
                         std::any_of(n.outputs.begin(), n.outputs.end(), narrow);
    if (reduced) {
      const bool moves = n.op != "Resize" && n.op != "GridSample" && n.op != "ScatterND" &&
                         n.op != "ScatterElements";
      const bool quant = n.op == "QuantizeLinear" || n.op == "DequantizeLinear"; // 4/2-bit
      if ((moves && (r = lowerDataFamily(n, funcName, opts))) ||
          (quant && (r = lowerQuantFamily(n, funcName, opts)))) {
        result = std::move(r);
        return true;
      }
      if (!hasNonElementwiseLowering(n)) return false; // the elementwise path's
      no(n.describe() + ": f16/bf16 and 4/2-bit tensors are lowered for element moves and "
                        "elementwise ops only");
    }
    if (!(r = lowerMatMulFamily(n, funcName, opts, cand)) &&
        !(r = lowerConvFamily(n, funcName, opts, cand)) &&
        !(r = lowerEpilogueFamily(n, funcName, opts, cand)) &&
        !(r = lowerPoolFamily(n, funcName, opts)) && !(r = lowerReduceFamily(n, funcName, opts)) &&
        !(r = lowerDataFamily(n, funcName, opts)) && !(r = lowerSelectFamily(n, funcName, opts)) &&
        !(r = lowerRnnFamily(n, funcName, opts)) &&
        !(r = lowerLinearAttentionFamily(n, funcName, opts)) &&
        !(r = lowerTrainingFamily(n, funcName, opts)) && !(r = lowerDet(n, funcName, opts)) &&
        !(r = lowerAttentionFamily(n, funcName, opts)) &&
        !(r = lowerLossFamily(n, funcName, opts)) && !(r = lowerQuantFamily(n, funcName, opts)) &&
        !(r = lowerMlFamily(n, funcName, opts)))
      return false;
    if (r && !choice.reason.empty()) r->func.schedule["selection"] = choice.reason;
    result = std::move(r);
    return true;
  } catch (const NotLowerable& e) {
    if (whyNot) *whyNot = e.reason;
    result.reset();
    return true;
  }
}

bool hasNonElementwiseLowering(const Node& n) {
  static const std::set<std::string> ops = {"MatMul",
                                            "MatMulInteger",
                                            "ConvInteger",
                                            "DynamicQuantizeLinear",
                                            "Attention",
                                            "RotaryEmbedding",
                                            "Gemm",
                                            "Conv",
                                            "ConvTranspose",
                                            "MaxPool",
                                            "AveragePool",
                                            "LpPool",
                                            "GlobalAveragePool",
                                            "GlobalMaxPool",
                                            "RoiAlign",
                                            "MaxUnpool",
                                            "ReduceSum",
                                            "ReduceMean",
                                            "ReduceMax",
                                            "ReduceMin",
                                            "ReduceProd",
                                            "ReduceSumSquare",
                                            "ReduceL1",
                                            "ReduceL2",
                                            "ReduceLogSum",
                                            "ReduceLogSumExp",
                                            "Hardmax",
                                            "CumSum",
                                            "CumProd",
                                            "Einsum",
                                            "TopK",
                                            "LpNormalization",
                                            "ArgMax",
                                            "ArgMin",
                                            "Softmax",
                                            "NegativeLogLikelihoodLoss",
                                            "SoftmaxCrossEntropyLoss",
                                            "LogSoftmax",
                                            "LayerNormalization",
                                            "RMSNormalization",
                                            "InstanceNormalization",
                                            "GroupNormalization",
                                            "BatchNormalization",
                                            "Reshape",
                                            "Flatten",
                                            "Squeeze",
                                            "Unsqueeze",
                                            "Transpose",
                                            "Concat",
                                            "Slice",
                                            "NonZero",
                                            "Compress",
                                            "Unique",
                                            "NonMaxSuppression",
                                            "CausalConvWithState",
                                            "RNN",
                                            "Det",
                                            "LinearAttention",
                                            "Split",
                                            "Gather",
                                            "GatherElements",
                                            "GatherND",
                                            "Trilu",
                                            "ReverseSequence",
                                            "Pad",
                                            "Resize",
                                            "DFT",
                                            "ScatterND",
                                            "ScatterElements",
                                            "TensorScatter",
                                            "GridSample",
                                            "CenterCropPad",
                                            "Tile",
                                            "DepthToSpace",
                                            "SpaceToDepth",
                                            "EyeLike",
                                            "OneHot",
                                            "ConstantOfShape",
                                            "Range",
                                            "LRN",
                                            "GRU",
                                            "LSTM",
                                            "HardSwish",
                                            "Swish",
                                            "Gelu",
                                            "Softplus",
                                            "Mish",
                                            "Selu",
                                            "Celu",
                                            "ThresholdedRelu"};
  if (n.domain == kAiccDomain && n.op == "Fused")
    return n.attrString("kind") == "epilogue" || n.attrString("kind") == "reduction";
  if (n.domain == kAiccDomain) return n.op == "ConvNchwc" || n.op == "Reorder"; // lower_conv.cpp
  return n.domain.empty() && ops.count(n.op);
}

} // namespace aicc::loop
