// Reductions and normalizations as loop nests: Reduce{Sum,Mean,Max,Min,Prod,SumSquare,L1,L2},
// ArgMax / ArgMin, Softmax / LogSoftmax (max, exp-sum, scale passes over temp row buffers),
// LayerNormalization (mean and variance passes; its Mean / InvStdDev outputs) and
// RMSNormalization (BatchNormalization and MeanVarianceNormalization: lower_batch_norm.cpp).
// Accumulations store into the output (or a temp) buffer.
#include "loop/lower_ops.h"

#include <functional>

#include <algorithm>
#include <cmath>

namespace aicc::loop::detail {

namespace {

// Whether the op is the identity on one element (noop_with_empty_axes with no axes is then the
// same as reducing no dim; the others, L1, L2, SumSquare, LogSum, LogSumExp, are not).
bool identityOnOne(const std::string& op) {
  return op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" ||
         op == "ReduceProd";
}

// Axes given at run time: the dims to reduce from the input and the declared output shape. Every
// set of axes giving that shape is tried and the distinct sets of dims of size > 1 they reduce are
// returned (reducing a size-1 dim changes nothing): one when the shapes determine the reduction,
// up to four when they leave it open (lowerReduce then picks at run time). With none of them
// reduced, noop_with_empty_axes makes it ambiguous for the ops that are not the identity on one
// element (L1, L2, SumSquare, LogSum, LogSumExp).
std::vector<std::vector<bool>> axesFromShapes(const Node& n, const Dims& in, const Dims& out) {
  const size_t r = in.size();
  if (r > 16) no("non-constant axes over more than 16 dims");
  const bool keep = n.attrInt("keepdims") != 0;
  std::vector<uint32_t> found; // the distinct sets of dims of size > 1 reduced
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
    if (std::find(found.begin(), found.end(), big) == found.end()) found.push_back(big);
  }
  if (found.empty()) no("non-constant axes: no reduction gives the declared output shape");
  if (found.size() > 4) no("non-constant axes: more than 4 reductions give the output shape");
  for (uint32_t f : found)
    if (f == 0 && !identityOnOne(n.op) && n.attrInt("noop_with_empty_axes") != 0)
      no("non-constant axes with noop_with_empty_axes");
  std::vector<std::vector<bool>> sets;
  for (uint32_t f : found) {
    std::vector<bool> red(r);
    for (size_t d = 0; d < r; ++d) red[d] = f >> d & 1;
    sets.push_back(std::move(red));
  }
  return sets;
}

// The dims the run-time axes name, as a bit mask in an i64 temp, those of size 1 dropped unless
// `sizeOne` (axes out of range or repeated are the check's to report; here they only must not
// shift out of range).
Block runtimeAxesMask(const Node& n, FuncBuilder& b, const Dims& in, const std::string& mask,
                      bool sizeOne = false) {
  const Value* ax = n.inputs[1];
  const int64_t count = numel(staticDims(ax, "axes")), rank = int64_t(in.size());
  int64_t ones = 0;
  for (size_t d = 0; d < in.size() && !sizeOne; ++d)
    if (in[d] == 1) ones |= int64_t(1) << d;
  const std::string i = b.fresh("k");
  ExprPtr a = load(b.input(ax), var(i), DType::I64);
  a = select(cmp(Op::Lt, a, intImm(0)), add(a, intImm(rank)), a);
  a = select(binary(Op::And, cmp(Op::Ge, a, intImm(0)), cmp(Op::Lt, a, intImm(rank))), a,
             intImm(63));
  const ExprPtr m = load(mask, intImm(0), DType::I64);
  Block out = {Stmt::store(mask, intImm(0), intImm(0))};
  for (auto& s :
       nest({i}, {count},
            {Stmt::store(mask, intImm(0), binary(Op::BitOr, m, binary(Op::Shl, intImm(1), a)))},
            false))
    out.push_back(std::move(s));
  out.push_back(Stmt::store(mask, intImm(0), binary(Op::BitAnd, m, intImm(~ones))));
  return out;
}

// The run-time check that the axes given are the ones the shapes implied (@check_reduce_axes).
// The C bundle has no error path and declines.
// anySet: any dims (the run's mask decides the result's dims): only the range, the repeats and,
// without keepdims, the count are checked.
Block checkRuntimeAxes(const Node& n, FuncBuilder& b, const Dims& in, const std::vector<bool>& red,
                       const LowerOptions& o, bool anySet = false) {
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
                            intArg(anySet ? -1 : reduced), intArg(ones), intArg(flags)})};
}

