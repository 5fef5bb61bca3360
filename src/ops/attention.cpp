// Attention (opsets 23-25; the IR keeps the opset-25 form, whose only additions are the
// left_window_size / right_window_size attributes with "unbounded" defaults).
//
// The kernel follows the op's definition step by step, in double, rounding to the input type where
// the function body materializes a tensor (scaled Q and K, QK, softcap, QK + bias, softmax, Y), so
// float16 results agree with the reference:
//   Q' = Q * sqrt(scale), K' = K * sqrt(scale)      (3-D inputs are viewed as [B, H, S, D])
//   K, V <- Concat(past, new) along the sequence      (present_key / present_value)
//   QK = Q' K'^T (GQA: query head h reads kv head h / (Hq / Hkv)); softcap: c * tanh(QK / c)
//   bias = attn_mask (bool: 0 / -inf; shorter last dim padded with -inf) + causal + window +
//          padding (nonpad_kv_seqlen), each disallowed position contributing -inf
//   P = Softmax(QK + bias) in softmax_precision; rows whose bias is all -inf give P = 0
//   Y = P V; qk_matmul_output = QK (mode 0), softcapped QK (1), QK + bias (2), P (3).
#include "ops/attention.h"

#include "ops/helpers.h"

#include <cmath>
#include <limits>

namespace aicc {

namespace attn {

double roundTo(DType t, double v) {
  switch (t) {
  case DType::F64:
    return v;
  case DType::F32:
    return static_cast<float>(v);
  default:
    if (isReducedFloat(t)) return reducedToFloat(t, floatToReduced(t, static_cast<float>(v)));
    return v;
  }
}

std::vector<double> toDoubles(const Tensor& t) {
  if (t.dtype() == DType::F32) {
    const float* p = t.data<float>();
    return std::vector<double>(p, p + t.numel());
  }
  return t.toF64Vector();
}

Tensor fromDoubles(DType t, Dims shape, const std::vector<double>& v) {
  Tensor out(t, std::move(shape));
  AICC_CHECK(out.numel() == static_cast<int64_t>(v.size()), "internal: {} values for {} elements",
             v.size(), out.numel());
  if (t == DType::F32) {
    float* p = out.data<float>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<float>(v[i]);
  } else if (t == DType::F64) {
    std::copy(v.begin(), v.end(), out.data<double>());
  } else {
    for (size_t i = 0; i < v.size(); ++i) out.setF64(static_cast<int64_t>(i), v[i]);
  }
  return out;
}

void requireFloat(const KernelCtx& c, size_t i, std::initializer_list<DType> allowed) {
  requireDType(c, i, allowed);
}

Dim dimMul(const Dim& a, int64_t k) {
  if (a.isStatic()) return Dim::known(a.value * k);
  return k == 1 ? a : Dim{};
}

Dim dimDiv(const Dim& a, int64_t k) {
  if (a.isStatic()) return k > 0 && a.value % k == 0 ? Dim::known(a.value / k) : Dim{};
  return k == 1 ? a : Dim{};
}

Dim dimAdd(const Dim& a, const Dim& b) {
  if (a.isStatic() && b.isStatic()) return Dim::known(a.value + b.value);
  if (a.isStatic() && a.value == 0) return b;
  if (b.isStatic() && b.value == 0) return a;
  return Dim{};
}

void checkSameDim(const Dim& a, const Dim& b, const char* what) {
  AICC_CHECK(!a.isStatic() || !b.isStatic() || a.value == b.value, "{} differ: {} and {}", what,
             a.value, b.value);
}

} // namespace attn

namespace {

using attn::roundTo;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Q, K or V as a [B, H, S, D] array of doubles (3-D inputs [B, S, H * D] are split into heads).
struct Heads {
  int64_t B = 0, H = 0, S = 0, D = 0;
  std::vector<double> v; // [B][H][S][D]
  double at(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return v[static_cast<size_t>(((b * H + h) * S + s) * D + d)];
  }
};

Heads toHeads(const Tensor& t, int64_t numHeads, const char* what) {
  Heads r;
  std::vector<double> x = attn::toDoubles(t);
  if (t.rank() == 4) {
    r.B = t.dim(0), r.H = t.dim(1), r.S = t.dim(2), r.D = t.dim(3);
    r.v = std::move(x);
    return r;
  }
  AICC_CHECK(numHeads > 0, "{} is 3-D: q_num_heads and kv_num_heads must be given (> 0)", what);
  AICC_CHECK(t.dim(2) % numHeads == 0, "{} hidden size {} is not a multiple of {} heads", what,
             t.dim(2), numHeads);
  r.B = t.dim(0), r.H = numHeads, r.S = t.dim(1), r.D = t.dim(2) / numHeads;
  r.v.resize(x.size());
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t s = 0; s < r.S; ++s)
      for (int64_t h = 0; h < r.H; ++h)
        for (int64_t d = 0; d < r.D; ++d)
          r.v[static_cast<size_t>(((b * r.H + h) * r.S + s) * r.D + d)] =
              x[static_cast<size_t>(((b * r.S + s) * r.H + h) * r.D + d)];
  return r;
}

// Concat(past, cur) along the sequence axis.
Heads concatSeq(const Tensor* past, const Heads& cur, const char* what) {
  if (!past) return cur;
  AICC_CHECK(past->rank() == 4 && past->dim(0) == cur.B && past->dim(1) == cur.H &&
                 past->dim(3) == cur.D,
             "{} has shape {}, expected [{},{},past_sequence_length,{}]", what,
             formatDims(past->shape()), cur.B, cur.H, cur.D);
  Heads r = cur;
  const int64_t P = past->dim(2);
  r.S = P + cur.S;
  r.v.assign(static_cast<size_t>(r.B * r.H * r.S * r.D), 0.0);
  std::vector<double> p = attn::toDoubles(*past);
  for (int64_t bh = 0; bh < r.B * r.H; ++bh) {
    std::copy_n(p.begin() + bh * P * r.D, P * r.D, r.v.begin() + bh * r.S * r.D);
    std::copy_n(cur.v.begin() + bh * cur.S * r.D, cur.S * r.D, r.v.begin() + (bh * r.S + P) * r.D);
  }
  return r;
}

struct AttnParams {
  DType t1 = DType::F32, sp = DType::F32; // output type, softmax precision
  int64_t mode = 0;
  double softcap = 0;
  bool causal = false;
  int64_t left = -1, right = -1;
};

// The additive bias for (b, h, i, j) from the mask, causal / window bounds and padding.
struct Bias {
  const Tensor* mask = nullptr;
  std::vector<double> mv;
  bool boolMask = false;
  int64_t md[4] = {1, 1, 1, 1};
  const std::vector<int64_t>* nonpad = nullptr;
  int64_t past = 0, Sq = 0;
  bool hasPast = false;
  const AttnParams* p = nullptr;

