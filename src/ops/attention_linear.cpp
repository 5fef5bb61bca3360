// LinearAttention and CausalConvWithState (opset 27), the recurrent-state ops of linear-attention
// and state-space models.
//
// LinearAttention runs the recurrence over time t with a state S[b, h, dk, dv] per kv head, in f32
// as the reference does (3-D inputs [B, T, H * D] split into heads):
//   gated rules:  S *= exp(decay_t)                 (decay per head or per key feature)
//   delta rules:  v_t <- beta_t * (v_t - S^T k_t)
//   always:       S += k_t v_t^T;   out_t = scale * q_t^T S   (query head h reads kv head
//                 h / (q_num_heads / kv_num_heads))
// update_rule: linear (neither), gated, delta, gated_delta (both); scale 0 means 1 / sqrt(dk).
// present_state has past_state's type (the query's when past_state is omitted).
//
// CausalConvWithState is a depthwise causal Conv1d: the input [B, C, L] is prefixed with
// past_state [B, C, k - 1] (zeros when omitted), convolved with weight [C, 1, k] (+ bias), and
// optionally passed through SiLU ("silu" / "swish"); present_state is the last k - 1 columns of the
// padded input.
#include "ops/attention.h"

#include "ops/helpers.h"

#include <cmath>

namespace aicc {
namespace {

using attn::roundTo;

// [B, T, H * D] -> f32 [B][H][T][D].
std::vector<float> splitHeads(const Tensor& x, int64_t H, const char* what) {
  AICC_CHECK(x.rank() == 3, "{} must be 3-D [batch, time, heads * size], got {}", what,
             formatDims(x.shape()));
  AICC_CHECK(H > 0 && x.dim(2) % H == 0, "{} last dim {} is not a multiple of {} heads", what,
             x.dim(2), H);
  const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2) / H;
  std::vector<double> v = attn::toDoubles(x);
  std::vector<float> r(v.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          r[static_cast<size_t>(((b * H + h) * T + t) * D + d)] =
              static_cast<float>(v[static_cast<size_t>(((b * T + t) * H + h) * D + d)]);
  return r;
}

std::vector<RValue> linearAttentionKernel(KernelCtx& c) {
  const Node& n = c.node;
  const std::initializer_list<DType> fl = {DType::F32, DType::F16, DType::BF16};
  for (size_t i = 0; i < 6; ++i)
    if (c.has(i)) attn::requireFloat(c, i, fl);
  const std::string rule = n.attrString("update_rule");
  AICC_CHECK(rule == "linear" || rule == "gated" || rule == "delta" || rule == "gated_delta",
             "update_rule '{}' is not linear, gated, delta or gated_delta", rule);
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  AICC_CHECK(gating == c.has(4), "update_rule '{}' {} the decay input", rule,
             gating ? "needs" : "forbids");
  AICC_CHECK(delta == c.has(5), "update_rule '{}' {} the beta input", rule,
             delta ? "needs" : "forbids");
  const int64_t Hq = n.attrInt("q_num_heads"), Hkv = n.attrInt("kv_num_heads");
  AICC_CHECK(Hq > 0 && Hkv > 0 && Hq % Hkv == 0,
             "q_num_heads {} must be a positive multiple of kv_num_heads {}", Hq, Hkv);
  const Tensor &Q = c.in(0), &K = c.in(1), &V = c.in(2);
  std::vector<float> q = splitHeads(Q, Hq, "query"), k = splitHeads(K, Hkv, "key"),
                     v = splitHeads(V, Hkv, "value");
  const int64_t B = Q.dim(0), T = Q.dim(1), dk = Q.dim(2) / Hq, dv = V.dim(2) / Hkv, G = Hq / Hkv;
  AICC_CHECK(K.dim(0) == B && V.dim(0) == B && K.dim(1) == T && V.dim(1) == T &&
                 K.dim(2) == Hkv * dk,
             "query {}, key {} and value {} do not agree (key must be [{},{},{}])",
             formatDims(Q.shape()), formatDims(K.shape()), formatDims(V.shape()), B, T, Hkv * dk);
  // decay as [B][Hkv][T][gd] with gd = 1 (per head) or dk (per key feature); beta [B][Hb][T].
  std::vector<float> g, beta;
  int64_t gd = 0, Hb = 0;
  if (gating) {
    const Tensor& D = c.in(4);
    AICC_CHECK(D.rank() == 3 && D.dim(0) == B && D.dim(1) == T &&
                   (D.dim(2) == Hkv || D.dim(2) == Hkv * dk),
               "decay must be [{},{},{} or {}], got {}", B, T, Hkv, Hkv * dk,
               formatDims(D.shape()));
    gd = D.dim(2) / Hkv;
    g = splitHeads(D, Hkv, "decay");
  }
  if (delta) {
    const Tensor& Bt = c.in(5);
    AICC_CHECK(Bt.rank() == 3 && Bt.dim(0) == B && Bt.dim(1) == T &&
                   (Bt.dim(2) == Hkv || Bt.dim(2) == 1),
               "beta must be [{},{},{} or 1], got {}", B, T, Hkv, formatDims(Bt.shape()));
    Hb = Bt.dim(2);
    beta = splitHeads(Bt, Hb, "beta");
  }
  const size_t stateSize = static_cast<size_t>(B * Hkv * dk * dv);
  std::vector<float> S(stateSize, 0.0f);
  DType stateType = Q.dtype();
  if (c.has(3)) {
    const Tensor& P = c.in(3);
    AICC_CHECK(P.shape() == (Dims{B, Hkv, dk, dv}), "past_state must be [{},{},{},{}], got {}", B,
               Hkv, dk, dv, formatDims(P.shape()));
    stateType = P.dtype();
    std::vector<double> p = attn::toDoubles(P);
    for (size_t i = 0; i < stateSize; ++i) S[i] = static_cast<float>(p[i]);
  }
  const float sc = n.attrFloat("scale");
  const float scale =
      sc == 0.0f ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(dk))) : sc;
  std::vector<double> out(static_cast<size_t>(B * T * Hq * dv));
  std::vector<float> vt(static_cast<size_t>(dv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < Hkv; ++h) {
        float* st = S.data() + (b * Hkv + h) * dk * dv;
        const float* kt = k.data() + ((b * Hkv + h) * T + t) * dk;
        const float* vin = v.data() + ((b * Hkv + h) * T + t) * dv;
        if (gating) {
          const float* gt = g.data() + ((b * Hkv + h) * T + t) * gd;
          for (int64_t d = 0; d < dk; ++d) {
            const float e = std::exp(gt[gd == 1 ? 0 : d]);
            for (int64_t m = 0; m < dv; ++m) st[d * dv + m] *= e;
          }
        }
        for (int64_t m = 0; m < dv; ++m) vt[static_cast<size_t>(m)] = vin[m];
        if (delta) {
          const float bt = beta[static_cast<size_t>((b * Hb + (Hb == 1 ? 0 : h)) * T + t)];
          for (int64_t m = 0; m < dv; ++m) {
            float ret = 0;
            for (int64_t d = 0; d < dk; ++d) ret += st[d * dv + m] * kt[d];
            vt[static_cast<size_t>(m)] = bt * (vin[m] - ret);
          }
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t m = 0; m < dv; ++m) st[d * dv + m] += kt[d] * vt[static_cast<size_t>(m)];
      }
      for (int64_t h = 0; h < Hq; ++h) {
        const float* st = S.data() + (b * Hkv + h / G) * dk * dv;
        const float* qt = q.data() + ((b * Hq + h) * T + t) * dk;
        for (int64_t m = 0; m < dv; ++m) {
          float acc = 0;
          for (int64_t d = 0; d < dk; ++d) acc += qt[d] * st[d * dv + m];
          out[static_cast<size_t>(((b * T + t) * Hq + h) * dv + m)] = scale * acc;
        }
      }
    }
  std::vector<double> sd(S.begin(), S.end());
  return {RValue::of(attn::fromDoubles(Q.dtype(), {B, T, Hq * dv}, out)),
          RValue::of(attn::fromDoubles(stateType, {B, Hkv, dk, dv}, sd))};
}

