#include "quant/ptq.h"

#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "interp/interpreter.h"
#include "ir/rewrite.h"
#include "passes/pipelines.h"
#include "support/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace aicc {

namespace {

bool isOp(const Node* n, const char* op) { return n && n->op == op && n->domain.empty(); }
bool isF32(const Value* v) { return v && v->type.dtype == DType::F32; }
bool isActivation(const Value* v) { return isF32(v) && !v->constant; }

// The op result a quantized op's output Q goes after: a Relu/Clip that is its only consumer
// (and not a graph output), else the result itself.
Value* quantPoint(const Graph& g, Value* out) {
  const std::vector<Use> uses = usesOf(g, out);
  if (uses.size() != 1 || isGraphOutput(g, out)) return out;
  Node* u = uses[0].node;
  if (u->owner == &g && (isOp(u, "Relu") || isOp(u, "Clip")) && uses[0].index == 0) {
    for (size_t i = 1; i < u->inputs.size(); ++i)
      if (u->inputs[i] && !u->inputs[i]->constant) return out;
    return u->outputs[0];
  }
  return out;
}

// The calibrated range of one tensor over every run.
struct Range {
  double lo = 0, hi = 0;
  std::vector<float> neg, pos; // percentile, entropy: magnitudes seen on each side (subsampled)
};

void observe(Range& r, const Tensor& t, const PtqOptions& o) {
  const float* p = t.data<float>();
  const int64_t n = t.numel();
  const int64_t step = std::max<int64_t>(1, n / 65536); // <= 64K samples per run
  for (int64_t i = 0; i < n; ++i) {
    const double v = p[i];
    if (!std::isfinite(v)) continue;
    r.lo = std::min(r.lo, v), r.hi = std::max(r.hi, v);
    if (o.method != "minmax" && i % step == 0)
      (v < 0 ? r.neg : r.pos).push_back(float(std::fabs(v)));
  }
}

double percentileOf(std::vector<float>& v, double pct) {
  if (v.empty()) return 0;
  const size_t k =
      std::min(v.size() - 1, size_t(std::ceil(v.size() * pct / 100.0)) - (pct >= 100 ? 1 : 0));
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

// Entropy calibration (the TensorRT method): the clipping threshold of the magnitudes `v` whose
// `levels`-level quantization loses the least information, measured as the KL divergence between
// the clipped 2048-bin histogram (outliers folded into the last kept bin) and its quantized
// version (each of the levels spreads its total evenly over its non-empty bins).
double entropyThreshold(const std::vector<float>& v, int levels) {
  constexpr int kBins = 2048;
  double top = 0;
  for (float x : v) top = std::max(top, double(x));
  // A histogram needs data: small tensors (a classifier's logits) keep their whole range.
  if (v.size() < 16 * size_t(kBins) || top <= 0) return top;
  std::vector<double> hist(kBins, 0.0);
  for (float x : v) hist[size_t(std::min(kBins - 1, int(double(x) / top * kBins)))] += 1;
  double bestKl = std::numeric_limits<double>::infinity();
  int best = kBins;
  std::vector<double> p(kBins), q(kBins);
  double outliers = 0; // the bins past the threshold, folded into its last kept bin
  for (int b = levels; b < kBins; ++b) outliers += hist[size_t(b)];
  for (int i = levels; i <= kBins; outliers -= i < kBins ? hist[size_t(i)] : 0.0, ++i) {
    std::copy(hist.begin(), hist.begin() + i, p.begin());
    p[size_t(i - 1)] += outliers;
    for (int l = 0; l < levels; ++l) { // the quantized histogram
      const int b0 = l * i / levels, b1 = (l + 1) * i / levels;
      double sum = 0;
      int nonzero = 0;
      for (int b = b0; b < b1; ++b) sum += hist[size_t(b)], nonzero += hist[size_t(b)] > 0;
      for (int b = b0; b < b1; ++b) q[size_t(b)] = hist[size_t(b)] > 0 ? sum / nonzero : 0.0;
    }
    double ps = 0, qs = 0;
    for (int b = 0; b < i; ++b) ps += p[size_t(b)], qs += q[size_t(b)];
    double kl = 0;
    for (int b = 0; b < i && qs > 0; ++b) {
      if (p[size_t(b)] <= 0) continue;
      const double pb = p[size_t(b)] / ps, qb = q[size_t(b)] / qs;
      kl += qb > 0 ? pb * std::log(pb / qb) : pb * 30; // an empty level where data lies: large
    }
    if (kl < bestKl) bestKl = kl, best = i;
  }
  return (best + 0.5) / kBins * top;
}

// uint8 asymmetric parameters of [lo, hi] (lo <= 0 <= hi).
PtqTensor uint8Params(const std::string& name, double lo, double hi) {
  if (hi - lo < 1e-12) hi = lo + 1e-12;
  PtqTensor t{name, lo, hi, float((hi - lo) / 255.0), 0};
  t.zeroPoint = std::clamp<int64_t>(int64_t(std::nearbyint(-lo / t.scale)), 0, 255);
  return t;
}

Value* constant(Graph& g, const std::string& base, Tensor t) {
  return g.addConstant(g.uniqueName(base), std::move(t));
}

// Q -> DQ after activation `v` (params p); every other use of v reads the DQ.
void insertQdq(Graph& g, Value* v, const PtqTensor& p) {
  Node* after = v->producer && v->producer->owner == &g ? v->producer : nullptr;
  const size_t at = after ? nodeIndex(g, after) + 1 : 0;
  Node* before = at < g.nodes.size() ? g.nodes[at].get() : nullptr;
  Value* s = constant(g, v->name + "_scale", Tensor::scalar(DType::F32, p.scale));
  Value* z = constant(g, v->name + "_zero_point", Tensor::scalar(DType::U8, double(p.zeroPoint)));
  Node* q = insertNode(g, before, "QuantizeLinear", {v, s, z}, 1, v->name + "_QuantizeLinear");
  q->outputs[0]->type = v->type;
  q->outputs[0]->type.dtype = DType::U8;
  Node* dq = insertNode(g, before, "DequantizeLinear", {q->outputs[0], s, z}, 1,
                        v->name + "_DequantizeLinear");
  dq->outputs[0]->type = v->type;
  replaceAllUses(g, v, dq->outputs[0]);
  q->inputs[0] = v; // the Q itself reads the float value
}

// Weights w (f32 constant) as DQ(int8, symmetric scales along `axis`, or one scale).
std::vector<double> quantizeWeights(Graph& g, Node& n, size_t input, int64_t axis,
                                    bool perChannel) {
  const Tensor& w = *n.inputs[input]->constant;
  const int64_t channels = perChannel ? w.dim(axis) : 1;
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < w.rank(); ++d) inner *= w.dim(d);
  auto channelOf = [&](int64_t i) { return perChannel ? i / inner % channels : 0; };
  std::vector<double> maxAbs(size_t(channels), 0.0);
  for (int64_t i = 0; i < w.numel(); ++i)
    maxAbs[size_t(channelOf(i))] = std::max(maxAbs[size_t(channelOf(i))], std::fabs(w.getF64(i)));
  Tensor scale(DType::F32, perChannel ? Dims{channels} : Dims{}), zp(DType::I8, scale.shape());
  std::vector<double> s(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    s[size_t(c)] = double(float(maxAbs[size_t(c)] > 0 ? maxAbs[size_t(c)] / 127.0 : 1.0));
    scale.setF64(c, s[size_t(c)]);
    zp.setI64(c, 0);
  }
  Tensor q(DType::I8, w.shape());
  for (int64_t i = 0; i < w.numel(); ++i)
    q.setI64(i, std::clamp<int64_t>(int64_t(std::nearbyint(w.getF64(i) / s[size_t(channelOf(i))])),
                                    -127, 127));
  const std::string base = n.inputs[input]->name;
  Value* qv = constant(g, base + "_quantized", std::move(q));
  Node* dq = insertNode(g, &n, "DequantizeLinear",
                        {qv, constant(g, base + "_scale", std::move(scale)),
                         constant(g, base + "_zero_point", std::move(zp))},
                        1, base + "_DequantizeLinear");
  if (perChannel) dq->attrs["axis"] = Attribute{axis};
  dq->outputs[0]->type = n.inputs[input]->type;
  n.inputs[input] = dq->outputs[0];
  return s;
}

// A Conv bias (f32 constant [M]) as DQ(int32, scale x_scale * w_scale[m]).
void quantizeBias(Graph& g, Node& conv, double xs, const std::vector<double>& ws) {
  const Tensor& b = *conv.inputs[2]->constant;
  const int64_t M = b.numel();
  Tensor q(DType::I32, {M}), scale(DType::F32, {M});
  for (int64_t m = 0; m < M; ++m) {
    const float s = float(xs) * float(ws[ws.size() == 1 ? 0 : size_t(m)]);
    scale.setF64(m, s);
    const double v = std::nearbyint(b.getF64(m) / double(s));
    q.setI64(m, int64_t(std::clamp(v, -2147483647.0, 2147483647.0)));
  }
  const std::string base = conv.inputs[2]->name;
  Node* dq = insertNode(g, &conv, "DequantizeLinear",
                        {constant(g, base + "_quantized", std::move(q)),
                         constant(g, base + "_scale", std::move(scale))},
                        1, base + "_DequantizeLinear");
  dq->attrs["axis"] = Attribute{int64_t(0)};
  dq->outputs[0]->type = conv.inputs[2]->type;
  conv.inputs[2] = dq->outputs[0];
}

} // namespace