  double at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    double v = 0;
    if (mask) {
      if (j >= md[3]) {
        v = kNegInf;
      } else {
        int64_t idx =
            (((md[0] == 1 ? 0 : b) * md[1] + (md[1] == 1 ? 0 : h)) * md[2] + (md[2] == 1 ? 0 : i)) *
                md[3] +
            j;
        double m = mv[static_cast<size_t>(idx)];
        v = boolMask ? (m != 0 ? 0.0 : kNegInf) : m;
      }
    }
    const int64_t offset = hasPast ? past : nonpad ? (*nonpad)[static_cast<size_t>(b)] - Sq : 0;
    const int64_t diff = i + offset - j;
    if (p->causal && diff < 0) v += kNegInf;
    if ((p->left >= 0 && diff > p->left) || (p->right >= 0 && -diff > p->right)) v += kNegInf;
    if (nonpad && j >= (*nonpad)[static_cast<size_t>(b)]) v += kNegInf;
    return v;
  }
};

// Softmax of one row in precision sp (values already rounded to sp); an all -inf row gives 0.
void softmaxRow(std::vector<double>& x, DType sp) {
  double m = kNegInf;
  bool nan = false;
  for (double v : x) {
    if (std::isnan(v)) nan = true;
    m = std::max(m, v);
  }
  if (nan) m = std::numeric_limits<double>::quiet_NaN();
  if (m == kNegInf) m = 0;
  double sum = 0;
  for (double& v : x) {
    v = roundTo(sp, std::exp(roundTo(sp, v - m)));
    sum += v;
  }
  sum = roundTo(sp, sum);
  if (sum == 0) sum = 1;
  for (double& v : x) v = roundTo(sp, v / sum);
}