void linearAttentionInfer(InferCtx& c) {
  const int64_t Hq = c.node.attrInt("q_num_heads"), Hkv = c.node.attrInt("kv_num_heads");
  AICC_CHECK(Hq > 0 && Hkv > 0 && Hq % Hkv == 0,
             "q_num_heads {} must be a positive multiple of kv_num_heads {}", Hq, Hkv);
  const DType st = c.has(3) ? c.inDType(3) : c.inDType(0);
  const auto &qs = c.inShape(0), &vs = c.inShape(2);
  if (!qs || !vs) {
    c.setTensor(0, c.inDType(0), std::nullopt);
    c.setTensor(1, st, std::nullopt);
    return;
  }
  AICC_CHECK(qs->size() == 3 && vs->size() == 3, "query {} and value {} must be 3-D",
             formatShape(*qs), formatShape(*vs));
  const Dim dv = attn::dimDiv((*vs)[2], Hkv);
  c.setTensor(0, c.inDType(0),
              Shape{(*qs)[0], (*qs)[1], Hq == Hkv ? (*vs)[2] : attn::dimMul(dv, Hq)});
  c.setTensor(1, st, Shape{(*qs)[0], Dim::known(Hkv), attn::dimDiv((*qs)[2], Hq), dv});
}

std::vector<RValue> causalConvKernel(KernelCtx& c) {
  for (size_t i = 0; i < 4; ++i)
    if (c.has(i)) attn::requireFloat(c, i, {DType::F32, DType::F16, DType::BF16});
  const std::string act = c.node.attrString("activation");
  AICC_CHECK(act == "none" || act == "silu" || act == "swish",
             "activation '{}' is not none, silu or swish", act);
  const Tensor &X = c.in(0), &W = c.in(1);
  AICC_CHECK(X.rank() == 3, "input must be [batch, channels, length], got {}",
             formatDims(X.shape()));
  const int64_t B = X.dim(0), C = X.dim(1), L = X.dim(2);
  AICC_CHECK(W.rank() == 3 && W.dim(0) == C && W.dim(1) == 1 && W.dim(2) >= 1,
             "weight must be [{}, 1, k], got {}", C, formatDims(W.shape()));
  const int64_t k = W.dim(2), Lp = L + k - 1;
  const DType t = X.dtype();
  std::vector<double> w = attn::toDoubles(W), x = attn::toDoubles(X),
                      bias(static_cast<size_t>(C), 0.0);
  if (c.has(2)) {
    AICC_CHECK(c.in(2).shape() == Dims{C}, "bias must be [{}], got {}", C,
               formatDims(c.in(2).shape()));
    bias = attn::toDoubles(c.in(2));
  }
  std::vector<double> past(static_cast<size_t>(B * C * (k - 1)), 0.0);
  if (c.has(3)) {
    AICC_CHECK(c.in(3).shape() == (Dims{B, C, k - 1}), "past_state must be [{},{},{}], got {}", B,
               C, k - 1, formatDims(c.in(3).shape()));
    past = attn::toDoubles(c.in(3));
  }
  std::vector<double> padded(static_cast<size_t>(B * C * Lp));
  for (int64_t bc = 0; bc < B * C; ++bc) {
    std::copy_n(past.begin() + bc * (k - 1), k - 1, padded.begin() + bc * Lp);
    std::copy_n(x.begin() + bc * L, L, padded.begin() + bc * Lp + k - 1);
  }
  std::vector<double> y(static_cast<size_t>(B * C * L)),
      state(static_cast<size_t>(B * C * (k - 1)));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t ch = 0; ch < C; ++ch) {
      const double* p = padded.data() + (b * C + ch) * Lp;
      const double* wk = w.data() + ch * k;
      for (int64_t i = 0; i < L; ++i) {
        double acc = bias[static_cast<size_t>(ch)];
        for (int64_t j = 0; j < k; ++j) acc += wk[j] * p[i + j];
        double v = roundTo(t, acc);
        if (act != "none") v = roundTo(DType::F32, v) / (1.0 + std::exp(-v));
        y[static_cast<size_t>((b * C + ch) * L + i)] = roundTo(t, v);
      }
      std::copy_n(p + L, k - 1, state.begin() + (b * C + ch) * (k - 1));
    }
  return {RValue::of(attn::fromDoubles(t, X.shape(), y)),
          RValue::of(attn::fromDoubles(t, {B, C, k - 1}, state))};
}

