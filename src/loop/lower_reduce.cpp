// Reductions and normalizations as loop nests: Reduce{Sum,Mean,Max,Min,Prod,SumSquare,L1,L2},
// ArgMax / ArgMin, Softmax / LogSoftmax (max, exp-sum, scale passes over temp row buffers),
// LayerNormalization (mean and variance passes; its Mean / InvStdDev outputs) and
// RMSNormalization, BatchNormalization in inference mode (one per-channel affine nest).
// Accumulations store into the output (or a temp) buffer.
#include "loop/lower_ops.h"

#include <cmath>

namespace aicc::loop::detail {

namespace {

// [outer, len, inner] around `axis` (len = dims[axis..axisEnd)).
struct Split3 {
  int64_t outer = 1, len = 1, inner = 1;
};
Split3 split3(const Dims& d, size_t a0, size_t a1) {
  Split3 s;
  for (size_t k = 0; k < d.size(); ++k) (k < a0 ? s.outer : k < a1 ? s.len : s.inner) *= d[k];
  return s;
}

// Axes given at run time: the dims to reduce from the input and the declared output shape. Every
// set of axes giving that shape is tried; they must agree on the dims of size > 1 (reducing a
// size-1 dim changes nothing), else the shapes do not determine the reduction and it declines.
// With none of them reduced, noop_with_empty_axes makes it ambiguous for the ops that are not the
// identity on one element (L1, L2, SumSquare, LogSum, LogSumExp).
std::vector<bool> axesFromShapes(const Node& n, const Dims& in, const Dims& out) {
  const size_t r = in.size();
  if (r > 16) no("non-constant axes over more than 16 dims");
  const bool keep = n.attrInt("keepdims") != 0;
  std::optional<uint32_t> found;
  for (uint32_t s = 0; s < (1u << r); ++s) {
    Dims shape;
    for (size_t d = 0; d < r; ++d)
      if (!(s >> d & 1))
        shape.push_back(in[d]);
      else if (keep)
        shape.push_back(1);
    if (shape != out) continue;
    uint32_t big = 0;
    for (size_t d = 0; d < r; ++d)
      if ((s >> d & 1) && in[d] != 1) big |= 1u << d;
    if (found && *found != big) no("non-constant axes the output shape does not determine");
    found = big;
  }
  if (!found) no("non-constant axes: no reduction gives the declared output shape");
  const bool identityOnOne = n.op == "ReduceSum" || n.op == "ReduceMean" || n.op == "ReduceMax" ||
                             n.op == "ReduceMin" || n.op == "ReduceProd";
  if (*found == 0 && !identityOnOne && n.attrInt("noop_with_empty_axes") != 0)
    no("non-constant axes with noop_with_empty_axes");
  std::vector<bool> red(r);
  for (size_t d = 0; d < r; ++d) red[d] = *found >> d & 1;
  return red;
}

// The run-time check that the axes given are the ones the shapes implied (@check_reduce_axes).
// The C bundle has no error path and declines.
Block checkRuntimeAxes(const Node& n, FuncBuilder& b, const Dims& in, const std::vector<bool>& red,
                       const LowerOptions& o) {
  if (!o.runtimeKernels) no("non-constant axes (checked at run time by the runtime only)");
  const Value* ax = n.inputs[1];
  if (ax->type.dtype != DType::I64) no("axes of a type other than int64");
  const Dims ad = staticDims(ax, "axes");
  int64_t reduced = 0, ones = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    if (red[d]) reduced |= int64_t(1) << d;
    if (in[d] == 1) ones |= int64_t(1) << d;
  }
  const int64_t removed = int64_t(in.size()) - int64_t(staticDims(n.outputs[0], "output").size());
  const int64_t flags = int64_t(n.attrInt("noop_with_empty_axes") != 0) |
                        int64_t(n.attrInt("keepdims") == 0) << 1 | removed << 2;
  return {Stmt::callKernel("check_reduce_axes",
                           {bufferArg(b.input(ax)), intArg(numel(ad)), intArg(int64_t(in.size())),
                            intArg(reduced), intArg(ones), intArg(flags)})};
}

std::optional<LoweredNode> lowerReduce(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  b.setKind("reduce");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t)) no("a float input is needed");
  std::vector<bool> red(id.size(), false);
  std::vector<int64_t> axes;
  Block check;
  if (n.hasInput(1) && !constInts(n, 1)) {
    red = axesFromShapes(n, id, staticDims(n.outputs[0], "output"));
    check = checkRuntimeAxes(n, b, id, red, o);
  } else {
    if (n.hasInput(1)) axes = *constInts(n, 1);
    if (axes.empty()) {
      if (n.attrInt("noop_with_empty_axes") != 0) no("noop_with_empty_axes");
      red.assign(id.size(), true);
    }
    for (int64_t a : axes) red[normAxis(a, id.size(), n)] = true;
  }
  std::string in = b.input(n.inputs[0]);
  std::vector<std::string> kept, rv;
  std::vector<ExprPtr> idx;
  Dims keptExt, redExt;
  for (size_t d = 0; d < id.size(); ++d) {
    std::string v = b.fresh((red[d] ? "r" : "i") + std::to_string(d));
    (red[d] ? rv : kept).push_back(v);
    (red[d] ? redExt : keptExt).push_back(id[d]);
    idx.push_back(var(v));
  }
  int64_t count = numel(redExt);
  ExprPtr y = linearIndex(vars(kept), strides(keptExt));
  ExprPtr x = load(in, linearIndex(idx, strides(id)), t), acc = load(out, y, t);
  const std::string& op = n.op;
  double init = op == "ReduceMax"    ? -std::numeric_limits<double>::infinity()
                : op == "ReduceMin"  ? std::numeric_limits<double>::infinity()
                : op == "ReduceProd" ? 1.0
                                     : 0.0;
  ExprPtr step = op == "ReduceMax"         ? select(cmp(Op::Gt, x, acc), x, acc)
                 : op == "ReduceMin"       ? select(cmp(Op::Lt, x, acc), x, acc)
                 : op == "ReduceProd"      ? mul(acc, x)
                 : op == "ReduceSumSquare" ? add(acc, mul(x, x))
                 : op == "ReduceL2"        ? add(acc, mul(x, x))
                 : op == "ReduceL1"        ? add(acc, call("abs", {x}))
                                           : add(acc, x);
  Block body;
  if (op == "ReduceLogSumExp") {
    // As the reference: m = the max (NaN wins), then m + log(sum exp(x - m)) when m is finite,
    // else m.
    const std::string mx = b.temp("max", t, {numel(keptExt)});
    ExprPtr m = load(mx, y, t), inf = constant(t, std::numeric_limits<double>::infinity());
    ExprPtr finite = cmp(Op::Lt, call("abs", {m}), inf);
    body.push_back(Stmt::store(mx, y, neg(inf)));
    for (auto& s :
         nest(rv, redExt,
              {Stmt::store(mx, y,
                           select(binary(Op::Or, cmp(Op::Gt, x, m), cmp(Op::Ne, x, x)), x, m))},
              false))
      body.push_back(std::move(s));
    step = add(acc, select(finite, call("exp", {sub(x, m)}), constant(t, 0)));
    body.push_back(Stmt::store(out, y, constant(t, 0)));
    for (auto& s : nest(rv, redExt, {Stmt::store(out, y, step)}, false))
      body.push_back(std::move(s));
    body.push_back(Stmt::store(out, y, select(finite, add(m, call("log", {acc})), m)));
    for (auto& s : nest(kept, keptExt, std::move(body), true)) check.push_back(std::move(s));
    return b.finish(std::move(check), {}, o);
  }
  body.push_back(Stmt::store(out, y, constant(t, init)));
  for (auto& s : nest(rv, redExt, {Stmt::store(out, y, step)}, false)) body.push_back(std::move(s));
  if (op == "ReduceMean") body.push_back(Stmt::store(out, y, div(acc, constant(t, double(count)))));
  if (op == "ReduceL2") body.push_back(Stmt::store(out, y, call("sqrt", {acc})));
  if (op == "ReduceLogSum") body.push_back(Stmt::store(out, y, call("log", {acc})));
  for (auto& s : nest(kept, keptExt, std::move(body), true)) check.push_back(std::move(s));
  return b.finish(std::move(check), {}, o);
}