std::vector<RValue> attentionKernel(KernelCtx& c) {
  const Node& n = c.node;
  const std::initializer_list<DType> floats = {DType::F32, DType::F16, DType::BF16, DType::F64};
  for (size_t i : {0, 1, 2}) attn::requireFloat(c, i, floats);
  const Tensor &Q = c.in(0), &K = c.in(1), &V = c.in(2);
  AICC_CHECK(Q.dtype() == K.dtype(), "Q is {} but K is {}", dtypeName(Q.dtype()),
             dtypeName(K.dtype()));
  const int64_t r = Q.rank();
  AICC_CHECK((r == 3 || r == 4) && K.rank() == r && V.rank() == r,
             "Q, K and V must all be 3-D or all 4-D, got {}, {} and {}", formatDims(Q.shape()),
             formatDims(K.shape()), formatDims(V.shape()));
  AICC_CHECK(c.has(4) == c.has(5), "past_key and past_value must be given together");
  AICC_CHECK(!(c.has(6) && c.has(4)),
             "nonpad_kv_seqlen cannot be combined with past_key/past_value");
  const int64_t qHeads = n.attrInt("q_num_heads", 0), kvHeads = n.attrInt("kv_num_heads", 0);
  AttnParams p;
  p.t1 = Q.dtype();
  p.mode = n.attrInt("qk_matmul_output_mode");
  AICC_CHECK(p.mode >= 0 && p.mode <= 3, "qk_matmul_output_mode {} is not in 0..3", p.mode);
  p.softcap = n.attrFloat("softcap");
  p.causal = n.attrInt("is_causal") != 0;
  p.left = n.attrInt("left_window_size");
  p.right = n.attrInt("right_window_size");
  AICC_CHECK(p.left >= -1 && p.right >= -1,
             "left/right_window_size must be -1 or >= 0, got {} and {}", p.left, p.right);
  p.sp = p.t1;
  if (n.attr("softmax_precision")) {
    auto sp = dtypeFromOnnx(static_cast<int32_t>(n.attrInt("softmax_precision")));
    AICC_CHECK(
        sp && (*sp == DType::F32 || *sp == DType::F16 || *sp == DType::BF16 || *sp == DType::F64),
        "softmax_precision {} is not FLOAT, FLOAT16, BFLOAT16 or DOUBLE",
        n.attrInt("softmax_precision"));
    p.sp = *sp;
  }

  Heads q = toHeads(Q, qHeads, "Q");
  Heads k = toHeads(K, kvHeads, "K");
  Heads v = toHeads(V, kvHeads, "V");
  if (r == 4) {
    AICC_CHECK(qHeads == 0 || qHeads == q.H, "q_num_heads {} differs from Q's {} heads", qHeads,
               q.H);
    AICC_CHECK(kvHeads == 0 || kvHeads == k.H, "kv_num_heads {} differs from K's {} heads", kvHeads,
               k.H);
  }
  AICC_CHECK(k.B == q.B && v.B == q.B, "Q, K and V have different batch sizes");
  AICC_CHECK(v.H == k.H && v.S == k.S, "K {} and V {} disagree on heads or sequence length",
             formatDims(K.shape()), formatDims(V.shape()));
  AICC_CHECK(k.D == q.D, "Q head size {} differs from K head size {}", q.D, k.D);
  AICC_CHECK(k.H > 0 && q.H % k.H == 0, "q_num_heads {} is not a multiple of kv_num_heads {}", q.H,
             k.H);
  const Tensor* pastK = c.has(4) ? &c.in(4) : nullptr;
  const Tensor* pastV = c.has(5) ? &c.in(5) : nullptr;
  Heads kt = concatSeq(pastK, k, "past_key");
  Heads vt = concatSeq(pastV, v, "past_value");
  const int64_t B = q.B, Hq = q.H, Sq = q.S, D = q.D, T = kt.S, Dv = vt.D, rep = q.H / k.H;

  Bias bias;
  bias.p = &p;
  bias.Sq = Sq;
  bias.hasPast = pastK != nullptr;
  bias.past = pastK ? pastK->dim(2) : 0;
  std::vector<int64_t> nonpad;
  if (c.has(6)) {
    const Tensor& np = c.in(6);
    AICC_CHECK(np.dtype() == DType::I64 && np.numel() == B,
               "nonpad_kv_seqlen must be int64 [{}], got {} {}", B, dtypeName(np.dtype()),
               formatDims(np.shape()));
    nonpad = np.toI64Vector();
    for (int64_t x : nonpad)
      AICC_CHECK(x >= 0 && x <= T, "nonpad_kv_seqlen value {} is out of [0, {}]", x, T);
    bias.nonpad = &nonpad;
  }
  if (c.has(3)) {
    const Tensor& m = c.in(3);
    AICC_CHECK(m.rank() >= 1 && m.rank() <= 4, "attn_mask must have rank 1 to 4, got {}",
               formatDims(m.shape()));
    AICC_CHECK(m.dtype() == DType::Bool || isFloat(m.dtype()) || isInteger(m.dtype()),
               "attn_mask has unsupported element type {}", dtypeName(m.dtype()));
    for (int64_t i = 0; i < m.rank(); ++i) bias.md[4 - m.rank() + i] = m.dim(i);
    const int64_t want[3] = {B, Hq, Sq};
    for (int i = 0; i < 3; ++i)
      AICC_CHECK(bias.md[i] == 1 || bias.md[i] == want[i],
                 "attn_mask {} does not broadcast to [{},{},{},{}]", formatDims(m.shape()), B, Hq,
                 Sq, T);
    AICC_CHECK(bias.md[3] <= T, "attn_mask {} is longer than the total sequence length {}",
               formatDims(m.shape()), T);
    bias.mask = &m;
    bias.boolMask = m.dtype() == DType::Bool;
    bias.mv = attn::toDoubles(m);
  }

  // sqrt(scale) in float as the function body computes it, then in the input type.
  float scaleF = n.attr("scale") ? n.attrFloat("scale") : 1.0f / std::sqrt(static_cast<float>(D));
  const double s = roundTo(p.t1, std::sqrt(scaleF));
  for (double& x : q.v) x = roundTo(p.t1, x * s);
  std::vector<double> ks(kt.v.size());
  for (size_t i = 0; i < ks.size(); ++i) ks[i] = roundTo(K.dtype(), kt.v[i] * s);

  std::vector<double> Y(static_cast<size_t>(B * Hq * Sq * Dv)), QK;
  const bool wantQK = c.wantOutput(3);
  if (wantQK) QK.resize(static_cast<size_t>(B * Hq * Sq * T));
  std::vector<double> row(static_cast<size_t>(T)), out(static_cast<size_t>(T)),
      y(static_cast<size_t>(Dv));
  const DType t1 = p.t1;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / rep;
      const double* kb = ks.data() + (b * k.H + kh) * T * D;
      const double* vb = vt.v.data() + (b * k.H + kh) * T * Dv;
      for (int64_t i = 0; i < Sq; ++i) {
        const double* qr = q.v.data() + ((b * Hq + h) * Sq + i) * D;
        double maxBias = kNegInf;
        for (int64_t j = 0; j < T; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < D; ++d) acc += qr[d] * kb[j * D + d];
          const double raw = roundTo(t1, acc);
          double x = raw;
          if (p.softcap > 0)
            x = roundTo(t1, roundTo(t1, std::tanh(roundTo(t1, x / p.softcap))) * p.softcap);
          const double bv = bias.at(b, h, i, j);
          maxBias = std::isnan(bv) || std::isnan(maxBias) ? std::numeric_limits<double>::quiet_NaN()
                                                          : std::max(maxBias, bv);
          row[static_cast<size_t>(j)] = roundTo(t1, x + bv);
          out[static_cast<size_t>(j)] = p.mode == 0   ? raw
                                        : p.mode == 1 ? x
                                                      : row[static_cast<size_t>(j)];
        }
        for (double& x : row) x = roundTo(p.sp, x);
        softmaxRow(row, p.sp);
        const bool masked = maxBias == kNegInf;
        for (double& x : row) x = masked ? 0.0 : roundTo(t1, x);
        if (wantQK) {
          double* qo = QK.data() + ((b * Hq + h) * Sq + i) * T;
          for (int64_t j = 0; j < T; ++j)
            qo[j] = p.mode == 3 ? row[static_cast<size_t>(j)] : out[static_cast<size_t>(j)];
        }
        std::fill(y.begin(), y.end(), 0.0);
        for (int64_t j = 0; j < T; ++j) {
          const double pj = row[static_cast<size_t>(j)];
          if (pj == 0) continue; // 0 * V = 0 (V may hold inf / NaN at masked positions)
          for (int64_t d = 0; d < Dv; ++d) y[static_cast<size_t>(d)] += pj * vb[j * Dv + d];
        }
        // Y in [B, H, S, Dv] order for 4-D, [B, S, H * Dv] for 3-D.
        for (int64_t d = 0; d < Dv; ++d) {
          size_t at = static_cast<size_t>(r == 4 ? ((b * Hq + h) * Sq + i) * Dv + d
                                                 : ((b * Sq + i) * Hq + h) * Dv + d);
          Y[at] = roundTo(t1, y[static_cast<size_t>(d)]);
        }
      }
    }
  std::vector<RValue> res;
  res.push_back(
      RValue::of(attn::fromDoubles(t1, r == 4 ? Dims{B, Hq, Sq, Dv} : Dims{B, Sq, Hq * Dv}, Y)));
  res.push_back(RValue::of(attn::fromDoubles(K.dtype(), {B, k.H, T, D}, kt.v)));
  res.push_back(RValue::of(attn::fromDoubles(V.dtype(), {B, k.H, T, Dv}, vt.v)));
  if (wantQK) res.push_back(RValue::of(attn::fromDoubles(t1, {B, Hq, Sq, T}, QK)));
  res.resize(c.numOutputs());
  return res;
}