double sqnrDb(const Tensor& ref, const Tensor& got) {
  double sig = 0, noise = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = ref.getF64(i), d = r - got.getF64(i);
    sig += r * r, noise += d * d;
  }
  return noise == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(sig / noise);
}

std::vector<OutputAccuracy> compareOutputs(const std::vector<std::vector<RValue>>& ref,
                                           const std::vector<std::vector<RValue>>& got) {
  std::vector<OutputAccuracy> acc(ref.empty() ? 0 : ref[0].size());
  for (auto& a : acc) a.sqnrDb = std::numeric_limits<double>::infinity();
  std::vector<bool> classifier(acc.size(), true);
  for (size_t i = 0; i < ref.size(); ++i)
    for (size_t k = 0; k < acc.size(); ++k) {
      if (ref[i][k].kind != RValue::Kind::Tensor || !isFloat(ref[i][k].tensor.dtype())) continue;
      const Tensor &r = ref[i][k].tensor, &q = got[i][k].tensor;
      OutputAccuracy& a = acc[k];
      a.sqnrDb = std::min(a.sqnrDb, sqnrDb(r, q));
      double range = 0, err = 0;
      for (int64_t e = 0; e < r.numel(); ++e) {
        range = std::max(range, std::fabs(r.getF64(e)));
        err = std::max(err, std::fabs(r.getF64(e) - q.getF64(e)));
      }
      a.maxRelError = std::max(a.maxRelError, range > 0 ? err / range : err);
      const int64_t C = r.rank() == 2 ? r.dim(1) : 0;
      classifier[k] = classifier[k] && C > 1;
      for (int64_t row = 0; classifier[k] && row < r.dim(0); ++row) {
        int64_t x = 0, y = 0;
        for (int64_t c = 1; c < C; ++c) {
          if (r.getF64(row * C + c) > r.getF64(row * C + x)) x = c;
          if (q.getF64(row * C + c) > q.getF64(row * C + y)) y = c;
        }
        ++a.rows, a.top1Same += x == y;
      }
    }
  for (size_t k = 0; k < acc.size(); ++k)
    if (!classifier[k]) acc[k].rows = acc[k].top1Same = 0;
  return acc;
}

