// Ops along one axis as loop nests (the reference kernels' semantics): Hardmax and
// LpNormalization, CumSum / CumProd (the axis constant or given at run time), TopK (K checked at
// run time against the declared output shape), LRN (a window along the channels).
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

// Hardmax (1 at the first maximum along `axis`, as the reference picks it: the first element,
// then any strictly greater one) and LpNormalization (x / (sum |x| or sqrt(sum x^2)), 0 where the
// norm is 0): a pass over the axis into a per-row temp, then a pass writing the output.
std::optional<LoweredNode> lowerAxisNormalize(const Node& n, FuncBuilder& b,
                                              const LowerOptions& o) {
  b.setKind("softmax");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  const DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.empty()) no("a float input of rank >= 1 is needed");
  const size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  const Split3 s = split3(id, axis, axis + 1); // at the bounds
  if (s.len == 0) no("an empty axis");
  // Symbolic sizes: the rows and the axis are the run's (the result is the input's shape).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  if (!sameRunDims(id, runDims(o, n.outputs[0], id), ir))
    no("a result whose dims are not the input's");
  const ExprPtr outer = product(ir, 0, axis), len = ir[axis], inner = product(ir, axis + 1);
  const bool hard = n.op == "Hardmax";
  const int64_t p = hard ? 0 : n.attrInt("p");
  if (!hard && p != 1 && p != 2) no("LpNormalization with p other than 1 or 2");
  std::string in = b.input(n.inputs[0]);
  std::string acc = b.temp(hard ? "best" : "norm", t, {s.outer * s.inner});
  std::string arg = hard ? b.temp("arg", DType::I64, {s.outer * s.inner}) : "";
  std::string ov = b.fresh("o"), iv = b.fresh("i"), a1 = b.fresh("a"), a2 = b.fresh("a");
  ExprPtr row = add(mul(var(ov), inner), var(iv));
  auto at = [&](ExprPtr j) {
    return add(add(mul(var(ov), mul(len, inner)), mul(j, inner)), var(iv));
  };
  ExprPtr x = load(in, at(var(a1)), t), m = load(acc, row, t);
  Block body;
  if (hard) {
    body = {Stmt::store(acc, row, load(in, at(intImm(0)), t)),
            Stmt::store(arg, row, intImm(0, DType::I64))};
    ExprPtr better = cmp(Op::Gt, x, m);
    for (auto& st : runNest(
             {a1}, {len},
             {Stmt::store(arg, row,
                          select(better, cast(DType::I64, var(a1)), load(arg, row, DType::I64))),
              Stmt::store(acc, row, select(better, x, m))},
             false))
      body.push_back(std::move(st));
    ExprPtr one = cmp(Op::Eq, load(arg, row, DType::I64), cast(DType::I64, var(a2)));
    for (auto& st : runNest(
             {a2}, {len},
             {Stmt::store(out, at(var(a2)), select(one, constant(t, 1), constant(t, 0)))}, false))
      body.push_back(std::move(st));
  } else {
    body = {Stmt::store(acc, row, constant(t, 0))};
    for (auto& st :
         runNest({a1}, {len},
                 {Stmt::store(acc, row, add(m, p == 1 ? call("abs", {x}) : mul(x, x)))}, false))
      body.push_back(std::move(st));
    if (p == 2) body.push_back(Stmt::store(acc, row, call("sqrt", {m})));
    ExprPtr x2 = load(in, at(var(a2)), t);
    for (auto& st :
         runNest({a2}, {len},
                 {Stmt::store(out, at(var(a2)),
                              select(cmp(Op::Eq, m, constant(t, 0)), constant(t, 0), div(x2, m)))},
                 false))
      body.push_back(std::move(st));
  }
  Schedule sch;
  sch["axis"] = static_cast<int64_t>(axis);
  return b.finish(runNest({ov, iv}, {outer, inner}, std::move(body), true), std::move(sch), o);
}

