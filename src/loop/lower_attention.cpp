// Attention (ai.onnx, opsets 23-25) as one call of the runtime's attention micro-kernel
// (kernels/attention.h):
//   @attention_<gemm desc>(Q, K, V, mask | 0, Y, B, Hq, Hkv, Sq, Skv, D, Dv, maskKind,
//       maskStrideB, maskStrideH, maskStrideI, maskStrideJ, causal, scale, softcap,
//       causalOffset, layout, qk | 0, qkMode)
// maskKind: 0 none, 1 additive f32, 2 bool; layout bit i: Q, K, V, Y [B, S, H * D] (the 3-D
// form, read in place) instead of [B, H, S, D]; qk: the qk_matmul_output at its mode's stage. With
// past_key / past_value, or present_key / present_value wanted, loop nests first write present =
// Concat(past, new) along the sequence
// ([B, Hkv, P + S, D], an output or a temporary) and the kernel reads it, masking causally from
// the past length on. Covered: f32, softcap, a mask up to the total key length; padding lengths
// (nonpad_kv_seqlen) and a mask shorter than the keys through an additive bias built first.
// Declined (the node falls back to the reference kernel): local windows, a softmax precision
// other than float.
#include "kernels/registry.h"
#include "loop/lower_ops.h"

#include <cmath>
#include <limits>