// A Reduce op's accumulation: the accumulator's start, one step with element x, and what it becomes
// after the reduction of `count` elements (nullptr: itself). ReduceLogSumExp's max pass is its
// callers' (logSumExp below).
// (Integers and bools: ReduceMax / ReduceMin only, exact; a bool's max is Or, its min And.)
ExprPtr reduceInit(const std::string& op, DType t) {
  if (t == DType::Bool) return intImm(op == "ReduceMin" ? 1 : 0, t);
  if (isInteger(t)) {
    const int bits = 8 * int(dtypeSize(t));
    const int64_t lo = isSigned(t) ? std::numeric_limits<int64_t>::min() >> (64 - bits) : 0;
    const int64_t hi = isSigned(t)  ? std::numeric_limits<int64_t>::max() >> (64 - bits)
                       : bits == 64 ? -1 // (all ones)
                                    : (int64_t(1) << bits) - 1;
    return intImm(op == "ReduceMax" ? lo : hi, t);
  }
  return constant(t, op == "ReduceMax"    ? -std::numeric_limits<double>::infinity()
                     : op == "ReduceMin"  ? std::numeric_limits<double>::infinity()
                     : op == "ReduceProd" ? 1.0
                                          : 0.0);
}
ExprPtr reduceStep(const std::string& op, const ExprPtr& acc, const ExprPtr& x) {
  if (x->type == DType::Bool) return binary(op == "ReduceMax" ? Op::Or : Op::And, acc, x);
  return op == "ReduceMax"                             ? select(cmp(Op::Gt, x, acc), x, acc)
         : op == "ReduceMin"                           ? select(cmp(Op::Lt, x, acc), x, acc)
         : op == "ReduceProd"                          ? mul(acc, x)
         : op == "ReduceSumSquare" || op == "ReduceL2" ? add(acc, mul(x, x))
         : op == "ReduceL1"                            ? add(acc, call("abs", {x}))
                                                       : add(acc, x);
}
ExprPtr reduceResult(const std::string& op, const ExprPtr& acc, const ExprPtr& count, DType t) {
  if (op == "ReduceMean")
    return div(acc, asInt(count) ? constant(t, double(*asInt(count))) : cast(t, count));
  if (op == "ReduceL2") return call("sqrt", {acc});
  if (op == "ReduceLogSum") return call("log", {acc});
  return nullptr;
}
// ReduceLogSumExp as the reference: m = the max (NaN wins), then m + log(sum exp(x - m)) when m is
// finite, else m. The max pass's statement (into m's buffer at the accumulator's index), the step
// and the result.
struct LogSumExp {
  ExprPtr finite, step, result;
  Stmt maxStep;
};
LogSumExp logSumExp(const std::string& mx, const ExprPtr& y, const ExprPtr& acc, const ExprPtr& x,
                    DType t) {
  const ExprPtr m = load(mx, y, t), inf = constant(t, std::numeric_limits<double>::infinity());
  LogSumExp l;
  l.finite = cmp(Op::Lt, call("abs", {m}), inf);
  l.maxStep =
      Stmt::store(mx, y, select(binary(Op::Or, cmp(Op::Gt, x, m), cmp(Op::Ne, x, x)), x, m));
  l.step = add(acc, select(l.finite, call("exp", {sub(x, m)}), constant(t, 0)));
  l.result = select(l.finite, add(m, call("log", {acc})), m);
  return l;
}

// The reduction of `in` over the dims of `red` into `out` (dense over the kept dims); `ir` the
// input's run dims (symbolic sizes: runDims; else id's immediates).
Block reduceNest(const Node& n, FuncBuilder& b, const Dims& id, const std::vector<ExprPtr>& ir,
                 const std::vector<bool>& red, const std::string& out, DType t) {
  std::string in = b.input(n.inputs[0]);
  std::vector<std::string> kept, rv;
  std::vector<ExprPtr> idx, keptExt, redExt;
  Dims keptBound;
  for (size_t d = 0; d < id.size(); ++d) {
    std::string v = b.fresh((red[d] ? "r" : "i") + std::to_string(d));
    (red[d] ? rv : kept).push_back(v);
    (red[d] ? redExt : keptExt).push_back(ir[d]);
    if (!red[d]) keptBound.push_back(id[d]);
    idx.push_back(var(v));
  }
  const ExprPtr count = product(redExt);
  ExprPtr y = runIndex(vars(kept), stridesOf(keptExt));
  ExprPtr x = load(in, runIndex(idx, stridesOf(ir)), t), acc = load(out, y, t);
  const std::string& op = n.op;
  ExprPtr step = reduceStep(op, acc, x), result = reduceResult(op, acc, count, t);
  Block body;
  if (op == "ReduceLogSumExp") {
    const std::string mx = b.temp("max", t, {numel(keptBound)});
    const LogSumExp l = logSumExp(mx, y, acc, x, t);
    body.push_back(Stmt::store(mx, y, constant(t, -std::numeric_limits<double>::infinity())));
    for (auto& s : runNest(rv, redExt, {l.maxStep}, false)) body.push_back(std::move(s));
    step = l.step, result = l.result;
  }
  body.push_back(Stmt::store(out, y, reduceInit(op, t)));
  for (auto& s : runNest(rv, redExt, {Stmt::store(out, y, step)}, false))
    body.push_back(std::move(s));
  if (result) body.push_back(Stmt::store(out, y, result));
  for (const ExprPtr& e : keptExt) // an empty nest, as nest() leaves it
    if (asInt(e) == 0) return {};
  return runNest(kept, keptExt, std::move(body), true);
}