// ArgMax / ArgMin over one axis: a running best value (a temp row) and its index (the output), as
// the reference kernel: NaN ranks above every number, the first index of equal values wins (the
// last with select_last_index).
std::optional<LoweredNode> lowerArg(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  b.setKind("reduce");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  const DType t = n.inputs[0]->type.dtype;
  if (!isComputeFloat(t) && !isInteger(t)) no("a float or integer input is needed");
  if (id.empty()) no("a scalar input");
  const size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  const Split3 s = split3(id, axis, axis + 1);
  if (s.len == 0) no("an empty axis");
  const bool isMax = n.op == "ArgMax", last = n.attrInt("select_last_index") != 0;
  std::string in = b.input(n.inputs[0]);
  std::string best = b.temp("best", t, {s.outer * s.inner});
  std::string ov = b.fresh("o"), iv = b.fresh("i"), jv = b.fresh("j"), cv = b.fresh("better");
  ExprPtr row = add(mul(var(ov), intImm(s.inner)), var(iv));
  auto at = [&](ExprPtr j) {
    return add(add(mul(var(ov), intImm(s.len * s.inner)), mul(j, intImm(s.inner))), var(iv));
  };
  // a > b with NaN above every number (and not above NaN).
  auto greater = [&](ExprPtr a, ExprPtr c) {
    if (!isFloat(t)) return cmp(Op::Gt, a, c);
    ExprPtr aNan = cmp(Op::Ne, a, a), cNan = cmp(Op::Ne, c, c);
    return select(aNan, logicalNot(cNan), binary(Op::And, logicalNot(cNan), cmp(Op::Gt, a, c)));
  };
  ExprPtr x = load(in, at(var(jv)), t), bv = load(best, row, t);
  ExprPtr better = isMax ? greater(x, bv) : greater(bv, x);
  if (last) // or equal: neither is greater
    better = binary(Op::Or, better,
                    binary(Op::And, logicalNot(greater(x, bv)), logicalNot(greater(bv, x))));
  Block step = {Stmt::let(cv, better)};
  ExprPtr c = var(cv, DType::Bool);
  step.push_back(
      Stmt::store(out, row, select(c, cast(DType::I64, var(jv)), load(out, row, DType::I64))));
  step.push_back(Stmt::store(best, row, select(c, x, bv)));
  Block body = {Stmt::store(best, row, load(in, at(intImm(0)), t)),
                Stmt::store(out, row, intImm(0, DType::I64))};
  for (auto& st : nest({jv}, {s.len}, std::move(step), false)) body.push_back(std::move(st));
  return b.finish(nest({ov, iv}, {s.outer, s.inner}, std::move(body), true), {}, o);
}

