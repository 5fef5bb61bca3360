// Ops whose every output element is one input element (or a constant, or an index expression)
// found by index arithmetic: Slice, Tile, DepthToSpace, SpaceToDepth, EyeLike, OneHot,
// ConstantOfShape and Range, each one gather nest. Shape-like inputs given at run time (Slice's
// starts/ends/axes/steps, Tile's repeats, OneHot's depth, ConstantOfShape's shape, the count
// Range's start/limit/delta give) are checked against the compiled shape by the runtime
// (@check_values_i64).
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

// The run-time int64 input `input` must hold `want` (what the static output shape implies): a
// constant is compared now, anything else by the runtime before the nest.
Block checkShapeInput(FuncBuilder& b, const Node& n, size_t input, const std::vector<ExprPtr>& want,
                      const LowerOptions& o) {
  const Value* v = n.inputs.at(input);
  if (auto c = constInts(n, input)) {
    bool same = c->size() == want.size();
    for (size_t k = 0; same && k < want.size(); ++k) same = asInt(want[k]) == (*c)[k];
    if (!same) no("input " + std::to_string(input) + " disagrees with the output shape");
    return {};
  }
  if (v->type.dtype != DType::I64) no("a run-time shape input that is not int64");
  if (!o.runtimeKernels) no("a shape input given at run time (checked by the runtime only)");
  return {checkValuesI64(b.input(v), want)};
}

// ConstantOfShape's run-time shape input: the result's dims, written where they are data
// symbols (sizes set at run time), checked against the run's dims everywhere.
Block shapeOfInput(FuncBuilder& b, const Node& n, const Dims& od, const LowerOptions& o) {
  if (n.inputs.at(0)->constant || !o.setDataDim)
    return checkShapeInput(b, n, 0, runDims(o, n.outputs[0], od), o);
  if (n.inputs[0]->type.dtype != DType::I64) no("a run-time shape input that is not int64");
  if (!o.runtimeKernels) no("a shape input given at run time (checked by the runtime only)");
  return setOrCheckDims(o, n.outputs[0], b.input(n.inputs[0]), od);
}