// Axes given at run time with sizes the run decides (symbolic input dims, or result dims that are
// data symbols: which dims the axes keep, passes/data_dims.h): the reduced dims as a mask from the
// axes (checked: in range, each once, as many as the result's rank drops), the result's dims and
// each input dim's stride in the result (0 where reduced) from it, then one serial nest over the
// input accumulating at that offset, and a pass over the result for the final values.
Block reduceByMask(const Node& n, FuncBuilder& b, const LowerOptions& o, const Dims& id,
                   const std::vector<ExprPtr>& ir, const std::string& out, DType t) {
  const Value* ax = n.inputs[1];
  if (ax->type.dtype != DType::I64) no("axes of a type other than int64");
  const int64_t count = numel(staticDims(ax, "axes")), rank = int64_t(id.size());
  const Dims od = staticDims(n.outputs[0], "output");
  const bool keep = n.attrInt("keepdims") != 0, noop = n.attrInt("noop_with_empty_axes") != 0;
  if (count == 0 && noop && !identityOnOne(n.op)) no("non-constant axes with noop_with_empty_axes");
  Block body = checkRuntimeAxes(n, b, id, std::vector<bool>(id.size(), false), o, true);
  const std::string mask = b.temp("axes_mask", DType::I64, {1}),
                    dims = b.temp("result_dims", DType::I64,
                                  {std::max<int64_t>(1, int64_t(od.size()))}),
                    ostride = b.temp("result_strides", DType::I64, {std::max<int64_t>(rank, 1)}),
                    acc = b.temp("counts", DType::I64, {2}); // [elements so far, dims left]
  auto i64 = [](int64_t v) { return intImm(v); };
  auto ld = [](const std::string& buf, int64_t k) { return load(buf, intImm(k), DType::I64); };
  // The mask (every dim for no axes, unless noop_with_empty_axes), size-1 dims included: without
  // keepdims they leave the result too.
  if (count == 0)
    body.push_back(Stmt::store(mask, i64(0), i64(noop ? 0 : (int64_t(1) << rank) - 1)));
  else
    for (auto& st : runtimeAxesMask(n, b, id, mask, true)) body.push_back(std::move(st));
  // From the last dim: its stride in the result, and the result's dims (keepdims: 1 where
  // reduced; else the kept dims, from the back).
  body.push_back(Stmt::store(acc, i64(0), i64(1)));
  body.push_back(Stmt::store(acc, i64(1), i64(int64_t(od.size()))));
  for (int64_t d = rank - 1; d >= 0; --d) {
    const ExprPtr reduced =
        cmp(Op::Ne, binary(Op::BitAnd, ld(mask, 0), i64(int64_t(1) << d)), i64(0));
    const ExprPtr dim = ir[size_t(d)];
    body.push_back(Stmt::store(ostride, i64(d), select(reduced, i64(0), ld(acc, 0))));
    if (keep) {
      body.push_back(Stmt::store(dims, i64(d), select(reduced, i64(1), dim)));
    } else {
      Block kept = {Stmt::store(acc, i64(1), sub(ld(acc, 1), i64(1)))};
      kept.push_back(Stmt::store(dims, max(ld(acc, 1), i64(0)), dim));
      body.push_back(Stmt::ifThen(logicalNot(reduced), std::move(kept)));
    }
    body.push_back(Stmt::store(acc, i64(0), select(reduced, ld(acc, 0), mul(ld(acc, 0), dim))));
  }
  // The result's dims: data symbols are written, the others checked.
  for (size_t k = 0; k < od.size(); ++k)
    if (auto set =
            o.setDataDim ? o.setDataDim(n.outputs[0], k, ld(dims, int64_t(k))) : std::nullopt)
      body.push_back(std::move(*set));
  if (!od.empty()) body.push_back(checkValuesI64(dims, runDims(o, n.outputs[0], od)));
  // out[j] for the result's j: the start; x accumulated at its offset; the final values.
  const std::string in = b.input(n.inputs[0]), jv = b.fresh("j"), total = b.fresh("kept");
  body.push_back(Stmt::let(total, ld(acc, 0)));
  const ExprPtr kept = var(total, DType::I64), j = var(jv);
  const ExprPtr reducedCount = div(product(ir), max(kept, i64(1)));
  std::vector<std::string> iv;
  std::vector<ExprPtr> idx, off;
  for (int64_t d = 0; d < rank; ++d) {
    iv.push_back(b.fresh("i" + std::to_string(d)));
    idx.push_back(var(iv.back()));
    off.push_back(ld(ostride, d));
  }
  const ExprPtr x = load(in, runIndex(idx, stridesOf(ir)), t), y = runIndex(idx, off),
                accY = load(out, y, t);
  ExprPtr step = reduceStep(n.op, accY, x),
          result = reduceResult(n.op, load(out, j, t), reducedCount, t);
  if (n.op == "ReduceLogSumExp") {
    const std::string mx = b.temp("max", t, {std::max<int64_t>(1, numel(od))});
    body.push_back(
        Stmt::forLoop(jv, i64(0), kept,
                      {Stmt::store(mx, j, constant(t, -std::numeric_limits<double>::infinity()))}));
    const LogSumExp at = logSumExp(mx, y, accY, x, t);
    for (auto& s : runNest(iv, ir, {at.maxStep}, false)) body.push_back(std::move(s));
    step = at.step;
    result = logSumExp(mx, j, load(out, j, t), x, t).result; // (at the result's element j)
  }
  body.push_back(Stmt::forLoop(jv, i64(0), kept, {Stmt::store(out, j, reduceInit(n.op, t))}));
  for (auto& s : runNest(iv, ir, {Stmt::store(out, y, step)}, false)) body.push_back(std::move(s));
  if (result) body.push_back(Stmt::forLoop(jv, i64(0), kept, {Stmt::store(out, j, result)}));
  return body;
}