// TopK: k selection passes per row along the axis, each taking the best element not taken yet
// (NaN above every number; a strictly better one replaces the best so far, so ties keep the
// smaller index first, as the reference orders them); values and indices in that order. k is an
// input: the declared output shape gives it, and the runtime checks the value given
// (@check_values_i64).
std::optional<LoweredNode> lowerTopK(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  b.setKind("reduce");
  if (n.outputs.size() != 2 || !n.outputs[0] || !n.outputs[1]) no("TopK without both outputs");
  const Dims id = staticDims(n.inputs.at(0), "input"), od = staticDims(n.outputs[0], "values");
  const DType t = n.inputs[0]->type.dtype;
  if ((!isComputeFloat(t) && !isInteger(t)) || n.outputs[1]->type.dtype != DType::I64 ||
      id.size() != od.size() || id.empty())
    no("TopK on a float or integer input");
  const size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  const Split3 s = split3(id, axis, axis + 1);
  const int64_t k = od[axis];
  if (k < 1) no("TopK with k = 0");
  if (n.inputs.at(1)->type.dtype != DType::I64 || numel(staticDims(n.inputs[1], "K")) != 1)
    no("K not one int64");
  if (n.inputs[1]->constant && n.inputs[1]->constant->getI64(0) != k)
    no("K differs from the declared output shape");
  if (!o.runtimeKernels && !n.inputs[1]->constant)
    no("K given at run time (checked by the runtime only)");
  const bool largest = n.attrInt("largest") != 0;
  std::string vals = b.output(0), idxs = b.output(1), in = b.input(n.inputs[0]);
  std::string taken = b.temp("taken", DType::U8, {numel(id)}),
              best = b.temp("best", DType::I64, {s.outer * s.inner});
  std::string ov = b.fresh("o"), iv = b.fresh("i"), qv = b.fresh("q"), jv = b.fresh("j"),
              zv = b.fresh("z");
  ExprPtr row = add(mul(var(ov), intImm(s.inner)), var(iv));
  auto at = [&](ExprPtr j, int64_t len) {
    return add(add(mul(var(ov), intImm(len * s.inner)), mul(j, intImm(s.inner))), var(iv));
  };
  // a > b with NaN above every number.
  auto greater = [&](ExprPtr a, ExprPtr c) {
    if (!isFloat(t)) return cmp(Op::Gt, a, c);
    ExprPtr aNan = cmp(Op::Ne, a, a), cNan = cmp(Op::Ne, c, c);
    return select(aNan, logicalNot(cNan), binary(Op::And, logicalNot(cNan), cmp(Op::Gt, a, c)));
  };
  ExprPtr bi = load(best, row, DType::I64);
  ExprPtr xj = load(in, at(var(jv), s.len), t), xb = load(in, at(clampIndex(bi, s.len), s.len), t);
  ExprPtr free = cmp(Op::Eq, load(taken, at(var(jv), s.len), DType::U8), intImm(0, DType::U8));
  ExprPtr better =
      binary(Op::Or, cmp(Op::Lt, bi, intImm(0)), largest ? greater(xj, xb) : greater(xb, xj));
  Block pass = {Stmt::store(best, row, intImm(-1))};
  for (auto& st : nest({jv}, {s.len},
                       {Stmt::ifThen(binary(Op::And, free, better),
                                     {Stmt::store(best, row, cast(DType::I64, var(jv)))})},
                       false))
    pass.push_back(std::move(st));
  ExprPtr chosen = clampIndex(bi, s.len);
  pass.push_back(Stmt::store(taken, at(chosen, s.len), intImm(1, DType::U8)));
  pass.push_back(Stmt::store(vals, at(var(qv), k), load(in, at(chosen, s.len), t)));
  pass.push_back(Stmt::store(idxs, at(var(qv), k), chosen));
  Block body =
      nest({zv}, {s.len}, {Stmt::store(taken, at(var(zv), s.len), intImm(0, DType::U8))}, false);
  for (auto& st : nest({qv}, {k}, std::move(pass), false)) body.push_back(std::move(st));
  Block all;
  if (o.runtimeKernels)
    all.push_back(Stmt::callKernel("check_values_i64",
                                   {bufferArg(b.input(n.inputs[1])), intArg(1), intArg(k)}));
  for (auto& st : nest({ov, iv}, {s.outer, s.inner}, std::move(body), true))
    all.push_back(std::move(st));
  Schedule sch;
  sch["k"] = k;
  return b.finish(std::move(all), std::move(sch), o);
}

