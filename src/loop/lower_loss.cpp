// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (src/ops/loss.cpp defines them) as loop
// nests over x [N, C, D...] (D: the trailing dims flattened) and targets [N, D...]:
//   - SoftmaxCrossEntropyLoss first takes the log-softmax along C, in f64 as the reference (into
//     `log_prob` when it is asked for, else a temp);
//   - per target: w = weight[t] (1 without weights, 0 where t == ignore_index) and the loss
//     -w * x[n, t, d] (0 where ignored);
//   - reduction none stores each loss; sum / mean accumulate loss and w in f64 (mean = sum / sum
//     of w, NaN when every target is ignored, as the reference).
// Targets outside [0, C) (and not ignored) are the run's error (@check_targets_*, naming the
// value and its index as the reference does); the gathers clamp, so they never read outside x.
#include "loop/lower_ops.h"

#include <cmath>
#include <limits>

namespace aicc::loop::detail {

namespace {

std::optional<LoweredNode> lowerLoss(const Node& n, const std::string& name,
                                     const LowerOptions& o) {
  const bool softmax = n.op == "SoftmaxCrossEntropyLoss";
  FuncBuilder b(n, name, "loss");
  const Value *xv = n.inputs.at(0), *tv = n.inputs.at(1);
  const Value* wv = n.hasInput(2) ? n.inputs[2] : nullptr;
  const DType t = xv->type.dtype, it = tv->type.dtype, f64 = DType::F64;
  if (t != DType::F32 && t != DType::F64) no("the scores must be f32 or f64");
  if (it != DType::I64 && it != DType::I32) no("the targets must be int32 or int64");
  if (wv && wv->type.dtype != t) no("the weight's type differs from the scores'");
  const Dims xd = staticDims(xv, "scores"), td = staticDims(tv, "targets");
  if (xd.size() < 2) no("scores of rank < 2");
  if (td.size() + 1 != xd.size() || td[0] != xd[0] ||
      !std::equal(td.begin() + 1, td.end(), xd.begin() + 2) || xd[1] == 0)
    no("targets that do not match the scores");
  // Symbolic sizes: N, C and D the run's (the targets and results at their run dims, checked to
  // be the scores' [N, D...]); temps at the bounds.
  const std::vector<ExprPtr> xr = runDims(o, xv, xd), tr = runDims(o, tv, td);
  const ExprPtr N = xr[0], C = xr[1], D = product(xr, 2);
  std::vector<ExprPtr> want = {N};
  want.insert(want.end(), xr.begin() + 2, xr.end());
  if (!equalDims(tr, want))
    no("targets whose dims are not the scores' [N, D...] at the run's sizes");
  if (wv && !equalDims(runDims(o, wv, staticDims(wv, "weight")), {C}))
    no("a weight that is not one value per class");
  const std::string red = n.attrString("reduction");
  if (red != "none" && red != "sum" && red != "mean") no("reduction '" + red + "'");
  if (red == "none" && !equalDims(runDims(o, n.outputs[0], td), want))
    no("a loss whose dims are not the targets'");
  const bool wantLp = softmax && n.outputs.size() > 1 && n.outputs[1];
  if (wantLp && !equalDims(runDims(o, n.outputs[1], xd), xr)) no("log_prob of other dims than x");
  const bool hasIgnore = n.attr("ignore_index") != nullptr;
  const int64_t ignore = hasIgnore ? n.attrInt("ignore_index") : 0;

  std::string out = b.output(0), X = b.input(xv), T = b.input(tv);
  std::string W = wv ? b.input(wv) : "";
  // The reference's range check (the C bundle has no error path: clamped).
  Block body = checkValuesBelow(T, it, mul(N, D), C, o,
                                hasIgnore ? std::optional<int64_t>(ignore) : std::nullopt);

  // The scores the losses read: x, or its log-softmax along C (f64).
  std::string S = X;
  DType st = t;
  if (softmax) {
    std::string lp = b.temp("log_prob", f64, {numel(xd)});
    std::string mx = b.temp("rowmax", f64, {1}), sm = b.temp("rowsum", f64, {1});
    std::string iv = b.fresh("i"), kv = b.fresh("k"), j1 = b.fresh("j"), j2 = b.fresh("j"),
                j3 = b.fresh("j");
    auto at = [&](const std::string& j) {
      return add(mul(add(mul(var(iv), C), var(j)), D), var(kv));
    };
    auto xa = [&](const std::string& j) { return cast(f64, load(X, at(j), t)); };
    ExprPtr m = load(mx, intImm(0), f64), s = load(sm, intImm(0), f64);
    Block row = {
        Stmt::store(mx, intImm(0), constant(f64, -std::numeric_limits<double>::infinity())),
        Stmt::store(sm, intImm(0), constant(f64, 0))};
    for (auto& x : runNest({j1}, {C}, {Stmt::store(mx, intImm(0), max(m, xa(j1)))}, false))
      row.push_back(std::move(x));
    for (auto& x : runNest(
             {j2}, {C}, {Stmt::store(sm, intImm(0), add(s, call("exp", {sub(xa(j2), m)})))}, false))
      row.push_back(std::move(x));
    ExprPtr v = sub(xa(j3), add(m, call("log", {s})));
    Block put = {Stmt::store(lp, at(j3), v)};
    if (wantLp) put.push_back(Stmt::store(b.output(1), at(j3), cast(t, v)));
    for (auto& x : runNest({j3}, {C}, std::move(put), false)) row.push_back(std::move(x));
    for (auto& x : runNest({iv, kv}, {N, D}, std::move(row), false)) body.push_back(std::move(x));
    S = lp, st = f64;
  }

  // Per target: the weight and the loss (serial: sum / mean accumulate).
  std::string iv = b.fresh("n"), kv = b.fresh("d"), tl = b.fresh("t"), wl = b.fresh("w");
  ExprPtr ti = add(mul(var(iv), D), var(kv));
  ExprPtr target = load(T, ti, it);
  if (it != DType::I64) target = cast(DType::I64, target);
  ExprPtr ignored = hasIgnore ? cmp(Op::Eq, target, intImm(ignore)) : nullptr;
  ExprPtr clamped = clampIndex(target, C);
  Block elem = {Stmt::let(tl, clamped)};
  ExprPtr tc = var(tl, DType::I64);
  ExprPtr w = W.empty() ? constant(t, 1) : load(W, tc, t);
  if (ignored) w = select(ignored, constant(t, 0), w);
  elem.push_back(Stmt::let(wl, w));
  ExprPtr wvar = var(wl, t);
  ExprPtr xs = load(S, add(mul(add(mul(var(iv), C), tc), D), var(kv)), st);
  ExprPtr loss = neg(mul(cast(st, wvar), xs));
  if (ignored) loss = select(ignored, constant(st, 0), loss);
  std::string sum, wsum;
  if (red == "none") {
    elem.push_back(Stmt::store(out, ti, cast(t, loss)));
  } else {
    sum = b.temp("sum", f64, {1}), wsum = b.temp("wsum", f64, {1});
    body.push_back(Stmt::store(sum, intImm(0), constant(f64, 0)));
    body.push_back(Stmt::store(wsum, intImm(0), constant(f64, 0)));
    elem.push_back(Stmt::store(sum, intImm(0), add(load(sum, intImm(0), f64), cast(f64, loss))));
    elem.push_back(Stmt::store(wsum, intImm(0), add(load(wsum, intImm(0), f64), cast(f64, wvar))));
  }
  for (auto& x : runNest({iv, kv}, {N, D}, std::move(elem), false)) body.push_back(std::move(x));
  if (red == "sum") body.push_back(Stmt::store(out, intImm(0), cast(t, load(sum, intImm(0), f64))));
  if (red == "mean")
    body.push_back(Stmt::store(
        out, intImm(0), cast(t, div(load(sum, intImm(0), f64), load(wsum, intImm(0), f64)))));
  Schedule sched;
  sched["reduction"] = red;
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace

std::optional<LoweredNode> lowerLossFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  if (!n.domain.empty() ||
      (n.op != "NegativeLogLikelihoodLoss" && n.op != "SoftmaxCrossEntropyLoss"))
    return std::nullopt;
  return lowerLoss(n, name, o);
}

} // namespace aicc::loop::detail