// Slice with starts, ends, axes or steps given at run time: each dim's first element and step
// are computed by the runtime (ONNX's normalization and clamping) into small temps, and the
// element counts they imply are checked against the compiled output shape (@check_values_i64),
// so other values are the run's error, not a wrong answer; the counts of dims that are data
// symbols are their values instead.
std::optional<LoweredNode> lowerSliceAtRunTime(const Node& n, FuncBuilder& b, const Dims& od,
                                               const Dims& id, const LowerOptions& o) {
  if (!o.runtimeKernels) no("non-constant starts/ends (checked by the runtime only)");
  const int64_t K = numel(staticDims(n.inputs.at(1), "starts")), rank = int64_t(id.size());
  for (size_t i = 2; i < 5; ++i)
    if (n.hasInput(i) && numel(staticDims(n.inputs[i], "slice input")) != K)
      no("inconsistent inputs");
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.hasInput(i) && n.inputs[i]->type.dtype != DType::I64 &&
        n.inputs[i]->type.dtype != DType::I32)
      no("int32/int64 starts, ends, axes and steps are needed");
  std::string begin = b.temp("begin", DType::I64, {rank}),
              step = b.temp("step", DType::I64, {rank});
  std::string count = b.temp("count", DType::I64, {rank});
  auto i64 = [](int64_t v) { return intImm(v); };
  auto clamp = [&](ExprPtr v, int64_t lo, ExprPtr hi) { return max(i64(lo), min(v, hi)); };
  // Symbolic sizes: the input's run dims (the normalization and clamping use them).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  Block pre;
  for (int64_t d = 0; d < rank; ++d) {
    ExprPtr first = i64(0), st = i64(1), cnt = ir[size_t(d)];
    for (int64_t k = 0; k < K; ++k) { // the last k naming dim d wins
      ExprPtr a = n.hasInput(3) ? loadI64(b, n.inputs[3], k) : i64(k);
      a = select(cmp(Op::Lt, a, i64(0)), add(a, i64(rank)), a);
      const ExprPtr dim = ir[size_t(d)];
      ExprPtr s = n.hasInput(4) ? loadI64(b, n.inputs[4], k) : i64(1),
              sv = loadI64(b, n.inputs[1], k), ev = loadI64(b, n.inputs[2], k);
      sv = select(cmp(Op::Lt, sv, i64(0)), add(sv, dim), sv);
      ev = select(cmp(Op::Lt, ev, i64(0)), add(ev, dim), ev);
      const ExprPtr up = cmp(Op::Gt, s, i64(0));
      ExprPtr f = select(up, clamp(sv, 0, dim), clamp(sv, 0, sub(dim, i64(1))));
      ExprPtr e = select(up, clamp(ev, 0, dim), clamp(ev, -1, sub(dim, i64(1))));
      // ceil(span / |step|) for a positive span, else 0 (a zero step never passes the check)
      ExprPtr span = select(up, sub(e, f), sub(f, e)), mag = max(select(up, s, neg(s)), i64(1));
      ExprPtr c = select(cmp(Op::Gt, span, i64(0)), div(add(span, sub(mag, i64(1))), mag), i64(0));
      c = select(cmp(Op::Eq, s, i64(0)), i64(-1), c);
      const ExprPtr here = cmp(Op::Eq, a, i64(d));
      first = select(here, f, first), st = select(here, s, st), cnt = select(here, c, cnt);
    }
    pre.push_back(Stmt::store(begin, i64(d), first));
    pre.push_back(Stmt::store(step, i64(d), st));
    pre.push_back(Stmt::store(count, i64(d), cnt));
  }
  // Dims only the run's values decide (data symbols, passes/data_dims.h): each count is its
  // value (a negative one, from a zero step, then fails the check).
  for (size_t d = 0; d < od.size() && o.setDataDim; ++d)
    if (auto set =
            o.setDataDim(n.outputs[0], d, max(load(count, i64(int64_t(d)), DType::I64), i64(0))))
      pre.push_back(std::move(*set));
  pre.push_back(checkValuesI64(count, runDims(o, n.outputs[0], od)));
  std::string in = b.input(n.inputs[0]);
  const std::string out = b.output(0);
  DType t = n.outputs[0]->type.dtype;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx;
        for (size_t d = 0; d < v.size(); ++d)
          idx.push_back(add(load(begin, i64(int64_t(d)), DType::I64),
                            mul(v[d], load(step, i64(int64_t(d)), DType::I64))));
        return load(in, runIndex(idx, stridesOf(ir)), t);
      },
      o, {}, std::move(pre));
}

std::optional<LoweredNode> lowerSlice(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  auto starts = constInts(n, 1), ends = constInts(n, 2);
  if (!starts || !ends || (n.hasInput(3) && !constInts(n, 3)) ||
      (n.hasInput(4) && !constInts(n, 4)))
    return lowerSliceAtRunTime(n, b, od, id, o);
  std::string out = b.output(0);
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  for (size_t k = 0; k < axes.size(); ++k) axes[k] = static_cast<int64_t>(k);
  if (n.hasInput(3)) axes = *constInts(n, 3);
  if (n.hasInput(4)) steps = *constInts(n, 4);
  if (axes.size() != starts->size() || steps.size() != starts->size()) no("inconsistent inputs");
  std::vector<ExprPtr> begin(id.size(), intImm(0));
  std::vector<int64_t> step(id.size(), 1);
  // Symbolic sizes: the run's strides; along a symbolic dim the first element follows the run's
  // size (ONNX's normalization and clamping of the start; the count is the result's run dim).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), orr = runDims(o, n.outputs[0], od);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = normAxis(axes[k], id.size(), n), dim = id[a], st = steps[k];
    if (st == 0) no("a zero step");
    int64_t s = (*starts)[k];
    if (!isImm(ir[size_t(a)])) {
      const ExprPtr d = ir[size_t(a)];
      const ExprPtr first = s < 0 ? add(intImm(s), d) : intImm(s);
      begin[a] = max(intImm(0), min(first, st > 0 ? d : sub(d, intImm(1))));
      step[a] = st;
      continue;
    }
    if (s < 0) s += dim;
    s = st > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    begin[a] = intImm(s), step[a] = st;
  }
  const auto is = stridesOf(ir);
  DType t = n.outputs[0]->type.dtype;
  std::string in = b.input(n.inputs[0]);
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx;
        for (size_t d = 0; d < v.size(); ++d)
          idx.push_back(add(begin[d], mul(v[d], intImm(step[d]))));
        return load(in, runIndex(idx, is), t);
      },
      o);
}