void causalConvInfer(InferCtx& c) {
  const DType t = c.inDType(0);
  const auto &xs = c.inShape(0), &ws = c.inShape(1);
  c.setTensor(0, t, xs);
  if (!xs || !ws) return c.setTensor(1, t, std::nullopt);
  AICC_CHECK(xs->size() == 3 && ws->size() == 3, "input {} and weight {} must be 3-D",
             formatShape(*xs), formatShape(*ws));
  attn::checkSameDim((*xs)[1], (*ws)[0], "input channels and weight dim 0");
  const Dim& k = (*ws)[2];
  c.setTensor(1, t, Shape{(*xs)[0], (*xs)[1], k.isStatic() ? Dim::known(k.value - 1) : Dim{}});
}

} // namespace

void registerLinearAttentionOps(OpRegistry& r) {
  r.op("LinearAttention")
      .since(27)
      .inputs(3, 6)
      .outputs(2, 2)
      .attrInt("chunk_size", 64)
      .attr("kv_num_heads", Attribute::Kind::Int, true)
      .attr("q_num_heads", Attribute::Kind::Int, true)
      .attrFloat("scale", 0.0f)
      .attrString("update_rule", "gated_delta")
      .infer(linearAttentionInfer)
      .kernel(linearAttentionKernel);
  r.op("CausalConvWithState")
      .since(27)
      .inputs(2, 4)
      .outputs(2, 2)
      .attrString("activation", "none")
      .infer(causalConvInfer)
      .kernel(causalConvKernel);
}

} // namespace aicc
