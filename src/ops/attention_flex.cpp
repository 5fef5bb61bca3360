// ai.onnx.preview FlexAttention (version 1): attention over 4-D Q [B, Hq, L, E], K [B, Hkv, S, E],
// V [B, Hkv, S, Ev] whose scores and probabilities pass through user graphs:
//   scores = (Q * sqrt(scale)) (K * sqrt(scale))^T        (input type; GQA: head h reads kv head
//                                                          h / (Hq / Hkv)); scale default 1/sqrt(E)
//   scores = score_mod(scores)                             (in the softmax type C)
//   probs  = prob_mod(Softmax(scores))                     (C)
//   Y      = probs V                                       (C, then V's type)
// C is softmax_precision when given, else f32 for f16/bf16/f32 inputs and f64 for f64. The mod
// graphs take and return one tensor of the scores' shape; they run through the interpreter.
#include "ops/attention.h"

#include "ops/control_flow_seq.h"
#include "ops/helpers.h"
#include "passes/shape_inference.h"

#include <cmath>
#include <limits>

namespace aicc {
namespace {

using attn::roundTo;

const Graph* modGraph(const Node& n, const char* name) {
  const Attribute* a = n.attr(name);
  if (!a) return nullptr;
  AICC_CHECK(a->kind() == Attribute::Kind::Graph, "attribute '{}' must be a graph", name);
  const Graph* g = std::get<GraphPtr>(a->v).get();
  AICC_CHECK(g->inputs.size() == 1 && g->outputs.size() == 1,
             "graph '{}' must take one input and return one output, it has {} and {}", name,
             g->inputs.size(), g->outputs.size());
  return g;
}

DType softmaxType(const Node& n, DType in) {
  if (n.attr("softmax_precision")) {
    auto t = dtypeFromOnnx(static_cast<int32_t>(n.attrInt("softmax_precision")));
    AICC_CHECK(t && (*t == DType::F32 || *t == DType::F16 || *t == DType::BF16 || *t == DType::F64),
               "softmax_precision {} is not FLOAT, FLOAT16, BFLOAT16 or DOUBLE",
               n.attrInt("softmax_precision"));
    return *t;
  }
  return in == DType::F64 ? DType::F64 : DType::F32;
}

// Runs a mod graph on `x` (type ct) and returns its result as doubles rounded to ct.
std::vector<double> runMod(KernelCtx& c, const Graph& g, const char* name, DType ct,
                           const Dims& shape, const std::vector<double>& x) {
  std::vector<RValue> outs = c.runSubgraph(g, {RValue::of(attn::fromDoubles(ct, shape, x))});
  AICC_CHECK(outs.size() == 1 && outs[0].kind == RValue::Kind::Tensor,
             "graph '{}' must return one tensor", name);
  const Tensor& t = outs[0].tensor;
  AICC_CHECK(t.shape() == shape && (isFloat(t.dtype()) || isInteger(t.dtype())),
             "graph '{}' returned {} {}, expected a number tensor of shape {}", name,
             dtypeName(t.dtype()), formatDims(t.shape()), formatDims(shape));
  std::vector<double> r = attn::toDoubles(t);
  for (double& v : r) v = roundTo(ct, v);
  return r;
}

std::vector<RValue> flexKernel(KernelCtx& c) {
  const Node& n = c.node;
  for (size_t i : {0, 1, 2})
    attn::requireFloat(c, i, {DType::F32, DType::F16, DType::BF16, DType::F64});
  const Tensor &Q = c.in(0), &K = c.in(1), &V = c.in(2);
  AICC_CHECK(K.dtype() == Q.dtype() && V.dtype() == Q.dtype(), "Q, K and V must have one type");
  AICC_CHECK(Q.rank() == 4 && K.rank() == 4 && V.rank() == 4, "Q {}, K {} and V {} must be 4-D",
             formatDims(Q.shape()), formatDims(K.shape()), formatDims(V.shape()));
  const int64_t B = Q.dim(0), Hq = Q.dim(1), L = Q.dim(2), E = Q.dim(3);
  const int64_t Hkv = K.dim(1), S = K.dim(2), Ev = V.dim(3);
  AICC_CHECK(K.dim(0) == B && V.dim(0) == B && V.dim(1) == Hkv && V.dim(2) == S && K.dim(3) == E,
             "Q {}, K {} and V {} do not agree", formatDims(Q.shape()), formatDims(K.shape()),
             formatDims(V.shape()));
  AICC_CHECK(Hkv > 0 && Hq % Hkv == 0, "Q heads {} are not a multiple of K/V heads {}", Hq, Hkv);
  const DType t = Q.dtype(), ct = softmaxType(n, t);
  const double scale =
      n.attr("scale") ? n.attrFloat("scale") : 1.0 / std::sqrt(static_cast<double>(E));
  const double s = roundTo(t, std::sqrt(static_cast<float>(scale)));
  std::vector<double> q = attn::toDoubles(Q), k = attn::toDoubles(K), v = attn::toDoubles(V);
  for (double& x : q) x = roundTo(t, x * s);
  for (double& x : k) x = roundTo(t, x * s);
  const int64_t rep = Hq / Hkv;
  const Dims sshape{B, Hq, L, S};
  std::vector<double> sc(static_cast<size_t>(B * Hq * L * S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const double* qr = q.data() + ((b * Hq + h) * L + i) * E;
        for (int64_t j = 0; j < S; ++j) {
          const double* kr = k.data() + ((b * Hkv + h / rep) * S + j) * E;
          double acc = 0;
          for (int64_t d = 0; d < E; ++d) acc += qr[d] * kr[d];
          sc[static_cast<size_t>(((b * Hq + h) * L + i) * S + j)] = roundTo(ct, roundTo(t, acc));
        }
      }
  if (const Graph* g = modGraph(n, "score_mod")) sc = runMod(c, *g, "score_mod", ct, sshape, sc);
  for (int64_t r = 0; r < B * Hq * L; ++r) {
    double* x = sc.data() + r * S;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < S; ++j)
      m = std::isnan(x[j]) || std::isnan(m) ? x[j] + m : std::max(m, x[j]);
    double sum = 0;
    for (int64_t j = 0; j < S; ++j) sum += x[j] = roundTo(ct, std::exp(roundTo(ct, x[j] - m)));
    sum = roundTo(ct, sum);
    for (int64_t j = 0; j < S; ++j) x[j] = roundTo(ct, x[j] / sum);
  }
  if (const Graph* g = modGraph(n, "prob_mod")) sc = runMod(c, *g, "prob_mod", ct, sshape, sc);
  std::vector<double> y(static_cast<size_t>(B * Hq * L * Ev), 0.0);
  for (double& x : v) x = roundTo(ct, x);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < L; ++i) {
        double* yr = y.data() + ((b * Hq + h) * L + i) * Ev;
        const double* pr = sc.data() + ((b * Hq + h) * L + i) * S;
        for (int64_t j = 0; j < S; ++j) {
          const double* vr = v.data() + ((b * Hkv + h / rep) * S + j) * Ev;
          for (int64_t d = 0; d < Ev; ++d) yr[d] += pr[j] * vr[d];
        }
        for (int64_t d = 0; d < Ev; ++d) yr[d] = roundTo(t, roundTo(ct, yr[d]));
      }
  return {RValue::of(attn::fromDoubles(t, {B, Hq, L, Ev}, y))};
}

void flexInfer(InferCtx& c) {
  const DType t = c.inDType(0);
  const auto &qs = c.inShape(0), &ks = c.inShape(1), &vs = c.inShape(2);
  std::optional<Shape> scores, y;
  if (qs && ks && vs) {
    AICC_CHECK(qs->size() == 4 && ks->size() == 4 && vs->size() == 4,
               "Q {}, K {} and V {} must be 4-D", formatShape(*qs), formatShape(*ks),
               formatShape(*vs));
    attn::checkSameDim((*qs)[3], (*ks)[3], "Q and K head sizes");
    attn::checkSameDim((*ks)[2], (*vs)[2], "K and V sequence lengths");
    scores = Shape{(*qs)[0], (*qs)[1], (*qs)[2], (*ks)[2]};
    y = Shape{(*qs)[0], (*qs)[1], (*qs)[2], (*vs)[3]};
  }
  c.setTensor(0, t, y);
  if (t == DType::Undefined) return;
  const DType ct = softmaxType(c.node, t);
  for (const char* name : {"score_mod", "prob_mod"}) {
    const Attribute* a = c.node.attr(name);
    if (!a || a->kind() != Attribute::Kind::Graph) continue;
    Graph& g = *std::get<GraphPtr>(a->v);
    AICC_CHECK(g.inputs.size() == 1 && g.outputs.size() == 1,
               "graph '{}' must take one input and return one output", name);
    setSubgraphInputType(g.inputs[0], Type::tensor(ct, scores));
    inferShapes(g, c.shapeValues());
  }
}

} // namespace

void registerFlexAttentionOps(OpRegistry& r) {
  r.op("FlexAttention", "ai.onnx.preview")
      .since(1)
      .inputs(3, 3)
      .outputs(1, 1)
      .attr("prob_mod", Attribute::Kind::Graph)
      .attr("score_mod", Attribute::Kind::Graph)
      .attr("scale", Attribute::Kind::Float)
      .attr("softmax_precision", Attribute::Kind::Int)
      .infer(flexInfer)
      .kernel(flexKernel);
}

} // namespace aicc