// CumSum / CumProd: a running sum or product per row along the axis (reverse: from the end;
// exclusive: each output before its own element), kept in a per-row temp of the element type
// (integers wrap as the reference's do; floats accumulate in their own type, where the reference
// uses double). The axis is a 0-D input: a constant gives one loop nest; one given at run time
// gives a nest per possible axis, each under `if axis == k`, after the runtime's range check
// (@check_indices_*).
std::optional<LoweredNode> lowerScan(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  b.setKind("scan");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  const DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) && !(isInteger(t) && dtypeSize(t) >= 4))
    no("a float or 32/64-bit integer input is needed");
  if (id.empty()) no("a scalar input");
  const Value* av = n.inputs.at(1);
  const DType at = av->type.dtype;
  if ((at != DType::I32 && at != DType::I64) || numel(staticDims(av, "axis")) != 1)
    no("an axis that is not one int32/int64 value");
  const bool excl = n.attrInt("exclusive") != 0, rev = n.attrInt("reverse") != 0;
  const bool prod = n.op == "CumProd";
  const int64_t r = int64_t(id.size());
  std::string in = b.input(n.inputs[0]);
  std::string run = b.temp("running", t, {numel(id)});
  // Symbolic sizes: the rows and the axis are the run's (the result is the input's shape).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  if (!equalDims(ir, runDims(o, n.outputs[0], id))) no("a result whose dims are not the input's");
  auto scanAlong = [&](int64_t axis) {
    const ExprPtr outer = product(ir, 0, size_t(axis)), len = ir[size_t(axis)],
                  inner = product(ir, size_t(axis) + 1);
    std::string ov = b.fresh("o"), iv = b.fresh("i"), jv = b.fresh("j");
    ExprPtr row = add(mul(var(ov), inner), var(iv));
    // (reversed: len - 1 - j, clamped at 0 so the verifier bounds it when len is the run's)
    ExprPtr j = !rev         ? var(jv)
                : isImm(len) ? sub(sub(len, intImm(1)), var(jv))
                             : max(sub(sub(len, intImm(1)), var(jv)), intImm(0));
    ExprPtr at = add(add(mul(var(ov), mul(len, inner)), mul(j, inner)), var(iv));
    ExprPtr acc = load(run, row, t), x = load(in, at, t);
    Block step;
    if (excl) step.push_back(Stmt::store(out, at, acc));
    step.push_back(Stmt::store(run, row, prod ? mul(acc, x) : add(acc, x)));
    if (!excl) step.push_back(Stmt::store(out, at, acc));
    Block body = {Stmt::store(run, row, constant(t, prod ? 1 : 0))};
    for (auto& st : runNest({jv}, {len}, std::move(step), false)) body.push_back(std::move(st));
    return runNest({ov, iv}, {outer, inner}, std::move(body), true);
  };
  Schedule sch;
  if (auto c = constInts(n, 1)) {
    sch["axis"] = normAxis((*c)[0], id.size(), n);
    return b.finish(scanAlong(normAxis((*c)[0], id.size(), n)), std::move(sch), o);
  }
  if (!o.runtimeKernels) no("an axis given at run time (checked by the runtime only)");
  const std::string A = b.input(av);
  Block body = {Stmt::callKernel(at == DType::I64 ? "check_indices_i64" : "check_indices_i32",
                                 {bufferArg(A), intArg(1), intArg(r)})};
  ExprPtr a = cast(DType::I64, load(A, intImm(0), at));
  ExprPtr axis = select(cmp(Op::Lt, a, intImm(0)), add(a, intImm(r)), a);
  for (int64_t k = 0; k < r; ++k)
    body.push_back(Stmt::ifThen(cmp(Op::Eq, axis, intImm(k)), scanAlong(k)));
  sch["axis"] = std::string("at run time");
  return b.finish(std::move(body), std::move(sch), o);
}

