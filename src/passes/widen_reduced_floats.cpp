#include "passes/widen_reduced_floats.h"

#include "ir/rewrite.h"
#include "passes/shape_inference.h"

#include <algorithm>
#include <set>

namespace aicc {

namespace {

// The ops (ai.onnx) whose reference kernels compute wider than f16/bf16 and whose lowerings are
// f32: their non-float inputs (axes, lengths, masks, quantized values) pass as they are.
// (DequantizeLinear to f16: (x - zero point) * scale in f32 as its lowering computes, rounded once;
// QLinearMatMul / QLinearConv with f16 scales: the scales, exact in f32, in the usual arithmetic.)
bool widens(const Node& n) {
  static const std::set<std::string> kOps = {"MatMul",
                                             "Gemm",
                                             "Conv",
                                             "ConvTranspose",
                                             "Attention",
                                             "CausalConvWithState",
                                             "LinearAttention",
                                             "Softmax",
                                             "LogSoftmax",
                                             "LayerNormalization",
                                             "RMSNormalization",
                                             "GroupNormalization",
                                             "InstanceNormalization",
                                             "ReduceSum",
                                             "ReduceMean",
                                             "ReduceL1",
                                             "ReduceL2",
                                             "ReduceSumSquare",
                                             "ReduceLogSum",
                                             "ReduceLogSumExp",
                                             "ReduceProd",
                                             "DequantizeLinear",
                                             "QLinearMatMul",
                                             "QLinearConv"};
  return n.domain.empty() && kOps.count(n.op);
}

bool reduced(const Value* v) {
  return v && v->type.isTensor() && (v->type.dtype == DType::F16 || v->type.dtype == DType::BF16);
}

Type widened(const Type& t) {
  Type w = t;
  w.dtype = DType::F32;
  return w;
}

// ONNX's TensorProto element type of a float dtype (Cast's `to`).
int64_t onnxType(DType t) { return t == DType::F16 ? 10 : t == DType::BF16 ? 16 : 1; }

bool widenIn(Graph& g) {
  std::vector<Node*> todo;
  for (const auto& n : g.nodes)
    if (widens(*n) && (std::any_of(n->inputs.begin(), n->inputs.end(), reduced) ||
                       std::any_of(n->outputs.begin(), n->outputs.end(), reduced)))
      todo.push_back(n.get());
  for (Node* n : todo) {
    const std::string base = n->outputs.empty() || !n->outputs[0] ? n->op : n->outputs[0]->name;
    for (Value*& in : n->inputs)
      if (reduced(in)) {
        Node* c = insertNode(g, n, "Cast", {in}, 1, base + "_f32");
        c->attrs["to"] = Attribute{onnxType(DType::F32)};
        c->outputs[0]->type = widened(in->type);
        in = c->outputs[0];
      }
    const size_t at = nodeIndex(g, n) + 1;
    Node* after = at < g.nodes.size() ? g.nodes[at].get() : nullptr;
    for (Value* out : n->outputs)
      if (reduced(out)) {
        Node* c = insertNode(g, after, "Cast", {out}, 1, out->name + "_narrowed");
        c->attrs["to"] = Attribute{onnxType(out->type.dtype)};
        Value* narrowed = c->outputs[0];
        narrowed->type = out->type;
        replaceAllUses(g, out, narrowed); // (the graph output's name moves to it)
        c->inputs[0] = out;
        out->type = widened(out->type);
      }
  }
  return !todo.empty();
}

} // namespace

bool widenReducedFloats(Model& m) {
  inferShapes(*m.graph); // (the types it reads)
  bool changed = false;
  forEachGraph(*m.graph, [&](Graph& g) { changed |= widenIn(g); });
  return changed;
}

} // namespace aicc