// Tile: out[v] = in[v mod input dims]; repeats = output dims / input dims.
std::optional<LoweredNode> lowerTile(const Node& n, const std::string& name,
                                     const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  if (od.size() != id.size()) no("output rank differs from the input's");
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  DType t = n.outputs[0]->type.dtype;
  if (!n.inputs.at(1)->constant && o.setDataDim) {
    // Repeats given at run time with symbolic sizes: the result's dims from them (written where
    // they are sizes set at run time), each output index read modulo the input's run dim.
    if (!o.runtimeKernels) no("repeats given at run time (checked by the runtime only)");
    const std::string dims = b.temp("dims", DType::I64, {std::max<int64_t>(int64_t(od.size()), 1)});
    Block pre;
    for (size_t k = 0; k < od.size(); ++k)
      pre.push_back(
          Stmt::store(dims, intImm(int64_t(k)), mul(ir[k], loadI64(b, n.inputs[1], int64_t(k)))));
    for (Stmt& st : setOrCheckDims(o, n.outputs[0], dims, od)) pre.push_back(std::move(st));
    if (o.sizesOnly) return b.finish(std::move(pre), {}, o);
    const std::string in = b.input(n.inputs[0]);
    return gatherNest(
        b, out, od,
        [&](const std::vector<ExprPtr>& v) {
          std::vector<ExprPtr> idx;
          for (size_t k = 0; k < v.size(); ++k)
            idx.push_back(binary(Op::Mod, v[k], max(ir[k], intImm(1))));
          return load(in, runIndex(idx, stridesOf(ir)), t);
        },
        o, {}, std::move(pre));
  }
  std::vector<int64_t> repeats;
  for (size_t k = 0; k < od.size(); ++k) {
    if (id[k] == 0 ? od[k] != 0 : od[k] % id[k] != 0) no("output dims are not input multiples");
    repeats.push_back(id[k] == 0 ? 0 : od[k] / id[k]);
  }
  if (numel(od) == 0) no("an empty output");
  Block check = checkShapeInput(b, n, 1, runDims({}, nullptr, repeats), o);
  std::string in = b.input(n.inputs[0]);
  // Symbolic sizes: the output's run dims drive the copy (gatherNest), the input read at its run
  // dims and strides.
  Schedule s;
  s["repeats"] = repeats;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx;
        for (size_t k = 0; k < v.size(); ++k)
          idx.push_back(repeats[k] == 1 ? v[k] : binary(Op::Mod, v[k], ir[k]));
        return load(in, runIndex(idx, stridesOf(ir)), t);
      },
      o, std::move(s), std::move(check));
}