namespace {

// The ops quantized: Conv with constant weights (and bias), MatMul with constant 2-D weights, Add
// of two activations; `keepFloat` names (by output value) ops left in float.
std::vector<Node*> candidates(Graph& g, const std::set<std::string>& keepFloat = {}) {
  std::vector<Node*> ops;
  for (auto& np : g.nodes) {
    Node* n = np.get();
    if (keepFloat.count(n->outputs[0]->name)) continue;
    bool outputIn = false; // an input that is also a graph output stays float: no Q/DQ there
    for (const Value* in : n->inputs) outputIn |= in && !in->constant && isGraphOutput(g, in);
    if (outputIn) continue;
    if ((isOp(n, "Conv") && isActivation(n->inputs[0]) && isF32(n->inputs[1]) &&
         n->inputs[1]->constant && (!n->hasInput(2) || n->inputs[2]->constant)) ||
        (isOp(n, "MatMul") && isActivation(n->inputs[0]) && isF32(n->inputs[1]) &&
         n->inputs[1]->constant && n->inputs[1]->constant->rank() == 2) ||
        (isOp(n, "Add") && isActivation(n->inputs[0]) && isActivation(n->inputs[1]) &&
         n->outputs[0]->type.dtype == DType::F32))
      ops.push_back(n);
  }
  return ops;
}

// The activations around `ops` (inputs and quantization points; graph outputs stay float).
std::vector<Value*> activations(const Graph& g, const std::vector<Node*>& ops) {
  std::vector<Value*> acts;
  std::set<const Value*> seen;
  auto want = [&](Value* v) {
    if (isActivation(v) && !isGraphOutput(g, v) && seen.insert(v).second) acts.push_back(v);
  };
  for (Node* n : ops) {
    for (Value* in : n->inputs)
      if (in && !in->constant) want(in);
    want(quantPoint(g, n->outputs[0]));
  }
  return acts;
}

// Activation parameters by value name, from the float graph run on every calibration set; the
// graph's own outputs of those runs go to `floatOutputs`.
std::map<std::string, PtqTensor> calibrate(Graph& g, const std::vector<Value*>& acts,
                                           const std::vector<std::vector<RValue>>& calibration,
                                           const PtqOptions& o,
                                           std::vector<std::vector<RValue>>& floatOutputs) {
  const std::vector<Value*> outputs = g.outputs;
  for (Value* v : acts) g.outputs.push_back(v);
  std::map<const Value*, Range> ranges;
  for (const auto& in : calibration) {
    std::vector<RValue> got = interpret(g, in);
    for (size_t i = outputs.size(); i < g.outputs.size(); ++i)
      observe(ranges[g.outputs[i]], got[i].tensor, o);
    got.resize(outputs.size());
    floatOutputs.push_back(std::move(got));
  }
  g.outputs = outputs;
  std::map<std::string, PtqTensor> params;
  for (Value* v : acts) {
    Range& r = ranges[v];
    double lo = r.lo, hi = r.hi;
    if (o.method == "percentile")
      lo = -percentileOf(r.neg, o.percentile), hi = percentileOf(r.pos, o.percentile);
    if (o.method == "entropy") { // 255 levels for one side, 128 per side for both
      const bool both = !r.neg.empty() && !r.pos.empty();
      lo = r.neg.empty() ? 0.0 : -entropyThreshold(r.neg, both ? 128 : 255);
      hi = r.pos.empty() ? 0.0 : entropyThreshold(r.pos, both ? 128 : 255);
    }
    params[v->name] = uint8Params(v->name, std::min(lo, 0.0), std::max(hi, 0.0));
  }
  return params;
}

// The QDQ rewrite of every candidate op not in keepFloat.
void apply(Model& m, const std::map<std::string, PtqTensor>& params,
           const std::set<std::string>& keepFloat, const PtqOptions& o, PtqReport* report) {
  Graph& g = *m.graph;
  const std::vector<Node*> ops = candidates(g, keepFloat);
  const std::vector<Value*> acts = activations(g, ops);
  // Weights and biases first (they read the calibrated input scales), then the activations' Q/DQ.
  for (Node* n : ops) {
    if (isOp(n, "Conv")) {
      const std::vector<double> ws = quantizeWeights(g, *n, 1, 0, o.perChannel);
      if (n->hasInput(2)) quantizeBias(g, *n, params.at(n->inputs[0]->name).scale, ws);
      if (report) ++report->convs;
    } else if (isOp(n, "MatMul")) {
      quantizeWeights(g, *n, 1, 1, o.perChannel);
      if (report) ++report->matmuls;
    } else if (report) {
      ++report->adds;
    }
  }
  for (Value* v : acts) {
    insertQdq(g, v, params.at(v->name));
    if (report) report->activations.push_back(params.at(v->name));
  }
  makeGraphPass("dce").run(m); // the float weights
  int64_t& opset = m.opsets[""];
  opset = std::max<int64_t>(opset, 13);            // per-axis DequantizeLinear
  m.irVersion = std::max<int64_t>(m.irVersion, 7); // what opset 13 needs
}

// The worst SQNR over outputs and calibration sets of `m` against the float outputs `ref`.
double worstSqnr(const Model& m, const std::vector<std::vector<RValue>>& calibration,
                 const std::vector<std::vector<RValue>>& ref) {
  std::vector<std::vector<RValue>> got;
  for (const auto& in : calibration) got.push_back(interpret(*m.graph, in));
  double worst = std::numeric_limits<double>::infinity();
  for (const OutputAccuracy& a : compareOutputs(ref, got)) worst = std::min(worst, a.sqnrDb);
  return worst;
}

} // namespace