std::optional<LoweredNode> lowerSoftmax(const Node& n, FuncBuilder& b, const LowerOptions& o,
                                        bool logSoftmax) {
  b.setKind("softmax");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.empty()) no("a float input of rank >= 1 is needed");
  size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  Split3 s = split3(id, axis, axis + 1);
  std::string in = b.input(n.inputs[0]);
  std::string mx = b.temp("rowmax", t, {s.outer * s.inner}),
              sm = b.temp("rowsum", t, {s.outer * s.inner});
  std::string ov = b.fresh("o"), iv = b.fresh("i"), a1 = b.fresh("a"), a2 = b.fresh("a"),
              a3 = b.fresh("a");
  ExprPtr row = add(mul(var(ov), intImm(s.inner)), var(iv));
  auto at = [&](const std::string& a) {
    return add(add(mul(var(ov), intImm(s.len * s.inner)), mul(var(a), intImm(s.inner))), var(iv));
  };
  ExprPtr m = load(mx, row, t), su = load(sm, row, t);
  Block body = {Stmt::store(mx, row, constant(t, -std::numeric_limits<double>::infinity())),
                Stmt::store(sm, row, constant(t, 0))};
  ExprPtr x1 = load(in, at(a1), t);
  for (auto& st :
       nest({a1}, {s.len}, {Stmt::store(mx, row, select(cmp(Op::Gt, x1, m), x1, m))}, false))
    body.push_back(std::move(st));
  ExprPtr e = call("exp", {sub(load(in, at(a2), t), m)});
  Block pass2 = {Stmt::let(b.fresh("ex"), e)};
  ExprPtr ev = var(pass2[0].name, t);
  if (!logSoftmax) pass2.push_back(Stmt::store(out, at(a2), ev));
  pass2.push_back(Stmt::store(sm, row, add(su, ev)));
  for (auto& st : nest({a2}, {s.len}, std::move(pass2), false)) body.push_back(std::move(st));
  ExprPtr fin = logSoftmax ? sub(sub(load(in, at(a3), t), m), call("log", {su}))
                           : div(load(out, at(a3), t), su);
  for (auto& st : nest({a3}, {s.len}, {Stmt::store(out, at(a3), fin)}, false))
    body.push_back(std::move(st));
  Schedule sch;
  sch["axis"] = static_cast<int64_t>(axis);
  return b.finish(nest({ov, iv}, {s.outer, s.inner}, std::move(body), true), std::move(sch), o);
}

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
  const Split3 s = split3(id, axis, axis + 1);
  if (s.len == 0) no("an empty axis");
  const bool hard = n.op == "Hardmax";
  const int64_t p = hard ? 0 : n.attrInt("p");
  if (!hard && p != 1 && p != 2) no("LpNormalization with p other than 1 or 2");
  std::string in = b.input(n.inputs[0]);
  std::string acc = b.temp(hard ? "best" : "norm", t, {s.outer * s.inner});
  std::string arg = hard ? b.temp("arg", DType::I64, {s.outer * s.inner}) : "";
  std::string ov = b.fresh("o"), iv = b.fresh("i"), a1 = b.fresh("a"), a2 = b.fresh("a");
  ExprPtr row = add(mul(var(ov), intImm(s.inner)), var(iv));
  auto at = [&](ExprPtr j) {
    return add(add(mul(var(ov), intImm(s.len * s.inner)), mul(j, intImm(s.inner))), var(iv));
  };
  ExprPtr x = load(in, at(var(a1)), t), m = load(acc, row, t);
  Block body;
  if (hard) {
    body = {Stmt::store(acc, row, load(in, at(intImm(0)), t)),
            Stmt::store(arg, row, intImm(0, DType::I64))};
    ExprPtr better = cmp(Op::Gt, x, m);
    for (auto& st :
         nest({a1}, {s.len},
              {Stmt::store(arg, row,
                           select(better, cast(DType::I64, var(a1)), load(arg, row, DType::I64))),
               Stmt::store(acc, row, select(better, x, m))},
              false))
      body.push_back(std::move(st));
    ExprPtr one = cmp(Op::Eq, load(arg, row, DType::I64), cast(DType::I64, var(a2)));
    for (auto& st :
         nest({a2}, {s.len},
              {Stmt::store(out, at(var(a2)), select(one, constant(t, 1), constant(t, 0)))}, false))
      body.push_back(std::move(st));
  } else {
    body = {Stmt::store(acc, row, constant(t, 0))};
    for (auto& st :
         nest({a1}, {s.len}, {Stmt::store(acc, row, add(m, p == 1 ? call("abs", {x}) : mul(x, x)))},
              false))
      body.push_back(std::move(st));
    if (p == 2) body.push_back(Stmt::store(acc, row, call("sqrt", {m})));
    ExprPtr x2 = load(in, at(var(a2)), t);
    for (auto& st :
         nest({a2}, {s.len},
              {Stmt::store(out, at(var(a2)),
                           select(cmp(Op::Eq, m, constant(t, 0)), constant(t, 0), div(x2, m)))},
              false))
      body.push_back(std::move(st));
  }
  Schedule sch;
  sch["axis"] = static_cast<int64_t>(axis);
  return b.finish(nest({ov, iv}, {s.outer, s.inner}, std::move(body), true), std::move(sch), o);
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
  auto scanAlong = [&](int64_t axis) {
    const Split3 s = split3(id, size_t(axis), size_t(axis) + 1);
    std::string ov = b.fresh("o"), iv = b.fresh("i"), jv = b.fresh("j");
    ExprPtr row = add(mul(var(ov), intImm(s.inner)), var(iv));
    ExprPtr j = rev ? sub(intImm(s.len - 1), var(jv)) : var(jv);
    ExprPtr at = add(add(mul(var(ov), intImm(s.len * s.inner)), mul(j, intImm(s.inner))), var(iv));
    ExprPtr acc = load(run, row, t), x = load(in, at, t);
    Block step;
    if (excl) step.push_back(Stmt::store(out, at, acc));
    step.push_back(Stmt::store(run, row, prod ? mul(acc, x) : add(acc, x)));
    if (!excl) step.push_back(Stmt::store(out, at, acc));
    Block body = {Stmt::store(run, row, constant(t, prod ? 1 : 0))};
    for (auto& st : nest({jv}, {s.len}, std::move(step), false)) body.push_back(std::move(st));
    return nest({ov, iv}, {s.outer, s.inner}, std::move(body), true);
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

// LayerNormalization (with its optional Mean and InvStdDev outputs) and RMSNormalization (no
// mean, no bias: y = x / sqrt(mean(x^2) + eps) * scale), as the reference kernel.
std::optional<LoweredNode> lowerLayerNorm(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  const bool rms = n.op == "RMSNormalization";
  b.setKind(rms ? "rmsnorm" : "layernorm");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.empty()) no("a float input is needed");
  std::string meanOut, invOut; // LayerNormalization's statistics outputs, when asked for
  for (size_t k = 1; k < n.outputs.size() && !rms; ++k) {
    if (!n.outputs[k]) continue;
    if (n.outputs[k]->type.dtype != t) no("Mean/InvStdDev in a stash type other than the input's");
    (k == 1 ? meanOut : invOut) = b.output(k);
  }
  size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  Split3 s = split3(id, axis, id.size());
  Dims norm(id.begin() + static_cast<std::ptrdiff_t>(axis), id.end());
  auto param = [&](size_t i) -> std::pair<std::string, std::vector<int64_t>> {
    if (!n.hasInput(i)) return {"", {}};
    Dims pd = staticDims(n.inputs[i], "scale/bias");
    if (pd.size() > norm.size()) no("scale/bias of a higher rank than the normalized shape");
    std::vector<int64_t> st(norm.size(), 0), ps = strides(pd);
    size_t off = norm.size() - pd.size();
    for (size_t d = 0; d < pd.size(); ++d) {
      if (pd[d] != 1 && pd[d] != norm[off + d]) no("scale/bias does not broadcast");
      if (pd[d] != 1) st[off + d] = ps[d];
    }
    return {b.input(n.inputs[i]), st};
  };
  std::string in = b.input(n.inputs[0]);
  auto [sc, scSt] = param(1);
  auto [bi, biSt] = rms ? std::pair<std::string, std::vector<int64_t>>{} : param(2);
  std::string mean = b.temp("mean", t, {s.outer}), var2 = b.temp("var", t, {s.outer});
  std::string ov = b.fresh("o");
  double eps = n.attrFloat("epsilon");
  std::vector<std::string> l1, l2, l3;
  for (size_t d = 0; d < norm.size(); ++d) {
    l1.push_back(b.fresh("a" + std::to_string(d)));
    l2.push_back(b.fresh("b" + std::to_string(d)));
    l3.push_back(b.fresh("c" + std::to_string(d)));
  }
  auto at = [&](const std::vector<std::string>& l) {
    return add(mul(var(ov), intImm(s.len)), linearIndex(vars(l), strides(norm)));
  };
  ExprPtr mu = load(mean, var(ov), t), vr = load(var2, var(ov), t);
  Block body = {Stmt::store(mean, var(ov), constant(t, 0)),
                Stmt::store(var2, var(ov), constant(t, 0))};
  if (!rms) { // RMS: the mean stays 0
    for (auto& st :
         nest(l1, norm, {Stmt::store(mean, var(ov), add(mu, load(in, at(l1), t)))}, false))
      body.push_back(std::move(st));
    body.push_back(Stmt::store(mean, var(ov), div(mu, constant(t, double(s.len)))));
  }
  ExprPtr dx = sub(load(in, at(l2), t), mu);
  for (auto& st : nest(l2, norm, {Stmt::store(var2, var(ov), add(vr, mul(dx, dx)))}, false))
    body.push_back(std::move(st));
  // var <- 1 / sqrt(var / len + eps)
  body.push_back(
      Stmt::store(var2, var(ov),
                  div(constant(t, 1),
                      call("sqrt", {add(div(vr, constant(t, double(s.len))), constant(t, eps))}))));
  if (!meanOut.empty()) body.push_back(Stmt::store(meanOut, var(ov), mu));
  if (!invOut.empty()) body.push_back(Stmt::store(invOut, var(ov), vr));
  ExprPtr y = mul(sub(load(in, at(l3), t), mu), vr);
  if (!sc.empty()) y = mul(y, load(sc, linearIndex(vars(l3), scSt), t));
  if (!bi.empty()) y = add(y, load(bi, linearIndex(vars(l3), biSt), t));
  for (auto& st :
       nest(l3, norm, {Stmt::store(out, at(l3), y)}, false, vectorWidthFor(o, t, norm.back())))
    body.push_back(std::move(st));
  Schedule sch;
  sch["axis"] = static_cast<int64_t>(axis);
  return b.finish(nest({ov}, {s.outer}, std::move(body), true), std::move(sch), o);
}