namespace aicc::loop::detail {

namespace {

// One of Q, K, V: its [B, H, S, D] extents, and whether it is the 3-D form [B, S, H * D].
struct Operand {
  int64_t B, H, S, D;
  bool seqMajor;
};

Operand operand(const Node& n, const Value* v, const char* what, int64_t heads) {
  Dims d = staticDims(v, what);
  if (d.size() == 4) return {d[0], d[1], d[2], d[3], false};
  if (d.size() != 3) no(std::string("Attention ") + what + " of rank " + std::to_string(d.size()));
  if (heads <= 0 || d[2] % heads != 0)
    no(n.describe() + ": a 3-D " + what + " needs q_num_heads / kv_num_heads dividing its width");
  return {d[0], heads, d[1], d[2] / heads, true};
}

// Loop nests writing present = Concat(past, cur) along the sequence into P ([B, H, T, D]).
Block concatPresent(FuncBuilder& b, const std::string& P, const std::string& past,
                    const Operand& cur, const std::string& curBuf, int64_t pastLen) {
  const int64_t T = pastLen + cur.S;
  std::string bv = b.loopVar("b"), hv = b.loopVar("h"), sv = b.loopVar("s"), dv = b.loopVar("d");
  ExprPtr bb = var(bv), hh = var(hv), ss = var(sv), dd = var(dv);
  auto at = [&](int64_t H, int64_t S, ExprPtr s) {
    return linearIndex({bb, hh, std::move(s), dd}, {H * S * cur.D, S * cur.D, cur.D, 1});
  };
  Block out;
  if (pastLen > 0)
    for (auto& s :
         nest({bv, hv, sv, dv}, {cur.B, cur.H, pastLen, cur.D},
              {Stmt::store(P, at(cur.H, T, ss), load(past, at(cur.H, pastLen, ss), DType::F32))}))
      out.push_back(std::move(s));
  ExprPtr src =
      cur.seqMajor ? linearIndex({bb, ss, hh, dd}, {cur.S * cur.H * cur.D, cur.H * cur.D, cur.D, 1})
                   : at(cur.H, cur.S, ss);
  for (auto& s : nest(
           {bv, hv, sv, dv}, {cur.B, cur.H, cur.S, cur.D},
           {Stmt::store(P, at(cur.H, T, add(ss, intImm(pastLen))), load(curBuf, src, DType::F32))}))
    out.push_back(std::move(s));
  return out;
}

// RotaryEmbedding (opset 23, f32): a loop nest over (b, s, h, k < rd / 2) rotating the pair
// (x1, x2) of each head (the halves of the rotary span, or adjacent features when interleaved)
// by the cache row of the token's position, x1' = c x1 - s x2, x2' = s x1 + c x2, each product
// and sum rounded to f32 as the reference does; features past the span are copied. position_ids
// come at run time: the runtime checks them against the cache length (@check_targets_i64: within
// [0, rows)), and the loads clamp.
std::optional<LoweredNode> lowerRotary(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  FuncBuilder b(n, name, "attention");
  const Value *x = n.inputs.at(0), *cv = n.inputs.at(1), *sv = n.inputs.at(2);
  for (const Value* v : std::initializer_list<const Value*>{x, cv, sv, n.outputs.at(0)})
    if (v->type.dtype != DType::F32) no("RotaryEmbedding is lowered for f32 only");
  const Dims xd = staticDims(x, "input"), cd = staticDims(cv, "cos_cache");
  if (staticDims(sv, "sin_cache") != cd) no("cos_cache and sin_cache differ");
  int64_t B = xd.at(0), S = 0, H = 0, hd = 0, sB = 0, sS = 0, sH = 0;
  if (xd.size() == 4) {
    H = xd[1], S = xd[2], hd = xd[3], sB = H * S * hd, sH = S * hd, sS = hd;
  } else if (xd.size() == 3) {
    H = n.attr("num_heads") ? n.attrInt("num_heads") : 0;
    if (H <= 0 || xd[2] % H != 0) no("a 3-D input needs num_heads dividing its width");
    S = xd[1], hd = xd[2] / H, sB = S * H * hd, sS = H * hd, sH = hd;
  } else {
    no("RotaryEmbedding input of rank " + std::to_string(xd.size()));
  }
  const int64_t rd = n.attrInt("rotary_embedding_dim") ? n.attrInt("rotary_embedding_dim") : hd;
  if (rd <= 0 || rd > hd || rd % 2)
    no("rotary_embedding_dim is not even and at most the head size");
  const int64_t half = rd / 2;
  const bool inter = n.attrInt("interleaved") != 0, pos = n.hasInput(3);
  if (pos ? (cd.size() != 2 || cd[1] != half ||
             staticDims(n.inputs[3], "position_ids") != Dims{B, S} ||
             n.inputs[3]->type.dtype != DType::I64)
          : cd != Dims{B, S, half})
    no("cache or position_ids shapes do not match the input");
  if (pos && !o.runtimeKernels) no("position_ids (checked at run time by the runtime only)");
  std::string Y = b.output(0), X = b.input(x), C = b.input(cv), Sn = b.input(sv);
  Block body;
  std::string P;
  if (pos) {
    P = b.input(n.inputs[3]);
    body = checkValuesBelow(P, DType::I64, B * S, cd[0], o);
  }
  std::string bv = b.loopVar("b"), s = b.loopVar("s"), h = b.loopVar("h"), k = b.loopVar("k");
  ExprPtr base =
      add(add(mul(var(bv), intImm(sB)), mul(var(s), intImm(sS))), mul(var(h), intImm(sH)));
  ExprPtr row = pos ? clampIndex(load(P, add(mul(var(bv), intImm(S)), var(s)), DType::I64), cd[0])
                    : add(mul(var(bv), intImm(S)), var(s));
  ExprPtr at = add(mul(row, intImm(half)), var(k));
  ExprPtr i1 = add(base, inter ? mul(var(k), intImm(2)) : var(k));
  ExprPtr i2 =
      add(base, inter ? add(mul(var(k), intImm(2)), intImm(1)) : add(var(k), intImm(half)));
  const DType f = DType::F32;
  ExprPtr x1 = load(X, i1, f), x2 = load(X, i2, f), c = load(C, at, f), sn = load(Sn, at, f);
  Block rot = {Stmt::store(Y, i1, sub(mul(c, x1), mul(sn, x2))),
               Stmt::store(Y, i2, add(mul(sn, x1), mul(c, x2)))};
  Block inner = nest({k}, {half}, std::move(rot), false);
  if (rd < hd) { // the features past the rotary span
    std::string d = b.loopVar("d");
    for (auto& st : nest({d}, {hd - rd},
                         {Stmt::store(Y, add(base, add(var(d), intImm(rd))),
                                      load(X, add(base, add(var(d), intImm(rd))), f))},
                         false))
      inner.push_back(std::move(st));
  }
  for (auto& st : nest({bv, s, h}, {B, S, H}, std::move(inner), true))
    body.push_back(std::move(st));
  Schedule sched;
  sched["interleaved"] = int64_t(inter);
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace

std::optional<LoweredNode> lowerAttentionFamily(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  if (n.domain.empty() && n.op == "RotaryEmbedding") return lowerRotary(n, name, o);
  if (!n.domain.empty() || n.op != "Attention") return std::nullopt;
  if (!o.runtimeKernels) no("Attention is lowered only to the runtime's micro-kernel");
  const bool padded = n.hasInput(6);
  if (padded && n.hasInput(4)) no("Attention with both nonpad_kv_seqlen and a past");
  if (n.hasInput(4) != n.hasInput(5)) no("Attention with only one of past_key / past_value");
  if (n.attrInt("left_window_size") != -1 || n.attrInt("right_window_size") != -1)
    no("Attention with a local window");
  if (n.attr("softmax_precision") && n.attrInt("softmax_precision") != 1)
    no("Attention with a softmax precision other than float");
  const Value *q = n.inputs.at(0), *k = n.inputs.at(1), *v = n.inputs.at(2);
  const bool past = n.hasInput(4);
  std::vector<const Value*> fl = {q, k, v, n.outputs[0]};
  if (past) fl.insert(fl.end(), {n.inputs[4], n.inputs[5]});
  for (size_t i = 1; i < n.outputs.size() && i < 3; ++i)
    if (n.outputs[i]) fl.push_back(n.outputs[i]);
  for (const Value* x : fl)
    if (x->type.dtype != DType::F32) no("Attention is lowered for f32 only");
  const int64_t qHeads = n.attr("q_num_heads") ? n.attrInt("q_num_heads") : 0,
                kvHeads = n.attr("kv_num_heads") ? n.attrInt("kv_num_heads") : 0;
  const Operand Q = operand(n, q, "Q", qHeads), K = operand(n, k, "K", kvHeads),
                V = operand(n, v, "V", kvHeads);
  const int64_t B = Q.B, Hq = Q.H, Sq = Q.S, D = Q.D, Hkv = K.H, Dv = V.D;
  if (K.B != B || V.B != B || K.D != D || V.H != Hkv || V.S != K.S || Hkv <= 0 || Hq % Hkv != 0)
    no("Attention operands do not match");
  int64_t pastLen = 0;
  if (past) {
    const Dims pk = staticDims(n.inputs[4], "past_key"), pv = staticDims(n.inputs[5], "past_value");
    if (pk.size() != 4 || pv.size() != 4 || pk != Dims{B, Hkv, pk[2], D} ||
        pv != Dims{B, Hkv, pk[2], Dv})
      no("past_key / past_value do not match K / V");
    pastLen = pk[2];
  }
  const int64_t Skv = pastLen + K.S; // the total key length
  // Symbolic sequence lengths and batch (LowerOptions::runDim): the run's, with a mask of the
  // run's sizes (its strides too, below) but no past, present, padding or scores output (their
  // sizes follow the lengths); heads and head size static.
  auto runDim = [&](const Value* x, size_t d) { return o.runDim ? o.runDim(x, d) : nullptr; };
  const ExprPtr SqRun = runDim(q, Q.seqMajor ? 1 : 2), SkRun = runDim(k, K.seqMajor ? 1 : 2),
                BRun = runDim(q, 0);
  if (SqRun || SkRun || BRun || runDim(v, V.seqMajor ? 1 : 2)) {
    const bool plain = !past && n.outputs.size() == 1 && !padded;
    if (!plain) no("Attention with symbolic lengths and a past, present, padding or scores output");
    for (const Value* x : {q, k, v, static_cast<const Value*>(n.outputs[0])})
      for (size_t d = 0; d < x->type.shape->size(); ++d)
        if (runDim(x, d) && d != 0 && d != (x->type.shape->size() == 4 ? 2u : 1u))
          no("Attention with a symbolic dim other than the batch and sequence length");
    // One symbol each: K's and V's lengths, the batch of all four, Q's and Y's lengths.
    const Value* y = n.outputs[0];
    auto same = [](const ExprPtr& a, const ExprPtr& c) { return a ? c && equal(a, c) : !c; };
    if (!same(SkRun, runDim(v, V.seqMajor ? 1 : 2)) ||
        !same(SqRun, runDim(y, Q.seqMajor ? 1 : 2)) || !same(BRun, runDim(k, 0)) ||
        !same(BRun, runDim(v, 0)) || !same(BRun, runDim(y, 0)))
      no("Attention operands of different symbolic sizes");
  }
  FuncBuilder b(n, name, "attention");
  std::string Y = b.output(0);
  std::string Qb = b.input(q), Kb = b.input(k), Vb = b.input(v);
  // present_key / present_value: outputs when wanted, else (with a past) temporaries.
  Block body;
  bool kSeqMajor = K.seqMajor, vSeqMajor = V.seqMajor;
  const bool present =
      past || (n.outputs.size() > 1 && n.outputs[1]) || (n.outputs.size() > 2 && n.outputs[2]);
  if (present) {
    auto presentBuf = [&](size_t out, const char* tmp, const Operand& cur, const std::string& curB,
                          size_t pastIn) {
      const std::string P = n.outputs.size() > out && n.outputs[out]
                                ? b.output(out)
                                : b.temp(tmp, DType::F32, {B, Hkv, Skv, cur.D});
      for (auto& s : concatPresent(b, P, past ? b.input(n.inputs[pastIn]) : "", cur, curB, pastLen))
        body.push_back(std::move(s));
      return P;
    };
    Kb = presentBuf(1, "present_key", K, Kb, 4);
    Vb = presentBuf(2, "present_value", V, Vb, 5);
    kSeqMajor = vSeqMajor = false;
  }
  int64_t maskKind = 0, causal = n.attrInt("is_causal") != 0 ? 1 : 0;
  std::vector<int64_t> st(4, 0);
  CallArg mask{"", nullptr, intImm(0)};
  Dims md; // the mask's dims as [B, H, Sq, keys] (1 where it broadcasts)
  if (n.hasInput(3)) {
    const Value* m = n.inputs[3];
    md = staticDims(m, "attn_mask");
    if (md.empty() || md.size() > 4 || md.back() > Skv) no("an attn_mask longer than the keys");
    if (m->type.dtype == DType::F32)
      maskKind = 1;
    else if (m->type.dtype == DType::Bool)
      maskKind = 2;
    else
      no("an attn_mask of type " + std::string(dtypeName(m->type.dtype)));
    const int64_t want[4] = {B, Hq, Sq, Skv};
    std::vector<int64_t> s = strides(md);
    for (size_t i = 0; i + 1 < md.size(); ++i) {
      size_t d = 4 - md.size() + i;
      if (md[i] != 1 && md[i] != want[d]) no("an attn_mask that does not broadcast");
      st[d] = md[i] == 1 ? 0 : s[i];
    }
    st[3] = 1;
    md.insert(md.begin(), 4 - md.size(), 1);
    mask = bufferArg(b.input(m));
  }
  // A mask under symbolic sizes: each dim 1 (broadcast) or the run's B / Sq / Skv, the last one
  // the key length; its strides from its run dims.
  std::vector<ExprPtr> runSt;
  if (maskKind && (BRun || SqRun || SkRun)) {
    const Value* m = n.inputs[3];
    const Dims mdd = staticDims(m, "attn_mask");
    const std::vector<ExprPtr> mr = runDims(o, m, mdd), ms = stridesOf(mr);
    const ExprPtr want[4] = {BRun ? BRun : intImm(B), intImm(Hq), SqRun ? SqRun : intImm(Sq),
                             SkRun ? SkRun : intImm(Skv)};
    runSt.assign(4, intImm(0));
    for (size_t i = 0; i < mdd.size(); ++i) {
      const size_t d = 4 - mdd.size() + i;
      // (the last dim is never broadcast: a shorter mask disallows the keys past it)
      const bool one = d != 3 && isImm(mr[i]) && mdd[i] == 1;
      if (!one && !equal(mr[i], want[d]))
        no("an attn_mask that does not follow the symbolic sizes");
      if (!one) runSt[d] = ms[i];
    }
  }
  if (padded || (maskKind && md[3] < Skv)) {
    if (!runSt.empty()) no("a short mask with symbolic sizes");
    // Padding lengths, or a mask shorter than the keys (the keys past it disallowed): one
    // additive f32 bias [B, H | 1, Sq, Skv] built first, as the reference's: the mask (bool:
    // 0 / -inf), -inf past the mask, past key nonpad_kv_seqlen[b], and causally from
    // nonpad_kv_seqlen[b] - Sq on (then not the kernel's causal mask).
    const int64_t Hm = md.empty() ? 1 : md[1];
    const std::string bias = b.temp("attn_bias", DType::F32, {B, Hm, Sq, Skv});
    const std::string bv = b.loopVar("b"), hv = b.loopVar("h"), iv = b.loopVar("i"),
                      jv = b.loopVar("j");
    const ExprPtr bb = var(bv), hh = var(hv), ii = var(iv), jj = var(jv);
    const ExprPtr ninf = constant(DType::F32, -std::numeric_limits<double>::infinity()),
                  zero = constant(DType::F32, 0);
    ExprPtr v = zero;
    if (maskKind) {
      const ExprPtr at = linearIndex({bb, hh, ii, min(jj, intImm(md[3] - 1))}, st);
      const ExprPtr mv = maskKind == 1 ? load(mask.buffer, at, DType::F32)
                                       : select(load(mask.buffer, at, DType::Bool), zero, ninf);
      v = select(cmp(Op::Lt, jj, intImm(md[3])), mv, ninf);
    }
    if (padded) {
      const Value* np = n.inputs[6];
      if (staticDims(np, "nonpad_kv_seqlen") != Dims{B} || np->type.dtype != DType::I64)
        no("nonpad_kv_seqlen not i64 [batch]");
      const ExprPtr len = load(b.input(np), bb, DType::I64);
      v = add(v, select(cmp(Op::Ge, jj, len), ninf, zero));
      if (causal) v = add(v, select(cmp(Op::Lt, add(ii, sub(len, intImm(Sq))), jj), ninf, zero));
      causal = 0;
    }
    for (auto& s : nest({bv, hv, iv, jv}, {B, Hm, Sq, Skv},
                        {Stmt::store(bias, linearIndex({bb, hh, ii, jj}, strides({B, Hm, Sq, Skv})),
                                     v)}))
      body.push_back(std::move(s));
    maskKind = 1;
    st = {Hm * Sq * Skv, Hm == 1 ? 0 : Sq * Skv, Skv, 1};
    mask = bufferArg(bias);
  }
  const float scale = n.attr("scale") ? n.attrFloat("scale") : 1.0f / std::sqrt(float(D));
  const float softcap = n.attrFloat("softcap");
  // --precision bf16: both products on the bf16 kernel (not with the scores as an output, which
  // stay the f32 products).
  const bool qk = n.outputs.size() > 3 && n.outputs[3];
  const auto* bk =
      o.bf16 && !qk ? kernels::bestKernel(kernels::KernelOp::GemmBf16, o.kernelIsa) : nullptr;
  const auto& gk = bk ? *bk : kernels::defaultKernel(kernels::KernelOp::Gemm, o.kernelIsa);
  std::vector<CallArg> args = {bufferArg(Qb), bufferArg(Kb), bufferArg(Vb), mask, bufferArg(Y)};
  for (int64_t x : {B, Hq, Hkv, Sq, Skv, D, Dv, maskKind, st[0], st[1], st[2], st[3], causal})
    args.push_back(intArg(x));
  if (BRun) args[5].value = BRun; // B, Sq, Skv: the run's
  if (SqRun) args[8].value = SqRun;
  if (SkRun) args[9].value = SkRun;
  for (size_t d = 0; d < runSt.size(); ++d) args[13 + d].value = runSt[d]; // (the mask's strides)
  args.push_back(CallArg{"", nullptr, floatImm(scale, DType::F32)});
  args.push_back(CallArg{"", nullptr, floatImm(softcap > 0 ? softcap : 0.0f, DType::F32)});
  const int64_t layout = int64_t(Q.seqMajor) | int64_t(kSeqMajor) << 1 | int64_t(vSeqMajor) << 2 |
                         int64_t(Q.seqMajor) << 3;
  args.push_back(intArg(pastLen));
  args.push_back(intArg(layout));
  if (qk && n.outputs[3]->type.dtype != DType::F32) no("Attention is lowered for f32 only");
  const int64_t qkMode = n.attr("qk_matmul_output_mode") ? n.attrInt("qk_matmul_output_mode") : 0;
  if (qk && (qkMode < 0 || qkMode > 3)) no("Attention with an unknown qk_matmul_output_mode");
  args.push_back(qk ? bufferArg(b.output(3)) : intArg(0));
  args.push_back(intArg(qkMode));
  body.push_back(Stmt::callKernel(std::string("attention_") + gk.name, args));
  Schedule sched;
  markKernel(sched, gk.name);
  sched["parallel"] = std::vector<std::string>{"batch*heads"};
  if (present) sched["present"] = std::string("concat(past, new) by loop nests");
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace aicc::loop::detail