// TopK: k selection passes per row along the axis, each taking the best element not taken yet
// (NaN above every number; a strictly better one replaces the best so far, so ties keep the
// smaller index first, as the reference orders them); values and indices in that order. k is an
// input: the declared output shape gives it, and the runtime checks the value given
// (@check_values_i64); or, a data symbol (passes/data_dims.h), the run's k is its value (checked
// to be at most the axis). Symbolic sizes: the rows and the axis are the run's.
std::optional<LoweredNode> lowerTopK(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  b.setKind("reduce");
  if (n.outputs.size() != 2 || !n.outputs[0] || !n.outputs[1]) no("TopK without both outputs");
  const Dims id = staticDims(n.inputs.at(0), "input"), od = staticDims(n.outputs[0], "values");
  const DType t = n.inputs[0]->type.dtype;
  if ((!isComputeFloat(t) && !isInteger(t)) || n.outputs[1]->type.dtype != DType::I64 ||
      id.size() != od.size() || id.empty())
    no("TopK on a float or integer input");
  const size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  const ExprPtr outer = product(ir, 0, axis), len = ir[axis], inner = product(ir, axis + 1);
  const Split3 bounds = split3(id, axis, axis + 1);
  if (n.inputs.at(1)->type.dtype != DType::I64 || numel(staticDims(n.inputs[1], "K")) != 1)
    no("K not one int64");
  Block all;
  const std::string kv = b.fresh("k");
  const ExprPtr given = loadI64(b, n.inputs[1], 0);
  ExprPtr k = intImm(od[axis]);
  if (auto set = o.setDataDim ? o.setDataDim(n.outputs[0], axis, var(kv)) : std::nullopt) {
    // (k past the axis, or negative, is the run's error)
    all.push_back(
        checkValuesI64(b.input(n.inputs[1]), std::vector{max(min(given, len), intImm(0))}));
    all.push_back(Stmt::let(kv, max(min(given, len), intImm(0))));
    all.push_back(std::move(*set));
    k = var(kv);
  } else {
    if (od[axis] < 1) no("TopK with k = 0");
    if (n.inputs[1]->constant && n.inputs[1]->constant->getI64(0) != od[axis])
      no("K differs from the declared output shape");
    if (!o.runtimeKernels && !n.inputs[1]->constant)
      no("K given at run time (checked by the runtime only)");
    k = runDims(o, n.outputs[0], od)[axis];
    if (o.runtimeKernels) all.push_back(checkValuesI64(b.input(n.inputs[1]), std::vector{k}));
  }
  // (The results' dims other than k are the input's: read as theirs.)
  for (const Value* r : n.outputs) runDims(o, r, od);
  const bool largest = n.attrInt("largest") != 0;
  std::string vals = b.output(0), idxs = b.output(1), in = b.input(n.inputs[0]);
  std::string taken = b.temp("taken", DType::U8, {numel(id)}),
              best =
                  b.temp("best", DType::I64, {std::max<int64_t>(bounds.outer * bounds.inner, 1)});
  std::string ov = b.fresh("o"), iv = b.fresh("i"), qv = b.fresh("q"), jv = b.fresh("j"),
              zv = b.fresh("z");
  ExprPtr row = add(mul(var(ov), inner), var(iv));
  auto at = [&](ExprPtr j, ExprPtr rowLen) {
    return add(add(mul(mul(var(ov), rowLen), inner), mul(j, inner)), var(iv));
  };
  auto greater = [&](ExprPtr a, ExprPtr c) { return greaterNanFirst(t, a, c); };
  ExprPtr bi = load(best, row, DType::I64);
  ExprPtr xj = load(in, at(var(jv), len), t), xb = load(in, at(clampIndex(bi, len), len), t);
  ExprPtr free = cmp(Op::Eq, load(taken, at(var(jv), len), DType::U8), intImm(0, DType::U8));
  ExprPtr better =
      binary(Op::Or, cmp(Op::Lt, bi, intImm(0)), largest ? greater(xj, xb) : greater(xb, xj));
  Block pass = {Stmt::store(best, row, intImm(-1))};
  for (auto& st : runNest({jv}, {len},
                          {Stmt::ifThen(binary(Op::And, free, better),
                                        {Stmt::store(best, row, cast(DType::I64, var(jv)))})},
                          false))
    pass.push_back(std::move(st));
  ExprPtr chosen = clampIndex(bi, len);
  pass.push_back(Stmt::store(taken, at(chosen, len), intImm(1, DType::U8)));
  pass.push_back(Stmt::store(vals, at(var(qv), k), load(in, at(chosen, len), t)));
  pass.push_back(Stmt::store(idxs, at(var(qv), k), chosen));
  Block body =
      runNest({zv}, {len}, {Stmt::store(taken, at(var(zv), len), intImm(0, DType::U8))}, false);
  for (auto& st : runNest({qv}, {k}, std::move(pass), false)) body.push_back(std::move(st));
  for (auto& st : runNest({ov, iv}, {outer, inner}, std::move(body), true))
    all.push_back(std::move(st));
  Schedule sch;
  if (auto kk = asInt(k))
    sch["k"] = *kk;
  else
    sch["k"] = std::string("run-time");
  return b.finish(std::move(all), std::move(sch), o);
}

// LRN: x / (bias + alpha / size * the sum of x^2 over the channel window)^beta, in f64 as the
// reference; the window (size <= 16, unrolled) clipped at the first and last channel, summed in
// the reference's order (the clipped terms add 0).
std::optional<LoweredNode> lowerLrn(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  const DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.size() < 2) no("a float input of rank >= 2 is needed");
  const int64_t size = n.attrInt("size");
  if (size < 1 || size > 16) no("LRN size outside 1..16");
  const double alpha = n.attrFloat("alpha"), beta = n.attrFloat("beta");
  const double bias = n.attrFloat("bias");
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  // Symbolic sizes: the channels and the strides are the run's (gatherNest runs the output's).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), is = stridesOf(ir);
  const ExprPtr C = ir[1];
  std::string in = b.input(n.inputs[0]);
  auto f64 = [](double v) { return constant(DType::F64, v); };
  Schedule s;
  s["size"] = size;
  return gatherNest(
      b, out, id,
      [&](const std::vector<ExprPtr>& v) {
        auto at = [&](ExprPtr c) {
          std::vector<ExprPtr> w = v;
          w[1] = std::move(c);
          return cast(DType::F64, load(in, runIndex(w, is), t));
        };
        ExprPtr sq = f64(0);
        for (int64_t d = -lo; d <= hi; ++d) {
          ExprPtr c = add(v[1], intImm(d)), x = at(clampIndex(c, C));
          ExprPtr inside = binary(Op::And, cmp(Op::Ge, c, intImm(0)), cmp(Op::Lt, c, C));
          sq = add(sq, select(inside, mul(x, x), f64(0)));
        }
        ExprPtr den = call("pow", {add(f64(bias), mul(f64(alpha / double(size)), sq)), f64(beta)});
        return cast(t, div(at(v[1]), den));
      },
      o, std::move(s));
}

} // namespace aicc::loop::detail