// DepthToSpace (DCR: channel (i * b + j) * C' + c; CRD: c * b * b + i * b + j, for output pixel
// (h * b + i, w * b + j)) and SpaceToDepth (output channel (i * b + j) * C + c from input pixel
// (y * b + i, x * b + j)), as the reference's reshape-transpose-reshape.
std::optional<LoweredNode> lowerBlocks(const Node& n, const std::string& name,
                                       const LowerOptions& o, bool toSpace) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  const int64_t bs = n.attrInt("blocksize");
  if (od.size() != 4 || id.size() != 4 || bs < 1) no("a 4-D input and a positive blocksize");
  const bool crd = toSpace && n.attrString("mode") == "CRD";
  if (toSpace && !crd && n.attrString("mode") != "DCR") no("an unknown mode");
  std::string in = b.input(n.inputs[0]);
  DType t = n.outputs[0]->type.dtype;
  auto c = [](int64_t v) { return intImm(v); };
  // Symbolic sizes (an image's H and W): the output's run dims drive the nest (gatherNest), the
  // input is read at its run strides.
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), orr = runDims(o, n.outputs[0], od);
  Schedule s;
  s["blocksize"] = bs;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        ExprPtr ch, y, x;
        if (toSpace) {
          const ExprPtr C = orr[1];
          ExprPtr i = binary(Op::Mod, v[2], c(bs)), j = binary(Op::Mod, v[3], c(bs));
          ExprPtr ij = add(mul(i, c(bs)), j);
          ch = crd ? add(mul(v[1], c(bs * bs)), ij) : add(mul(ij, C), v[1]);
          y = div(v[2], c(bs)), x = div(v[3], c(bs));
        } else {
          const ExprPtr C = ir[1];
          ExprPtr ij = div(v[1], C); // i * b + j
          ch = binary(Op::Mod, v[1], C);
          y = add(mul(v[2], c(bs)), div(ij, c(bs)));
          x = add(mul(v[3], c(bs)), binary(Op::Mod, ij, c(bs)));
        }
        return load(in, runIndex({v[0], ch, y, x}, stridesOf(ir)), t);
      },
      o, std::move(s));
}

// OneHot: values[1] where the index (negative ones from the end) equals the position along
// `axis`, else values[0]. The depth given at run time (any numeric type) is checked against the
// compiled output dim; non-finite float indices match nothing, as in the reference.
std::optional<LoweredNode> lowerOneHot(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), xd = staticDims(n.inputs.at(0), "indices");
  if (od.size() != xd.size() + 1) no("output rank is not the indices' + 1");
  if (numel(staticDims(n.inputs.at(1), "depth")) != 1 ||
      numel(staticDims(n.inputs.at(2), "values")) != 2)
    no("depth of one element and two values are needed");
  const size_t axis = size_t(normAxis(n.attrInt("axis"), od.size(), n));
  const int64_t depth = od[axis];
  const DType it = n.inputs[0]->type.dtype, t = n.outputs[0]->type.dtype;
  if (!isFloat(it) && !isInteger(it)) no("numeric indices are needed");
  Block pre;
  if (auto c = constInts(n, 1)) {
    if ((*c)[0] != depth) no("depth disagrees with the output shape");
  } else {
    if (!o.runtimeKernels) no("a depth given at run time (checked by the runtime only)");
    const std::string d = b.temp("depth", DType::I64, {1});
    pre.push_back(Stmt::store(d, intImm(0), loadI64(b, n.inputs[1], 0)));
    pre.push_back(checkValuesI64(d, std::vector<int64_t>{depth}));
  }
  std::string ind = b.input(n.inputs[0]), vals = b.input(n.inputs[2]);
  Schedule s;
  s["depth"] = depth;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> xi(v.begin(), v.end());
        const ExprPtr pos = xi[axis];
        xi.erase(xi.begin() + std::ptrdiff_t(axis));
        ExprPtr x = load(ind, linearIndex(xi, strides(xd)), it), k = cast(DType::I64, x);
        if (isFloat(it)) // NaN and +-inf: never a position (the cast would give 0 or a bound)
          k = select(cmp(Op::Lt, call("abs", {x}), constant(it, 1e15)), k, intImm(-depth - 1));
        k = select(cmp(Op::Lt, k, intImm(0)), add(k, intImm(depth)), k);
        return select(cmp(Op::Eq, k, pos), load(vals, intImm(1), t), load(vals, intImm(0), t));
      },
      o, std::move(s), std::move(pre));
}

// EyeLike: ones where column - row == k, zeros elsewhere, in the output's type.
std::optional<LoweredNode> lowerEyeLike(const Node& n, const std::string& name,
                                        const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output");
  if (od.size() != 2) no("a 2-D input");
  const int64_t k = n.attrInt("k");
  DType t = n.outputs[0]->type.dtype;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        return select(cmp(Op::Eq, sub(v[1], v[0]), intImm(k)), constant(t, 1), constant(t, 0));
      },
      o);
}