std::optional<LoweredNode> lowerReduce(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  b.setKind("reduce");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) &&
      !((isInteger(t) || t == DType::Bool) && (n.op == "ReduceMax" || n.op == "ReduceMin")))
    no("a float input is needed (integers and bools: ReduceMax / ReduceMin)");
  // Symbolic sizes: the run's dims; the result's symbolic dims are the kept ones.
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id),
                             orr = runDims(o, n.outputs[0], staticDims(n.outputs[0], "output"));
  bool symbolic = false;
  for (const ExprPtr& e : ir) symbolic |= !isImm(e);
  std::vector<bool> red(id.size(), false);
  std::vector<int64_t> axes;
  Block check;
  const std::optional<std::vector<int64_t>> given = constInts(n, 1);
  if (n.hasInput(1) && !given) {
    for (const ExprPtr& e : orr) symbolic |= !isImm(e);
    if (symbolic) return b.finish(reduceByMask(n, b, o, id, ir, out, t), {}, o);
    const auto sets = axesFromShapes(n, id, staticDims(n.outputs[0], "output"));
    if (sets.size() > 1) {
      // The shapes leave the reduced dims open ([3,2,2] -> [3,2] is axis 1 or 2): one nest per
      // candidate, chosen by the run's axes; other axes reach the check of the first, which
      // reports them.
      const std::string mask = b.temp("axes_mask", DType::I64, {1});
      Block body = runtimeAxesMask(n, b, id, mask);
      Block chain = checkRuntimeAxes(n, b, id, sets[0], o);
      for (size_t c = sets.size(); c-- > 0;) {
        int64_t bits = 0; // the candidate's dims (all of size > 1: axesFromShapes)
        for (size_t d = 0; d < id.size(); ++d)
          if (sets[c][d]) bits |= int64_t(1) << d;
        Block then = checkRuntimeAxes(n, b, id, sets[c], o);
        for (auto& st : reduceNest(n, b, id, ir, sets[c], out, t)) then.push_back(std::move(st));
        chain = {Stmt::ifThen(cmp(Op::Eq, load(mask, intImm(0), DType::I64), intImm(bits)),
                              std::move(then), std::move(chain))};
      }
      for (auto& st : chain) body.push_back(std::move(st));
      return b.finish(std::move(body), {}, o);
    }
    red = sets[0];
    check = checkRuntimeAxes(n, b, id, red, o);
  } else {
    if (given) axes = *given;
    if (axes.empty()) {
      if (n.attrInt("noop_with_empty_axes") != 0) no("noop_with_empty_axes");
      red.assign(id.size(), true);
    }
    for (int64_t a : axes) red[normAxis(a, id.size(), n)] = true;
  }
  std::vector<ExprPtr> keptRun, outRun; // (static 1s aside)
  for (size_t d = 0; d < id.size(); ++d)
    if (!red[d] && asInt(ir[d]) != 1) keptRun.push_back(ir[d]);
  for (const ExprPtr& e : orr)
    if (asInt(e) != 1) outRun.push_back(e);
  if (!equalDims(keptRun, outRun)) no("the result's dims are not the kept dims of the input");
  for (auto& st : reduceNest(n, b, id, ir, red, out, t)) check.push_back(std::move(st));
  return b.finish(std::move(check), {}, o);
}