PtqReport quantizeModel(Model& m, const std::vector<std::vector<RValue>>& calibration,
                        const PtqOptions& o) {
  AICC_CHECK(o.method == "minmax" || o.method == "percentile" || o.method == "entropy",
             "quantize: unknown calibration method '{}' (minmax, percentile, entropy)", o.method);
  AICC_CHECK(!calibration.empty(), "quantize: no calibration inputs");
  // Standard-ONNX cleanup: BatchNormalization into Conv, constants folded, dead code gone.
  for (const char* p :
       {"fold-shapes", "constant-fold", "dce", "fold-affine", "constant-fold", "dce"})
    makeGraphPass(p).run(m);
  std::vector<Node*> ops = candidates(*m.graph);
  PtqReport report;
  const auto params =
      calibrate(*m.graph, activations(*m.graph, ops), calibration, o, report.floatOutputs);
  const std::vector<std::vector<RValue>>& ref = report.floatOutputs;
  std::set<std::string> keepFloat;
  if (o.minSqnrDb > 0) {
    // Mixed precision: the float model is copied through its ONNX bytes for each trial.
    const std::string bytes = exportOnnxBytes(m);
    auto trial = [&](const std::set<std::string>& floatOps) {
      ImportedModel t = importOnnxBytes(bytes, ".");
      apply(t.model, params, floatOps, o, nullptr);
      return worstSqnr(t.model, calibration, ref);
    };
    report.sqnrAllInt8 = trial({});
    if (report.sqnrAllInt8 < o.minSqnrDb) {
      // Sensitivity: the SQNR with one op alone quantized; the worst ones stay float first.
      std::vector<std::string> names;
      for (Node* n : ops) names.push_back(n->outputs[0]->name);
      std::vector<std::pair<double, std::string>> alone;
      for (const std::string& op : names) {
        std::set<std::string> others(names.begin(), names.end());
        others.erase(op);
        alone.emplace_back(trial(others), op);
      }
      std::sort(alone.begin(), alone.end());
      for (const auto& [db, op] : alone) {
        keepFloat.insert(op);
        report.keptFloat.push_back({op, db});
        if (trial(keepFloat) >= o.minSqnrDb) break;
      }
    }
  }
  apply(m, params, keepFloat, o, &report);
  return report;
}

} // namespace aicc