// ConstantOfShape: the `value` attribute (default float 0) at every element; the shape input,
// when given at run time, must equal the compiled output shape (@check_values_i64).
std::optional<LoweredNode> lowerConstantOfShape(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output");
  const DType t = n.outputs[0]->type.dtype;
  double v = 0;
  if (const Attribute* a = n.attr("value")) {
    const Tensor& tv = std::get<Tensor>(a->v);
    if (tv.numel() != 1 || tv.dtype() != t) no("a value of one element in the output's type");
    v = tv.getF64(0);
    if (isInteger(t) && int64_t(v) != tv.getI64(0)) no("an integer value beyond 2^53");
  }
  // An empty output is a nest of extent 0 (its shape input still checked).
  Block check = od.empty() ? Block{} : shapeOfInput(b, n, od, o);
  return gatherNest(
      b, out, od, [&](const std::vector<ExprPtr>&) { return constant(t, v); }, o, {},
      std::move(check));
}

// Range: start + i * delta (in f64 for floats, i64 for integers, as the reference), i below the
// compiled length, which the runtime checks against the count the inputs give (max(0,
// ceil((limit - start) / delta)); a zero delta or a non-finite count checks as -1, an error).
std::optional<LoweredNode> lowerRange(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output");
  if (od.size() != 1) no("a 1-D output");
  for (size_t i = 0; i < 3; ++i)
    if (numel(staticDims(n.inputs.at(i), "range input")) != 1) no("scalar start, limit, delta");
  if (!o.runtimeKernels) no("a length given by run-time values (checked by the runtime only)");
  const DType t = n.outputs[0]->type.dtype, w = isFloat(t) ? DType::F64 : DType::I64;
  if (!isFloat(t) && !isInteger(t)) no("a numeric type");
  auto in = [&](size_t i) { return cast(w, load(b.input(n.inputs[i]), intImm(0), t)); };
  const ExprPtr start = in(0), limit = in(1), delta = in(2);
  const ExprPtr zero = constant(w, 0), one = constant(w, 1), bad = intImm(-1);
  const ExprPtr zeroDelta = cmp(Op::Eq, delta, zero), safe = select(zeroDelta, one, delta);
  ExprPtr count;
  if (w == DType::F64) {
    const ExprPtr q = call("ceil", {div(sub(limit, start), safe)});
    count = select(cmp(Op::Lt, call("abs", {q}), constant(w, 1e15)),
                   max(intImm(0), cast(DType::I64, q)), bad);
  } else { // truncating division, rounded away from zero as the reference's
    const ExprPtr up = select(cmp(Op::Gt, delta, zero), sub(delta, one), add(delta, one));
    count = max(intImm(0), div(add(sub(limit, start), up), safe));
  }
  const std::string c = b.temp("count", DType::I64, {1});
  Block pre = {Stmt::store(c, intImm(0), select(zeroDelta, bad, count))};
  for (Stmt& st : setOrCheckDims(o, n.outputs[0], c, od)) pre.push_back(std::move(st));
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& i) { return cast(t, add(start, mul(cast(w, i[0]), delta))); },
      o, {}, std::move(pre));
}

} // namespace

std::optional<LoweredNode> lowerRearrange(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  if (n.op == "Slice") return lowerSlice(n, name, o);
  if (n.op == "Tile") return lowerTile(n, name, o);
  if (n.op == "DepthToSpace") return lowerBlocks(n, name, o, true);
  if (n.op == "SpaceToDepth") return lowerBlocks(n, name, o, false);
  if (n.op == "EyeLike") return lowerEyeLike(n, name, o);
  if (n.op == "OneHot") return lowerOneHot(n, name, o);
  if (n.op == "ConstantOfShape") return lowerConstantOfShape(n, name, o);
  if (n.op == "Range") return lowerRange(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
