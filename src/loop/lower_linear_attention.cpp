// CausalConvWithState and LinearAttention (opset 27; ops/attention_linear.cpp defines them) as
// loop nests, f32, in the reference's arithmetic:
//   - CausalConvWithState: each output position sums its k taps over past_state ++ input in
//     double (bias first, taps in order), rounds to f32, then SiLU in double; present_state is
//     the last k - 1 positions of past_state ++ input.
//   - LinearAttention: the recurrence over time with the state in present_state itself (copied
//     from past_state, or zeros), f32 as the reference: per kv head the decay (exp, per head or
//     per key feature), the delta rule's correction v - S^T k scaled by beta, the update
//     S += k v^T; then each query head reads its kv head's state, out = scale * q^T S.
// Batch and length / time may be symbolic (the run's).
#include "loop/lower_ops.h"

#include <cmath>

namespace aicc::loop::detail {

namespace {

std::optional<LoweredNode> lowerCausalConv(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  FuncBuilder b(n, name, "rnn");
  const Dims xd = staticDims(n.inputs.at(0), "input"), wd = staticDims(n.inputs.at(1), "weight");
  for (const Value* v : n.inputs)
    if (v && v->type.dtype != DType::F32) no("CausalConvWithState is lowered for f32");
  const std::string act = n.attrString("activation");
  if (act != "none" && act != "silu" && act != "swish") no("activation '" + act + "'");
  if (xd.size() != 3 || wd.size() != 3 || wd[0] != xd[1] || wd[1] != 1 || wd[2] < 1)
    no("input [batch, channels, length] and weight [channels, 1, k]");
  const int64_t C = xd[1], K = wd[2];
  const std::vector<ExprPtr> xr = runDims(o, n.inputs[0], xd);
  for (size_t i = 3; i < n.inputs.size(); ++i) // (past_state [batch, channels, k - 1])
    if (n.hasInput(i)) runDims(o, n.inputs[i], staticDims(n.inputs[i], "past_state"));
  for (const Value* v : n.outputs)
    if (v) runDims(o, v, staticDims(v, "result"));
  const ExprPtr B = xr[0], L = xr[2];
  const std::string x = b.input(n.inputs[0]), w = b.input(n.inputs[1]),
                    bias = n.hasInput(2) ? b.input(n.inputs[2]) : "",
                    past = n.hasInput(3) && K > 1 ? b.input(n.inputs[3]) : "";
  const std::string bv = b.fresh("b"), cv = b.fresh("c"), iv = b.fresh("i"), jv = b.fresh("j"),
                    acc = b.temp("acc", DType::F64, {1});
  const ExprPtr bc = add(mul(var(bv), intImm(C)), var(cv));
  // Position p of past_state ++ input (p < k - 1 + L).
  auto padded = [&](const ExprPtr& p) {
    const ExprPtr fromX =
        load(x, add(mul(bc, L), max(sub(p, intImm(K - 1)), intImm(0))), DType::F32);
    if (K == 1) return cast(DType::F64, fromX);
    const ExprPtr fromPast =
        past.empty() ? floatImm(0, DType::F32)
                     : load(past, add(mul(bc, intImm(K - 1)), min(p, intImm(K - 2))), DType::F32);
    return cast(DType::F64, select(cmp(Op::Lt, p, intImm(K - 1)), fromPast, fromX));
  };
  const ExprPtr a = load(acc, intImm(0), DType::F64);
  Block point = {
      Stmt::store(acc, intImm(0),
                  bias.empty() ? floatImm(0, DType::F64)
                               : cast(DType::F64, load(bias, var(cv), DType::F32))),
      Stmt::forLoop(
          jv, intImm(0), intImm(K),
          {Stmt::store(acc, intImm(0),
                       add(a, mul(cast(DType::F64,
                                       load(w, add(mul(var(cv), intImm(K)), var(jv)), DType::F32)),
                                  padded(add(var(iv), var(jv))))))})};
  ExprPtr y = cast(DType::F32, a);
  if (act != "none") { // v / (1 + exp(-v)) in double, v rounded to f32
    const ExprPtr v = cast(DType::F64, y);
    y = cast(DType::F32, div(v, add(floatImm(1, DType::F64), call("exp", {neg(v)}))));
  }
  point.push_back(Stmt::store(b.output(0), add(mul(bc, L), var(iv)), y));
  Block channel = {Stmt::forLoop(iv, intImm(0), L, std::move(point))};
  if (n.outputs.size() > 1 && n.outputs[1] && K > 1)
    channel.push_back(Stmt::forLoop(iv, intImm(0), intImm(K - 1),
                                    {Stmt::store(b.output(1), add(mul(bc, intImm(K - 1)), var(iv)),
                                                 cast(DType::F32, padded(add(L, var(iv)))))}));
  Block body = {Stmt::forLoop(bv, intImm(0), B,
                              {Stmt::forLoop(cv, intImm(0), intImm(C), std::move(channel))})};
  return b.finish(std::move(body), {}, o);
}

std::optional<LoweredNode> lowerLinearAttention(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  FuncBuilder b(n, name, "rnn");
  for (const Value* v : n.inputs)
    if (v && v->type.dtype != DType::F32) no("LinearAttention is lowered for f32");
  const std::string rule = n.attrString("update_rule");
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (!gating && !delta && rule != "linear") no("update_rule '" + rule + "'");
  if (gating != n.hasInput(4) || delta != n.hasInput(5)) no("decay / beta not as the rule says");
  const int64_t Hq = n.attrInt("q_num_heads"), Hkv = n.attrInt("kv_num_heads");
  if (Hq < 1 || Hkv < 1 || Hq % Hkv) no("q_num_heads not a multiple of kv_num_heads");
  const Dims qd = staticDims(n.inputs.at(0), "query"), kd = staticDims(n.inputs.at(1), "key"),
             vd = staticDims(n.inputs.at(2), "value");
  if (qd.size() != 3 || kd.size() != 3 || vd.size() != 3 || qd[2] % Hq || vd[2] % Hkv ||
      kd[2] != Hkv * (qd[2] / Hq))
    no("query, key and value that do not agree");
  const int64_t dk = qd[2] / Hq, dv = vd[2] / Hkv, G = Hq / Hkv;
  if (!n.outputs.at(0) || n.outputs.size() < 2 || !n.outputs[1])
    no("LinearAttention without both results");
  int64_t gd = 0, Hb = 0;
  if (gating) {
    const Dims dd = staticDims(n.inputs[4], "decay");
    if (dd.size() != 3 || (dd[2] != Hkv && dd[2] != Hkv * dk)) no("decay of another shape");
    gd = dd[2] / Hkv;
  }
  if (delta) {
    const Dims bd = staticDims(n.inputs[5], "beta");
    if (bd.size() != 3 || (bd[2] != Hkv && bd[2] != 1)) no("beta of another shape");
    Hb = bd[2];
  }
  const std::vector<ExprPtr> qr = runDims(o, n.inputs[0], qd);
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.hasInput(i)) runDims(o, n.inputs[i], staticDims(n.inputs[i], "input"));
  for (const Value* v : n.outputs)
    if (v) runDims(o, v, staticDims(v, "result"));
  const ExprPtr B = qr[0], T = qr[1];
  const float sc = n.attrFloat("scale");
  const float scale = sc == 0.0f ? static_cast<float>(1.0 / std::sqrt(double(dk))) : sc;
  const std::string q = b.input(n.inputs[0]), k = b.input(n.inputs[1]), v = b.input(n.inputs[2]),
                    out = b.output(0), S = b.output(1), vt = b.temp("v_t", DType::F32, {dv}),
                    acc = b.temp("acc", DType::F32, {1});
  const std::string bv = b.fresh("b"), tv = b.fresh("t"), hv = b.fresh("h"), dvv = b.fresh("d"),
                    mv = b.fresh("m"), iv = b.fresh("i");
  const ExprPtr bi = var(bv), t = var(tv), h = var(hv), d = var(dvv), m = var(mv);
  const ExprPtr bt = add(mul(bi, T), t); // (b, t)
  auto at = [&](const std::string& buf, int64_t heads, int64_t size, const ExprPtr& head,
                const ExprPtr& e) {
    return load(buf, add(mul(add(mul(bt, intImm(heads)), head), intImm(size)), e), DType::F32);
  };
  // State element (d, m) of kv head `head` of batch b.
  auto state = [&](const ExprPtr& head, const ExprPtr& dd, const ExprPtr& mm) {
    return add(mul(add(mul(add(mul(bi, intImm(Hkv)), head), intImm(dk)), dd), intImm(dv)), mm);
  };
  const ExprPtr a = load(acc, intImm(0), DType::F32);
  // The state: past_state, or zeros.
  const ExprPtr states = mul(B, intImm(Hkv * dk * dv));
  Block body = {
      Stmt::forLoop(iv, intImm(0), states,
                    {Stmt::store(S, var(iv),
                                 n.hasInput(3) ? load(b.input(n.inputs[3]), var(iv), DType::F32)
                                               : floatImm(0))})};
  Block kvHead;
  if (gating) {
    const ExprPtr g = load(
        b.input(n.inputs[4]),
        add(mul(add(mul(bt, intImm(Hkv)), h), intImm(gd)), gd == 1 ? intImm(0) : d), DType::F32);
    kvHead.push_back(Stmt::forLoop(
        dvv, intImm(0), intImm(dk),
        {Stmt::forLoop(
            mv, intImm(0), intImm(dv),
            {Stmt::store(S, state(h, d, m),
                         mul(load(S, state(h, d, m), DType::F32), call("exp", {g})))})}));
  }
  if (delta) { // v_t = beta * (v - S^T k)
    const ExprPtr beta =
        load(b.input(n.inputs[5]), add(mul(bt, intImm(Hb)), Hb == 1 ? intImm(0) : h), DType::F32);
    kvHead.push_back(Stmt::forLoop(
        mv, intImm(0), intImm(dv),
        {Stmt::store(acc, intImm(0), floatImm(0)),
         Stmt::forLoop(
             dvv, intImm(0), intImm(dk),
             {Stmt::store(acc, intImm(0),
                          add(a, mul(load(S, state(h, d, m), DType::F32), at(k, Hkv, dk, h, d))))}),
         Stmt::store(vt, m, mul(beta, sub(at(v, Hkv, dv, h, m), a)))}));
  } else {
    kvHead.push_back(
        Stmt::forLoop(mv, intImm(0), intImm(dv), {Stmt::store(vt, m, at(v, Hkv, dv, h, m))}));
  }
  kvHead.push_back(Stmt::forLoop(
      dvv, intImm(0), intImm(dk),
      {Stmt::forLoop(mv, intImm(0), intImm(dv),
                     {Stmt::store(S, state(h, d, m),
                                  add(load(S, state(h, d, m), DType::F32),
                                      mul(at(k, Hkv, dk, h, d), load(vt, m, DType::F32))))})}));
  const ExprPtr kvOf = div(h, intImm(G));
  Block qHead = {Stmt::forLoop(
      mv, intImm(0), intImm(dv),
      {Stmt::store(acc, intImm(0), floatImm(0)),
       Stmt::forLoop(
           dvv, intImm(0), intImm(dk),
           {Stmt::store(acc, intImm(0),
                        add(a, mul(at(q, Hq, dk, h, d), load(S, state(kvOf, d, m), DType::F32))))}),
       Stmt::store(out, add(mul(add(mul(bt, intImm(Hq)), h), intImm(dv)), m),
                   mul(floatImm(scale), a))})};
  body.push_back(
      Stmt::forLoop(bv, intImm(0), B,
                    {Stmt::forLoop(tv, intImm(0), T,
                                   {Stmt::forLoop(hv, intImm(0), intImm(Hkv), std::move(kvHead)),
                                    Stmt::forLoop(hv, intImm(0), intImm(Hq), std::move(qHead))})}));
  Schedule sch;
  sch["update_rule"] = rule;
  return b.finish(std::move(body), std::move(sch), o);
}

} // namespace

std::optional<LoweredNode> lowerLinearAttentionFamily(const Node& n, const std::string& name,
                                                      const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "CausalConvWithState") return lowerCausalConv(n, name, o);
  if (n.op == "LinearAttention") return lowerLinearAttention(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