// ArgMax / ArgMin over one axis: a running best value (a temp row) and its index (the output), as
// the reference kernel: NaN ranks above every number, the first index of equal values wins (the
// last with select_last_index). Symbolic sizes: rows of the run's dims at the run's strides.
std::optional<LoweredNode> lowerArg(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  b.setKind("reduce");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  const DType t = n.inputs[0]->type.dtype;
  if (!isComputeFloat(t) && !isInteger(t)) no("a float or integer input is needed");
  if (id.empty()) no("a scalar input");
  const size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  if (id[axis] == 0) no("an empty axis");
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  { // the result: the input's run dims less the axis (or 1 there)
    const bool keep = n.attrInt("keepdims", 1) != 0;
    std::vector<ExprPtr> want;
    for (size_t d = 0; d < ir.size(); ++d)
      if (d != axis || keep) want.push_back(d == axis ? intImm(1) : ir[d]);
    if (!equalDims(runDims(o, n.outputs[0], staticDims(n.outputs[0], "output")), want))
      no("a result whose dims are not the input's less the axis");
  }
  const ExprPtr outer = product(ir, 0, axis), len = ir[axis], inner = product(ir, axis + 1);
  const bool isMax = n.op == "ArgMax", last = n.attrInt("select_last_index") != 0;
  std::string in = b.input(n.inputs[0]);
  std::string best = b.temp("best", t, {numel(id) / id[axis]});
  std::string ov = b.fresh("o"), iv = b.fresh("i"), jv = b.fresh("j"), cv = b.fresh("better");
  ExprPtr row = add(mul(var(ov), inner), var(iv));
  auto at = [&](ExprPtr j) {
    return add(add(mul(var(ov), mul(len, inner)), mul(j, inner)), var(iv));
  };
  auto greater = [&](ExprPtr a, ExprPtr c) { return greaterNanFirst(t, a, c); };
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
  for (auto& st : runNest({jv}, {len}, std::move(step), false)) body.push_back(std::move(st));
  return b.finish(runNest({ov, iv}, {outer, inner}, std::move(body), true), {}, o);
}