std::optional<LoweredNode> lowerBatchNorm(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  if (n.attrInt("training_mode") != 0) no("training mode");
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k]) no("running statistics outputs");
  FuncBuilder b(n, name, "batchnorm");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.size() < 2) no("a float input of rank >= 2 is needed");
  std::vector<std::string> p;
  for (size_t i = 1; i <= 4; ++i) {
    Dims pd = staticDims(n.inputs.at(i), "parameter");
    if (numel(pd) != id[1]) no("per-channel parameters of the wrong size");
    if (n.inputs[i]->type.dtype != t) no("parameters of another element type");
    p.push_back(b.input(n.inputs[i]));
  }
  std::string in = b.input(n.inputs[0]);
  double eps = n.attrFloat("epsilon");
  int64_t inner = numel(id) / (id[0] * id[1]);
  std::string nv = b.fresh("n"), cv = b.fresh("c"), iv = b.fresh("i"), sv = b.fresh("scale");
  ExprPtr c = var(cv);
  ExprPtr idx = add(mul(add(mul(var(nv), intImm(id[1])), c), intImm(inner)), var(iv));
  ExprPtr scale = div(load(p[0], c, t), call("sqrt", {add(load(p[3], c, t), constant(t, eps))}));
  Block inBody = {Stmt::store(
      out, idx, add(mul(sub(load(in, idx, t), load(p[2], c, t)), var(sv, t)), load(p[1], c, t)))};
  Block cb = {Stmt::let(sv, scale)};
  for (auto& st : nest({iv}, {inner}, std::move(inBody), false, vectorWidthFor(o, t, inner)))
    cb.push_back(std::move(st));
  return b.finish(nest({nv, cv}, {id[0], id[1]}, std::move(cb), true), {}, o);
}

} // namespace