void attentionInfer(InferCtx& c) {
  const Node& n = c.node;
  const DType t1 = c.inDType(0), t2 = c.inDType(2);
  const auto &qs = c.inShape(0), &ks = c.inShape(1), &vs = c.inShape(2);
  for (size_t i = 0; i < 4; ++i)
    c.setTensor(i, i == 2 ? t2 : i == 1 ? c.inDType(1) : t1, std::nullopt);
  if (!qs || !ks || !vs) return;
  const size_t r = qs->size();
  AICC_CHECK((r == 3 || r == 4) && ks->size() == r && vs->size() == r,
             "Q, K and V must all be 3-D or all 4-D, got {}, {} and {}", formatShape(*qs),
             formatShape(*ks), formatShape(*vs));
  Dim B = (*qs)[0], Hq, Sq, Hkv, Skv, Dq, Dk, Dv;
  if (r == 3) {
    AICC_CHECK(n.attr("q_num_heads") && n.attr("kv_num_heads"),
               "3-D inputs need the q_num_heads and kv_num_heads attributes");
    const int64_t hq = n.attrInt("q_num_heads"), hkv = n.attrInt("kv_num_heads");
    AICC_CHECK(hq > 0 && hkv > 0 && hq % hkv == 0,
               "q_num_heads {} must be a positive multiple of kv_num_heads {}", hq, hkv);
    Hq = Dim::known(hq), Hkv = Dim::known(hkv), Sq = (*qs)[1], Skv = (*ks)[1];
    Dq = attn::dimDiv((*qs)[2], hq), Dk = attn::dimDiv((*ks)[2], hkv),
    Dv = attn::dimDiv((*vs)[2], hkv);
  } else {
    Hq = (*qs)[1], Sq = (*qs)[2], Dq = (*qs)[3];
    Hkv = (*ks)[1], Skv = (*ks)[2], Dk = (*ks)[3], Dv = (*vs)[3];
    attn::checkSameDim(Hkv, (*vs)[1], "K and V head counts");
  }
  attn::checkSameDim(Dq, Dk, "Q and K head sizes");
  attn::checkSameDim(Skv, r == 3 ? (*vs)[1] : (*vs)[2], "K and V sequence lengths");
  if (Hq.isStatic() && Hkv.isStatic())
    AICC_CHECK(Hkv.value > 0 && Hq.value % Hkv.value == 0,
               "q_num_heads {} is not a multiple of kv_num_heads {}", Hq.value, Hkv.value);
  Dim past = Dim::known(0);
  if (c.has(4)) {
    const auto& ps = c.inShape(4);
    past = ps && ps->size() == 4 ? (*ps)[2] : Dim{};
  }
  Dim T = attn::dimAdd(past, Skv);
  if (r == 4)
    c.setTensor(0, t1, Shape{B, Hq, Sq, Dv});
  else
    c.setTensor(0, t1, Shape{B, Sq, Hq == Hkv ? (*vs)[2] : attn::dimMul(Dv, Hq.value)});
  c.setTensor(1, c.inDType(1), Shape{B, Hkv, T, Dk});
  c.setTensor(2, t2, Shape{B, Hkv, T, Dv});
  c.setTensor(3, t1, Shape{B, Hq, Sq, T});
}

} // namespace

void registerAttentionOps(OpRegistry& r) {
  r.op("Attention")
      .since(23)
      .inputs(3, 7)
      .outputs(1, 4)
      .attrInt("is_causal", 0)
      .attr("kv_num_heads", Attribute::Kind::Int)
      .attr("q_num_heads", Attribute::Kind::Int)
      .attrInt("qk_matmul_output_mode", 0)
      .attr("scale", Attribute::Kind::Float)
      .attrFloat("softcap", 0.0f)
      .attr("softmax_precision", Attribute::Kind::Int)
      .attrInt("left_window_size", -1)
      .attrInt("right_window_size", -1)
      .infer(attentionInfer)
      .kernel(attentionKernel);
  registerRopeOps(r);
  registerLinearAttentionOps(r);
  registerFlexAttentionOps(r);
}

} // namespace aicc