// Softmax / LogSoftmax at the sizes `ir` (the run's where symbolic, else immediates): per row of
// its length, the max, the exp-sum and the result in three plain passes.
std::optional<LoweredNode> lowerSoftmaxRows(const Node& n, FuncBuilder& b, const LowerOptions& o,
                                            bool logSoftmax, const std::vector<ExprPtr>& ir,
                                            size_t axis) {
  const Dims id = staticDims(n.inputs.at(0), "input");
  const DType t = n.outputs[0]->type.dtype;
  const Split3 bound = split3(id, axis, axis + 1);
  const ExprPtr outer = product(ir, 0, axis), len = ir[axis], inner = product(ir, axis + 1);
  const std::string out = b.output(0), in = b.input(n.inputs[0]);
  const std::string mx = b.temp("rowmax", t, {bound.outer * bound.inner}),
                    sm = b.temp("rowsum", t, {bound.outer * bound.inner});
  const std::string ov = b.fresh("o"), iv = b.fresh("i"), av = b.fresh("a");
  const ExprPtr row = add(mul(var(ov), inner), var(iv));
  const ExprPtr at = add(add(mul(var(ov), mul(len, inner)), mul(var(av), inner)), var(iv));
  const ExprPtr m = load(mx, row, t), su = load(sm, row, t), x = load(in, at, t);
  const double inf = std::numeric_limits<double>::infinity();
  // Per outer index, each pass over the axis with the inner dims innermost (contiguous, in
  // vectors): a Softmax over axis 1 of [1, 16, 4, A] (YOLOv8's DFL) had walked each row A apart.
  const int64_t w = vectorWidthFor(o, t, bound.inner);
  Block body = runNest(
      {iv}, {inner},
      {Stmt::store(mx, row, constant(t, -inf)), Stmt::store(sm, row, constant(t, 0))}, false, w);
  auto pass = [&](Block step) {
    const std::string jv = b.fresh("i");
    substitute(step, iv, var(jv));
    for (auto& st : runNest({av, jv}, {len, inner}, std::move(step), false, w))
      body.push_back(std::move(st));
  };
  pass({Stmt::store(mx, row, select(cmp(Op::Gt, x, m), x, m))});
  const std::string ex = b.fresh("ex");
  Block second = {Stmt::let(ex, call("exp", {sub(x, m)}))};
  if (!logSoftmax) second.push_back(Stmt::store(out, at, var(ex, t)));
  second.push_back(Stmt::store(sm, row, add(su, var(ex, t))));
  pass(std::move(second));
  pass({Stmt::store(out, at,
                    logSoftmax ? sub(sub(x, m), call("log", {su})) : div(load(out, at, t), su))});
  Schedule sch;
  sch["axis"] = static_cast<int64_t>(axis);
  sch["vector_width"] = w;
  return b.finish(runNest({ov}, {outer}, std::move(body), true), std::move(sch), o);
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
  // Symbolic sizes (the run's dims: an attention's [N, H, S, S] with S symbolic): rows of the
  // run's length at the run's strides, the plain passes (no lanes).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id),
                             orr = runDims(o, n.outputs[0], staticDims(n.outputs[0], "output"));
  if (!equalDims(ir, orr)) no("Softmax whose result has other symbolic sizes");
  const bool symbolic =
      std::any_of(ir.begin(), ir.end(), [](const ExprPtr& e) { return !isImm(e); });
  // (a fused root reads its prologue's temp, planned at the bound's sizes: not at the run's)
  if (symbolic && n.owner && n.owner->parent) no("a fused Softmax at symbolic sizes");
  // Over the last axis, with two vectors or more a row, the max and the sum in lanes (inLanes);
  // else the plain passes.
  const int64_t L = vectorWidthFor(o, t, s.len);
  const bool lanes = !symbolic && s.inner == 1 && L > 1 && s.len / L >= 2;
  if (!lanes) return lowerSoftmaxRows(n, b, o, logSoftmax, ir, axis);
  std::string mx = b.temp("rowmax", t, {s.outer}), sm = b.temp("rowsum", t, {s.outer});
  std::string ov = b.fresh("o"), a3 = b.fresh("a");
  ExprPtr row = var(ov);
  auto at = [&](const ExprPtr& k) { return add(mul(var(ov), intImm(s.len)), k); };
  ExprPtr m = load(mx, row, t), su = load(sm, row, t);
  const double inf = std::numeric_limits<double>::infinity();
  Block body = {Stmt::store(mx, row, constant(t, -inf)), Stmt::store(sm, row, constant(t, 0))};
  const std::string lv = b.fresh("l");
  auto x = [&](const ExprPtr& k) { return load(in, at(k), t); };
  auto keepMax = [&](const std::string& buf, const ExprPtr& at, const ExprPtr& v) {
    const ExprPtr cur = load(buf, at, t);
    return Stmt::store(buf, at, select(cmp(Op::Gt, v, cur), v, cur));
  };
  const std::string lm = b.temp("lanemax", t, {s.outer, L}),
                    ls = b.temp("lanesum", t, {s.outer, L});
  auto lane = [&](const ExprPtr& l) { return add(mul(var(ov), intImm(L)), l); };
  for (auto& st : nest({lv}, {L},
                       {Stmt::store(lm, lane(var(lv)), constant(t, -inf)),
                        Stmt::store(ls, lane(var(lv)), constant(t, 0))},
                       false, L))
    body.push_back(std::move(st));
  for (auto& st : inLanes(b, s.len, L, [&](const ExprPtr&l, const ExprPtr&k) {
         return Block{keepMax(lm, lane(l), x(k))};
       }))
    body.push_back(std::move(st));
  for (auto& st : nest({lv}, {L}, {keepMax(mx, row, load(lm, lane(var(lv)), t))}, false))
    body.push_back(std::move(st));
  // exp(x - max) stored (Softmax) and summed in the lanes.
  for (auto& st : inLanes(b, s.len, L, [&](const ExprPtr&l, const ExprPtr&k) {
         Block st = {Stmt::let(b.fresh("ex"), call("exp", {sub(x(k), m)}))};
         ExprPtr ev = var(st[0].name, t);
         if (!logSoftmax) st.push_back(Stmt::store(out, at(k), ev));
         st.push_back(Stmt::store(ls, lane(l), add(load(ls, lane(l), t), ev)));
         return st;
       }))
    body.push_back(std::move(st));
  for (auto& st :
       nest({lv}, {L}, {Stmt::store(sm, row, add(su, load(ls, lane(var(lv)), t)))}, false))
    body.push_back(std::move(st));
  const ExprPtr k3 = var(a3);
  ExprPtr fin = logSoftmax ? sub(sub(x(k3), m), call("log", {su})) : div(load(out, at(k3), t), su);
  for (auto& st : nest({a3}, {s.len}, {Stmt::store(out, at(k3), fin)}, false, L))
    body.push_back(std::move(st));
  Schedule sch;
  sch["axis"] = static_cast<int64_t>(axis);
  sch["vector_width"] = L;
  return b.finish(nest({ov}, {s.outer}, std::move(body), true), std::move(sch), o);
}