std::optional<LoweredNode> lowerReductionInto(const Node& n, FuncBuilder& b,
                                              const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  const std::string& op = n.op;
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" ||
      op == "ReduceProd" || op == "ReduceSumSquare" || op == "ReduceL1" || op == "ReduceL2" ||
      op == "ReduceLogSum" || op == "ReduceLogSumExp")
    return lowerReduce(n, b, o);
  if (op == "ArgMax" || op == "ArgMin") return lowerArg(n, b, o);
  if (op == "Softmax") return lowerSoftmax(n, b, o, false);
  if (op == "Hardmax" || op == "LpNormalization") return lowerAxisNormalize(n, b, o);
  if (op == "CumSum" || op == "CumProd") return lowerScan(n, b, o);
  if (op == "TopK") return lowerTopK(n, b, o);
  if (op == "LogSoftmax") return lowerSoftmax(n, b, o, true);
  if (op == "LayerNormalization" || op == "RMSNormalization") return lowerLayerNorm(n, b, o);
  return std::nullopt;
}

std::optional<LoweredNode> lowerReduceFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "BatchNormalization") return lowerBatchNorm(n, name, o);
  FuncBuilder b(n, name, "reduce");
  return lowerReductionInto(n, b, o);
}

} // namespace aicc::loop::detail