// LayerNormalization (with its optional Mean and InvStdDev outputs) and RMSNormalization (no
// mean, no bias: y = x / sqrt(mean(x^2) + eps) * scale), and InstanceNormalization and
// GroupNormalization (rows of N*C channels, or N*G groups of C/G channels, each normalized over its
// S = H*W... values, then scale and bias of the element's channel), as the reference kernels.
// Symbolic sizes: the rows and their lengths are the run's (an image's H and W, a length), every
// value at its run strides; the sums then take one scalar pass (the lanes need a static length).
std::optional<LoweredNode> lowerLayerNorm(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  const bool rms = n.op == "RMSNormalization", inst = n.op == "InstanceNormalization",
             group = n.op == "GroupNormalization";
  b.setKind(rms ? "rmsnorm" : inst || group ? "instancenorm" : "layernorm");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.empty()) no("a float input is needed");
  size_t axis = inst || group ? 2 : static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  if ((inst || group) && id.size() < 2) no("an input [N, C, ...] is needed");
  axis = std::min(axis, id.size());
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  if (!sameRunDims(id, runDims(o, n.outputs[0], id), ir))
    no("a result whose dims are not the input's");
  std::string meanOut, invOut; // LayerNormalization's statistics outputs, when asked for
  for (size_t k = 1; k < n.outputs.size() && !rms && !inst && !group; ++k) {
    if (!n.outputs[k]) continue;
    if (n.outputs[k]->type.dtype != t) no("Mean/InvStdDev in a stash type other than the input's");
    const Dims sd = staticDims(n.outputs[k], "Mean/InvStdDev");
    const std::vector<ExprPtr> sr = runDims(o, n.outputs[k], sd);
    for (size_t d = 0; d < sr.size() && d < axis; ++d)
      if (!equal(sr[d], ir[d])) no("Mean/InvStdDev whose dims are not the input's rows");
    (k == 1 ? meanOut : invOut) = b.output(k);
  }
  // Rows of `len` elements: the dims after the axis (their bounds `norm`, the run's `normRun`).
  ExprPtr outer = product(ir, 0, axis), len = product(ir, axis);
  int64_t rows = split3(id, axis, id.size()).outer; // at the bounds
  Dims norm(id.begin() + static_cast<std::ptrdiff_t>(axis), id.end());
  std::vector<ExprPtr> normRun(ir.begin() + static_cast<std::ptrdiff_t>(axis), ir.end());
  // Instance / group: one row per channel / group, its values one axis (the lanes below); the
  // scale and bias index of element k of row `ov` (per channel [C]).
  std::function<ExprPtr(const ExprPtr& ov, const ExprPtr& k)> channelOf;
  if (inst || group) {
    const int64_t C = id[1], G = group ? n.attrInt("num_groups") : C;
    if (G < 1 || C % G != 0) no("num_groups must divide the channels");
    const ExprPtr S = len;
    outer = mul(ir[0], intImm(G)), len = product({intImm(C / G), S});
    rows = id[0] * G, norm = {C / G * split3(id, 2, id.size()).len}, normRun = {len};
    if (isImm(outer)) outer = intImm(rows);
    channelOf = [C, G, S](const ExprPtr& ov, const ExprPtr& k) {
      ExprPtr c0 = mul(mod(ov, intImm(G)), intImm(C / G));
      return C == G ? c0
                    : add(c0, div(k, isImm(S) ? intImm(std::max<int64_t>(*asInt(S), 1))
                                              : max(S, intImm(1))));
    };
    for (size_t i : {1, 2})
      if (!n.hasInput(i) || numel(staticDims(n.inputs[i], "scale/bias")) != C)
        no("per-channel scale and bias are needed");
  }
  const std::vector<ExprPtr> normStride = stridesOf(normRun);
  // A scale / bias broadcast over the normalized dims: its element stride per dim (0: broadcast).
  auto param = [&](size_t i) -> std::pair<std::string, std::vector<ExprPtr>> {
    if (!n.hasInput(i)) return {"", {}};
    if (channelOf) return {b.input(n.inputs[i]), {}};
    Dims pd = staticDims(n.inputs[i], "scale/bias");
    if (pd.size() > norm.size()) no("scale/bias of a higher rank than the normalized shape");
    const std::vector<ExprPtr> pr = runDims(o, n.inputs[i], pd), ps = stridesOf(pr);
    std::vector<ExprPtr> st(norm.size(), intImm(0));
    size_t off = norm.size() - pd.size();
    for (size_t d = 0; d < pd.size(); ++d) {
      if (pd[d] != 1 && (pd[d] != norm[off + d] || !equal(pr[d], normRun[off + d])))
        no("scale/bias does not broadcast");
      if (pd[d] != 1) st[off + d] = ps[d];
    }
    return {b.input(n.inputs[i]), st};
  };
  std::string in = b.input(n.inputs[0]);
  auto [sc, scSt] = param(1);
  auto [bi, biSt] = rms ? std::pair<std::string, std::vector<ExprPtr>>{} : param(2);
  std::string mean = b.temp("mean", t, {rows}), var2 = b.temp("var", t, {rows});
  std::string ov = b.fresh("o");
  double eps = n.attrFloat("epsilon");
  std::vector<std::string> l1, l2, l3;
  for (size_t d = 0; d < norm.size(); ++d) {
    l1.push_back(b.fresh("a" + std::to_string(d)));
    l2.push_back(b.fresh("b" + std::to_string(d)));
    l3.push_back(b.fresh("c" + std::to_string(d)));
  }
  auto at = [&](const std::vector<std::string>& l) {
    return add(mul(var(ov), len), runIndex(vars(l), normStride));
  };
  ExprPtr mu = load(mean, var(ov), t), vr = load(var2, var(ov), t);
  Block body = {Stmt::store(mean, var(ov), constant(t, 0)),
                Stmt::store(var2, var(ov), constant(t, 0))};
  // Over one static axis holding two vectors or more, the sums in lanes (inLanes); else one
  // scalar pass.
  const int64_t L = vectorWidthFor(o, t, norm.empty() ? 1 : norm.back());
  const bool lanes = norm.size() == 1 && isImm(len) && L > 1 && *asInt(len) / L >= 2;
  const std::string ls = lanes ? b.temp("lanesum", t, {rows, L}) : "";
  // The sum over the row of term(k) (k the element's index in the row) added to dst.
  auto rowSum = [&](const std::string& dst, const std::function<ExprPtr(ExprPtr)>& term,
                    const std::vector<std::string>& l) {
    if (!lanes)
      return runNest(l, normRun,
                     {Stmt::store(dst, var(ov),
                                  add(load(dst, var(ov), t), term(runIndex(vars(l), normStride))))},
                     false);
    const std::string lv = b.fresh("l");
    auto lane = [&](const ExprPtr& x) { return add(mul(var(ov), intImm(L)), x); };
    Block st = nest({lv}, {L}, {Stmt::store(ls, lane(var(lv)), constant(t, 0))}, false, L);
    for (auto& x : inLanes(b, *asInt(len), L, [&](const ExprPtr&ln, const ExprPtr&k) {
           return Block{Stmt::store(ls, lane(ln), add(load(ls, lane(ln), t), term(k)))};
         }))
      st.push_back(std::move(x));
    for (auto& x :
         nest({lv}, {L},
              {Stmt::store(dst, var(ov), add(load(dst, var(ov), t), load(ls, lane(var(lv)), t)))},
              false))
      st.push_back(std::move(x));
    return st;
  };
  auto elem = [&](const ExprPtr& k) { return load(in, add(mul(var(ov), len), k), t); };
  const ExprPtr lenF = floatOf(t, len);
  if (!rms) { // RMS: the mean stays 0
    for (auto& st : rowSum(mean, elem, l1)) body.push_back(std::move(st));
    body.push_back(Stmt::store(mean, var(ov), div(mu, lenF)));
  }
  for (auto& st : rowSum(
           var2,
           [&](const ExprPtr& k) {
             const ExprPtr dx = sub(elem(k), mu);
             return mul(dx, dx);
           },
           l2))
    body.push_back(std::move(st));
  // var <- 1 / sqrt(var / len + eps)
  body.push_back(Stmt::store(
      var2, var(ov), div(constant(t, 1), call("sqrt", {add(div(vr, lenF), constant(t, eps))}))));
  if (!meanOut.empty()) body.push_back(Stmt::store(meanOut, var(ov), mu));
  if (!invOut.empty()) body.push_back(Stmt::store(invOut, var(ov), vr));
  ExprPtr y = mul(sub(load(in, at(l3), t), mu), vr);
  auto paramAt = [&](const std::vector<ExprPtr>& st) {
    return channelOf ? channelOf(var(ov), var(l3[0])) : runIndex(vars(l3), st);
  };
  if (!sc.empty()) y = mul(y, load(sc, paramAt(scSt), t));
  if (!bi.empty()) y = add(y, load(bi, paramAt(biSt), t));
  for (auto& st : runNest(l3, normRun, {Stmt::store(out, at(l3), y)}, false,
                          vectorWidthFor(o, t, norm.empty() ? 1 : norm.back())))
    body.push_back(std::move(st));
  Schedule sch;
  sch["axis"] = static_cast<int64_t>(axis);
  return b.finish(runNest({ov}, {outer}, std::move(body), true), std::move(sch), o);
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
  if (op == "Einsum") return lowerEinsum(n, b, o);
  if (op == "TopK") return lowerTopK(n, b, o);
  if (op == "LRN") return lowerLrn(n, b, o);
  if (op == "LogSoftmax") return lowerSoftmax(n, b, o, true);
  if (op == "LayerNormalization" || op == "RMSNormalization" || op == "InstanceNormalization" ||
      op == "GroupNormalization")
    return lowerLayerNorm(n, b, o);
  return std::nullopt;
}

std::optional<LoweredNode> lowerReduceFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "BatchNormalization") return lowerBatchNorm(n, name, o);
  if (n.op == "MeanVarianceNormalization") return lowerMvn(n, name, o);
  FuncBuilder b(n, name, "reduce");
  return lowerReductionInto(n, b, o);
}

} // namespace aicc::loop::detail
