// Data movement as loop nests: Transpose, Concat, Gather, GatherElements (indices checked at run
// time), Trilu, ScatterND (every reduction), Pad (constant/edge/reflect/wrap; pads given at run
// time checked against the compiled shape), Resize (nearest and linear), and the view ops
// Reshape/Flatten/Squeeze/Unsqueeze as copies marked `kind = "alias"` (the memory planner makes
// them views; codegen can drop the copy).
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

// A Reshape's result dims from its run-time shape input (0 keeps the input's dim unless
// allowzero, -1 takes the elements left), into i64 temp `dims`, and their product checked against
// the input's elements: the result's data symbols written (setOrCheckDims).
Block reshapeDims(FuncBuilder& b, const Node& n, const Dims& od, const std::vector<ExprPtr>& ie,
                  const LowerOptions& o) {
  const Value* shape = n.inputs.at(1);
  if (!isInteger(shape->type.dtype)) no("a shape that is not integer");
  const bool allowZero = n.attrInt("allowzero", 0) != 0;
  const int64_t r = int64_t(od.size());
  const std::string dims = b.temp("dims", DType::I64, {std::max<int64_t>(r, 1)}),
                    counts = b.temp("elements", DType::I64, {1});
  Block pre;
  std::vector<ExprPtr> given;
  ExprPtr known = intImm(1);
  for (int64_t d = 0; d < r; ++d) {
    ExprPtr v = loadI64(b, shape, d);
    if (!allowZero)
      v = select(cmp(Op::Eq, v, intImm(0)), d < int64_t(ie.size()) ? ie[size_t(d)] : intImm(-2), v);
    given.push_back(v);
    known = mul(known, select(cmp(Op::Eq, v, intImm(-1)), intImm(1), v));
  }
  const ExprPtr total = product(ie);
  const std::string k = b.fresh("known");
  pre.push_back(Stmt::let(k, known));
  const ExprPtr rest =
      select(cmp(Op::Gt, var(k), intImm(0)), div(total, max(var(k), intImm(1))), intImm(-2));
  ExprPtr all = intImm(1);
  for (int64_t d = 0; d < r; ++d) {
    const ExprPtr v = select(cmp(Op::Eq, given[size_t(d)], intImm(-1)), rest, given[size_t(d)]);
    pre.push_back(Stmt::store(dims, intImm(d), v));
    all = mul(all, load(dims, intImm(d), DType::I64));
  }
  for (Stmt& st : setOrCheckDims(o, n.outputs[0], dims, od)) pre.push_back(std::move(st));
  pre.push_back(Stmt::store(counts, intImm(0), all)); // (a shape of other elements: an error)
  pre.push_back(checkValuesI64(counts, {total}));
  return pre;
}

// Expand's result dims from its run-time shape input and its input's run dims as numpy
// broadcasts them (a 1 takes the other; two others differing: -1, the run's error), into an i64
// temp, written where they are sizes set at run time and checked (setOrCheckDims).
Block expandDims(FuncBuilder& b, const Node& n, const Dims& od, const std::vector<ExprPtr>& ie,
                 const LowerOptions& o) {
  const Value* shape = n.inputs.at(1);
  const Dims sd = staticDims(shape, "shape");
  if (sd.size() != 1 || !isInteger(shape->type.dtype)) no("a shape that is not 1-D integer");
  const int64_t r = int64_t(od.size()), k = sd[0], xr = int64_t(ie.size());
  if (k > r || xr > r) no("a result of lower rank than its shape or input");
  if (!o.runtimeKernels) no("a shape given at run time (checked by the runtime only)");
  const std::string dims = b.temp("dims", DType::I64, {std::max<int64_t>(r, 1)});
  Block pre;
  for (int64_t d = 0; d < r; ++d) {
    const ExprPtr s = d >= r - k ? loadI64(b, shape, d - (r - k)) : intImm(1),
                  x = d >= r - xr ? ie[size_t(d - (r - xr))] : intImm(1);
    const ExprPtr fits = binary(Op::Or, cmp(Op::Eq, x, intImm(1)), cmp(Op::Eq, x, s));
    pre.push_back(Stmt::store(dims, intImm(d),
                              select(cmp(Op::Eq, s, intImm(1)), x, select(fits, s, intImm(-1)))));
  }
  for (Stmt& st : setOrCheckDims(o, n.outputs[0], dims, od)) pre.push_back(std::move(st));
  return pre;
}

// Expand with its shape given at run time (the shape checked against the result's dims, or the
// sizes it sets computed: LowerOptions::sizesOnly), or at run sizes that do not say which dims
// broadcast: a gather nest whose input index is clamped into the input's run dims (0 along its
// dims of 1 in this run). Other
// Expands are elementwise (the Lowerer's broadcast): nullopt here.
std::optional<LoweredNode> lowerExpand(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  const Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  const std::vector<ExprPtr> ie = runDims(o, n.inputs[0], id), oe = runDims(o, n.outputs[0], od);
  const bool runShape = !n.inputs.at(1)->constant && o.runtimeKernels;
  if (id.size() > od.size() || (!runShape && !o.sizesOnly && sameRunDims(id, ie, oe)))
    return std::nullopt;
  FuncBuilder b(n, name, "data");
  Block pre = runShape || o.sizesOnly ? expandDims(b, n, od, ie, o) : Block{};
  if (o.sizesOnly) return b.finish(std::move(pre), {}, o);
  const std::string in = b.input(n.inputs[0]), out = b.output(0);
  const size_t off = od.size() - id.size();
  const DType t = n.outputs[0]->type.dtype;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx;
        for (size_t j = 0; j < id.size(); ++j) // (a dim of 1: 0; else the checked same size)
          idx.push_back(clampIndex(v[off + j], ie[j]));
        return load(in, runIndex(idx, stridesOf(ie)), t);
      },
      o, {}, std::move(pre));
}

std::optional<LoweredNode> lowerAlias(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  FuncBuilder b(n, name, "alias");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  std::string in = b.input(n.inputs.at(0));
  // Symbolic sizes: the run's elements; a Reshape's sizes set at run time from its shape input.
  const std::vector<ExprPtr> oe = runDims(o, n.outputs[0], od), ie = runDims(o, n.inputs[0], id);
  Block pre;
  if (n.op == "Reshape" && n.hasInput(1) && !n.inputs[1]->constant && o.setDataDim)
    pre = reshapeDims(b, n, od, ie, o);
  if (o.sizesOnly) return b.finish(std::move(pre), {}, o);
  // (the run checks both counts equal; the smaller bounds the copy where a side has a bound)
  const ExprPtr total =
      equal(product(ie), product(oe)) ? product(oe) : min(product(ie), product(oe));
  if (isImm(product(ie)) && isImm(product(oe)) && numel(id) != numel(od))
    no("element counts differ");
  DType t = n.outputs[0]->type.dtype;
  std::string i = b.fresh("i");
  Block body = std::move(pre);
  for (Stmt& st : runNest({i}, {total}, {Stmt::store(out, var(i), load(in, var(i), t))}, true,
                          vectorWidthFor(o, t, numel(od))))
    body.push_back(std::move(st));
  Schedule s;
  s["view"] = 1;
  return b.finish(std::move(body), std::move(s), o);
}

std::optional<LoweredNode> lowerTranspose(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  std::string in = b.input(n.inputs[0]);
  std::vector<int64_t> perm(id.size());
  for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(perm.size() - 1 - k);
  perm = n.attrInts("perm", perm);
  if (perm.size() != id.size()) no("perm of the wrong length");
  DType t = n.outputs[0]->type.dtype;
  Schedule s;
  s["perm"] = perm;
  if (o.runDim) { // symbolic dims: extents and strides of the run
    const auto ie = runDims(o, n.inputs[0], id), oe = runDims(o, n.outputs[0], od);
    const auto is = stridesOf(ie), os = stridesOf(oe);
    std::vector<ExprPtr> st(od.size());
    std::vector<std::string> vs;
    for (size_t k = 0; k < od.size(); ++k) {
      st[k] = is.at(size_t(normAxis(perm[k], id.size(), n)));
      vs.push_back(b.fresh("i" + std::to_string(k)));
    }
    const int64_t w = od.empty() ? 1 : vectorWidthFor(o, t, od.back());
    s["vector_width"] = w;
    const auto vv = vars(vs);
    return b.finish(runNest(vs, oe,
                            {Stmt::store(out, runIndex(vv, os), load(in, runIndex(vv, st), t))},
                            true, w),
                    std::move(s), o);
  }
  auto is = strides(id);
  std::vector<int64_t> st(od.size());
  for (size_t k = 0; k < od.size(); ++k) st[k] = is.at(normAxis(perm[k], id.size(), n));
  return gatherNest(
      b, out, od, [&](const std::vector<ExprPtr>& v) { return load(in, linearIndex(v, st), t); }, o,
      s);
}

std::optional<LoweredNode> lowerConcat(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output");
  int64_t axis = normAxis(n.attrInt("axis"), od.size(), n);
  DType t = n.outputs[0]->type.dtype;
  Block body;
  int64_t offset = 0;
  // Symbolic sizes: each input a block copy of `outer` runs of `inner` elements, at the run's
  // sizes (its place along the axis: the sum of the inputs' run dims before it).
  const std::vector<ExprPtr> ore = runDims(o, n.outputs[0], od);
  bool symbolic = false;
  std::vector<std::vector<ExprPtr>> irs;
  for (const Value* v : n.inputs) {
    irs.push_back(v ? runDims(o, v, staticDims(v, "input")) : std::vector<ExprPtr>{});
    for (const ExprPtr& e : irs.back()) symbolic |= !isImm(e);
  }
  if (symbolic) {
    ExprPtr at = intImm(0); // along the axis
    const ExprPtr outBlock = product(ore, size_t(axis)), after = product(ore, size_t(axis) + 1);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (!n.inputs[k]) continue;
      const std::vector<ExprPtr>& ir = irs[k];
      if (ir.size() != ore.size()) no("inputs of different ranks");
      for (size_t d = 0; d < ir.size(); ++d)
        if (int64_t(d) != axis && !equal(ir[d], ore[d]))
          no("an input whose dims differ from the output's");
      const ExprPtr outer = product(ir, 0, size_t(axis)), inner = product(ir, size_t(axis));
      const std::string in = b.input(n.inputs[k]), i0 = b.fresh("i0"), i1 = b.fresh("i1");
      ExprPtr oi = add(add(mul(var(i0), outBlock), mul(at, after)), var(i1));
      for (auto& st :
           runNest({i0, i1}, {outer, inner},
                   {Stmt::store(out, oi, load(in, add(mul(var(i0), inner), var(i1)), t))}, true,
                   vectorWidthFor(o, t, 1 << 20)))
        body.push_back(std::move(st));
      at = add(at, ir[size_t(axis)]);
    }
    Schedule s;
    s["axis"] = axis;
    return b.finish(std::move(body), std::move(s), o);
  }
  auto os = strides(od);
  // Each input is a block copy: `outer` runs (the dims before the axis) of `inner` contiguous
  // elements. With one run (batch 1, or axis 0) the copy is one flat loop, split for the threads
  // (flatSpace); otherwise the runs are the parallel loop.
  const int64_t lanes = vectorWidthFor(o, t, 1 << 20);
  for (const Value* v : n.inputs) {
    if (!v) continue;
    Dims id = staticDims(v, "input");
    if (id.size() != od.size()) no("inputs of different ranks");
    std::string in = b.input(v);
    int64_t outer = 1, inner = 1, outBlock = 1;
    for (size_t d = 0; d < id.size(); ++d) {
      if (int64_t(d) < axis)
        outer *= id[d];
      else
        inner *= id[d], outBlock *= od[d];
    }
    const int64_t start = offset * (outBlock / std::max<int64_t>(od[axis], 1));
    if (inner == 0 || outer == 0) {
      offset += id[axis];
      continue;
    }
    Dims ext = {outer, inner};
    std::vector<int64_t> ist = {inner, 1}, ost = {outBlock, 1};
    bool par = true;
    if (outer == 1) {
      FlatSpace fs = flatSpace(Dims{inner}, {}, lanes);
      ext = fs.extents();
      ist = ost = fs.strideOf(fs.out);
      par = fs.parallel;
    }
    if (ext.empty()) { // one element
      body.push_back(Stmt::store(out, intImm(start), load(in, intImm(0), t)));
      offset += id[axis];
      continue;
    }
    std::vector<std::string> vs;
    for (size_t d = 0; d < ext.size(); ++d) vs.push_back(b.fresh("i" + std::to_string(d)));
    auto vv = vars(vs);
    ExprPtr oi = add(linearIndex(vv, ost), intImm(start));
    for (auto& st : nest(vs, ext, {Stmt::store(out, oi, load(in, linearIndex(vv, ist), t))}, par,
                         vectorWidthFor(o, t, ext.back())))
      body.push_back(std::move(st));
    offset += id[axis];
  }
  if (offset != od[axis]) no("input sizes do not add up to the output");
  Schedule s;
  s["axis"] = axis;
  return b.finish(std::move(body), std::move(s), o);
}

// Split: each output is the next run of the input along the axis; the runs' lengths are the
// outputs' static dims (shape inference resolved `split` / num_outputs into them).
std::optional<LoweredNode> lowerSplit(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  Dims id = staticDims(n.inputs.at(0), "input");
  const int64_t axis = normAxis(n.attrInt("axis"), id.size(), n);
  std::string in = b.input(n.inputs[0]);
  // Symbolic sizes: every extent, stride and offset the run's (a C2f block's channel split of an
  // image of symbolic sides).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), is = stridesOf(ir);
  DType t = n.inputs[0]->type.dtype;
  Block body;
  // Lengths the run gives (a run-time split input; num_outputs parts of a symbolic dim, the last
  // the remainder): each output's length along the axis written where it is a size set at run
  // time (else checked), their sum checked against the input's.
  std::vector<ExprPtr> lengths;
  const int64_t parts = int64_t(n.outputs.size());
  if (n.hasInput(1) && !n.inputs[1]->constant && o.setDataDim) {
    if (numel(staticDims(n.inputs[1], "split")) != parts)
      no("split lengths of another count than the outputs");
    for (int64_t k = 0; k < parts; ++k) lengths.push_back(loadI64(b, n.inputs[1], k));
  } else if (!n.hasInput(1) && n.attrs.count("num_outputs") && o.setDataDim &&
             !isImm(ir[size_t(axis)])) {
    const ExprPtr part = div(add(ir[size_t(axis)], intImm(parts - 1)), intImm(parts));
    for (int64_t k = 0; k + 1 < parts; ++k) lengths.push_back(part);
    lengths.push_back(max(sub(ir[size_t(axis)], mul(part, intImm(parts - 1))), intImm(0)));
  }
  const bool runLengths = !lengths.empty();
  if (runLengths) {
    if (!o.runtimeKernels) no("split lengths given at run time (checked by the runtime only)");
    // (the lengths, then their sum, checked at once against the results' and the input's dims)
    const std::string got = b.temp("lengths", DType::I64, {parts + 1});
    std::vector<ExprPtr> want;
    ExprPtr total = intImm(0);
    for (int64_t k = 0; k < parts; ++k) {
      const Value* v = n.outputs[size_t(k)];
      if (!v) no("an omitted Split output");
      const Dims od = staticDims(v, "output");
      if (od.size() != id.size()) no("output rank differs from the input's");
      total = add(total, lengths[size_t(k)]);
      if (auto set = o.setDataDim(v, size_t(axis), max(lengths[size_t(k)], intImm(0))))
        body.push_back(std::move(*set));
      body.push_back(Stmt::store(got, intImm(k), lengths[size_t(k)]));
      want.push_back(runDims(o, v, od)[size_t(axis)]);
    }
    body.push_back(Stmt::store(got, intImm(parts), total));
    want.push_back(ir[size_t(axis)]);
    body.push_back(checkValuesI64(got, want));
    if (o.sizesOnly) return b.finish(std::move(body), {}, o);
  }
  ExprPtr begin = intImm(0);
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (!n.outputs[k]) no("an omitted Split output");
    Dims od = staticDims(n.outputs[k], "output");
    if (od.size() != id.size()) no("output rank differs from the input's");
    const std::vector<ExprPtr> orr = runDims(o, n.outputs[k], od);
    for (size_t d = 0; d < od.size(); ++d)
      if (d != size_t(axis) && !equal(orr[d], ir[d]))
        no("an output differs from the input off the axis");
    const int64_t w = od.empty() ? 1 : vectorWidthFor(o, t, od.back());
    for (auto& st : copyLoops(b, b.output(k), orr, w, [&](const std::vector<ExprPtr>& v) {
           std::vector<ExprPtr> idx = v;
           idx[size_t(axis)] = add(v[size_t(axis)], begin);
           if (runLengths) // (inside: the lengths' sum was checked)
             idx[size_t(axis)] = clampIndex(idx[size_t(axis)], ir[size_t(axis)]);
           return load(in, runIndex(idx, is), t);
         }))
      body.push_back(std::move(st));
    begin = add(begin, orr[size_t(axis)]);
  }
  if (isImm(begin) && isImm(ir[size_t(axis)]) && !equal(begin, ir[size_t(axis)]))
    no("the outputs do not cover the input along the axis");
  Schedule sched;
  sched["axis"] = axis;
  return b.finish(std::move(body), std::move(sched), o);
}

std::optional<LoweredNode> lowerGather(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "data");
  Dims xd = staticDims(n.inputs.at(1), "indices");
  DType it = n.inputs[1]->type.dtype;
  if (it != DType::I64 && it != DType::I32) no("indices must be int32/int64");
  int64_t axis = normAxis(n.attrInt("axis"), id.size(), n);
  if (od.size() != id.size() - 1 + xd.size()) no("output rank mismatch");
  std::string in = b.input(n.inputs[0]), ind = b.input(n.inputs[1]);
  // Symbolic sizes: the run's dims of the data and the indices (their count and range).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), xr = runDims(o, n.inputs[1], xd);
  const auto is = stridesOf(ir), xs = stridesOf(xr);
  DType t = n.outputs[0]->type.dtype;
  Block check = checkIndices(ind, it, product(xr), ir[size_t(axis)], o);
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> xi(v.begin() + axis, v.begin() + axis + xd.size());
        ExprPtr k = clampedIndex(load(ind, runIndex(xi, xs), it), it, ir[size_t(axis)]);
        std::vector<ExprPtr> idx(v.begin(), v.begin() + axis);
        idx.push_back(k);
        idx.insert(idx.end(), v.begin() + axis + xd.size(), v.end());
        return load(in, runIndex(idx, is), t);
      },
      o, {}, std::move(check));
}

// GatherElements: out[v] = data[v with v[axis] = indices[v]].
std::optional<LoweredNode> lowerGatherElements(const Node& n, const std::string& name,
                                               const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "data");
  Dims xd = staticDims(n.inputs.at(1), "indices");
  DType it = n.inputs[1]->type.dtype, t = n.outputs[0]->type.dtype;
  if (it != DType::I64 && it != DType::I32) no("indices must be int32/int64");
  if (id.empty() || xd.size() != id.size() || od != xd) no("indices and output of another shape");
  const size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), id.size(), n));
  std::string in = b.input(n.inputs[0]), ind = b.input(n.inputs[1]);
  // Symbolic sizes: the data and the indices at their run strides, the result the indices' dims.
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), xr = runDims(o, n.inputs[1], xd);
  if (!sameRunDims(od, runDims(o, n.outputs[0], od), xr))
    no("a result whose dims are not the indices'");
  Block check = checkIndices(ind, it, product(xr), ir[axis], o);
  // The other dims of the indices at most the data's (where the sizes do not say so: a size set
  // at run time), else the run's error; clamped all the same.
  std::vector<size_t> unsure;
  for (size_t d = 0; d < id.size(); ++d)
    if (d != axis && !(isImm(xr[d]) && isImm(ir[d]) && xd[d] <= id[d]) && xr[d] != ir[d])
      unsure.push_back(d);
  if (!unsure.empty()) {
    if (!o.runtimeKernels) no("indices that may be longer than the data");
    const std::string over = b.temp("longer", DType::I64, {int64_t(unsure.size())});
    std::vector<ExprPtr> zeros;
    for (size_t k = 0; k < unsure.size(); ++k) {
      check.push_back(
          Stmt::store(over, intImm(int64_t(k)),
                      select(cmp(Op::Le, xr[unsure[k]], ir[unsure[k]]), intImm(0), xr[unsure[k]])));
      zeros.push_back(intImm(0));
    }
    check.push_back(checkValuesI64(over, zeros));
  }
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx = v;
        for (size_t d : unsure) idx[d] = clampIndex(v[d], ir[d]);
        idx[axis] = clampedIndex(load(ind, runIndex(v, stridesOf(xr)), it), it, ir[axis]);
        return load(in, runIndex(idx, stridesOf(ir)), t);
      },
      o, {}, std::move(check));
}

// GatherND: out[batch, tuple, rest] = data[batch, indices[batch, tuple, 0..K-1], rest] (the first
// batch_dims dims shared). Each component of the index tuples is checked against its own data
// dim by the runtime (checkIndexTuples) and clamped, so the loads stay inside.
std::optional<LoweredNode> lowerGatherND(const Node& n, const std::string& name,
                                         const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  const Dims dd = staticDims(n.inputs.at(0), "data"), xd = staticDims(n.inputs.at(1), "indices"),
             od = staticDims(n.outputs[0], "output");
  const DType it = n.inputs[1]->type.dtype, t = n.outputs[0]->type.dtype;
  if (it != DType::I64) no("indices must be int64");
  const int64_t B = n.attrInt("batch_dims", 0), q = int64_t(xd.size()), r = int64_t(dd.size());
  if (q < 1 || B < 0 || B >= std::min(q, r)) no("batch_dims out of range");
  const int64_t K = xd.back();
  if (K < 1 || B + K > r) no("index tuples longer than the data's rank");
  for (int64_t d = 0; d < B; ++d)
    if (xd[size_t(d)] != dd[size_t(d)]) no("batch dims that differ");
  Dims want(xd.begin(), xd.end() - 1);
  want.insert(want.end(), dd.begin() + B + K, dd.end());
  if (od != want) no("output shape " + formatDims(od) + ", expected " + formatDims(want));
  const std::string out = b.output(0), in = b.input(n.inputs[0]), ind = b.input(n.inputs[1]);
  Block check =
      checkIndexTuples(b, ind, it, numel(xd) / K, Dims(dd.begin() + B, dd.begin() + B + K), o);
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        // v: the tuple's position (indices' dims but the last), then the rest of the data's dims
        std::vector<ExprPtr> at(v.begin(), v.begin() + q - 1), idx(v.begin(), v.begin() + B);
        at.push_back(intImm(0));
        const ExprPtr base = linearIndex(at, strides(xd));
        for (int64_t k = 0; k < K; ++k)
          idx.push_back(clampedIndex(load(ind, add(base, intImm(k)), it), it, dd[size_t(B + k)]));
        idx.insert(idx.end(), v.begin() + q - 1, v.end());
        return load(in, linearIndex(idx, strides(dd)), t);
      },
      o, {}, std::move(check));
}

// ReverseSequence: out[t, b] = x[len[b] - 1 - t, b] for t < len[b], else x[t, b] (time and batch
// axes 0 and 1 in either order, the rest of the dims copied along). Lengths outside [0, T] are
// the run's error (checkValuesBelow) and clamp besides.
std::optional<LoweredNode> lowerReverseSequence(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  const Dims xd = staticDims(n.inputs.at(0), "input"), ld = staticDims(n.inputs.at(1), "lengths");
  const DType t = n.outputs[0]->type.dtype, lt = n.inputs[1]->type.dtype;
  if (t == DType::String) no("ReverseSequence of strings");
  if (lt != DType::I64 && lt != DType::I32) no("int32/int64 sequence lengths");
  if (xd.size() < 2 || staticDims(n.outputs[0], "output") != xd) no("input and output shapes");
  const size_t ta = size_t(normAxis(n.attrInt("time_axis", 0), xd.size(), n)),
               ba = size_t(normAxis(n.attrInt("batch_axis", 1), xd.size(), n));
  if (ta == ba || ta > 1 || ba > 1) no("time and batch axes other than 0 and 1");
  if (ld != Dims{xd[ba]}) no("lengths of another size than the batch");
  const int64_t T = xd[ta], B = xd[ba];
  const std::string in = b.input(n.inputs[0]), lens = b.input(n.inputs[1]), out = b.output(0);
  Block check = checkValuesBelow(lens, lt, B, T + 1, o);
  return gatherNest(
      b, out, xd,
      [&](const std::vector<ExprPtr>& v) {
        ExprPtr len = load(lens, v[ba], lt);
        if (lt != DType::I64) len = cast(DType::I64, len);
        std::vector<ExprPtr> idx = v;
        idx[ta] =
            clampIndex(select(cmp(Op::Lt, v[ta], len), sub(sub(len, intImm(1)), v[ta]), v[ta]), T);
        return load(in, linearIndex(idx, strides(xd)), t);
      },
      o, {}, std::move(check));
}

// Trilu: x where column - row >= k (upper) or <= k (lower) in the last two dims, else 0 (k: 0
// when absent, a constant, or read from its one-element input at run time).
std::optional<LoweredNode> lowerTrilu(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output");
  if (od.size() < 2 || staticDims(n.inputs.at(0), "input") != od) no("an input of rank >= 2");
  ExprPtr k = intImm(0);
  if (n.hasInput(1)) {
    const Value* kv = n.inputs[1];
    if (numel(staticDims(kv, "k")) != 1 || kv->type.dtype != DType::I64) no("k is not one int64");
    auto c = constInts(n, 1);
    k = c ? intImm((*c)[0]) : load(b.input(kv), intImm(0), DType::I64);
  }
  const bool upper = n.attrInt("upper") != 0;
  std::string in = b.input(n.inputs[0]);
  DType t = n.outputs[0]->type.dtype;
  // (symbolic sizes: the input read at the run's strides; the nest runs the output's run dims)
  const std::vector<ExprPtr> is = stridesOf(runDims(o, n.inputs[0], od));
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        ExprPtr diag = sub(v[v.size() - 1], v[v.size() - 2]); // column - row
        ExprPtr keep = cmp(upper ? Op::Ge : Op::Le, diag, k);
        return select(keep, load(in, runIndex(v, is), t), constant(t, 0));
      },
      o);
}

std::optional<LoweredNode> lowerPad(const Node& n, const std::string& name, const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  std::string mode = n.attrString("mode");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    no("Pad mode " + mode);
  const int64_t rank = int64_t(id.size());
  const int64_t A = n.hasInput(3) ? numel(staticDims(n.inputs[3], "axes")) : rank;
  if (numel(staticDims(n.inputs.at(1), "pads")) != 2 * A) no("pads of the wrong length");
  std::vector<ExprPtr> before(id.size(), intImm(0)); // pads before each dim
  Block pre;
  auto pads = constInts(n, 1);
  auto axesC = n.hasInput(3) ? constInts(n, 3) : std::optional<std::vector<int64_t>>();
  // Symbolic sizes: the input's run dims for the edges, wraps, reflections and strides.
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  if (pads && (axesC || !n.hasInput(3))) {
    for (int64_t k = 0; k < A; ++k)
      before[size_t(axesC ? normAxis((*axesC)[size_t(k)], id.size(), n) : k)] =
          intImm((*pads)[size_t(k)]);
  } else {
    // Pads (or axes) given at run time: each dim's leading pad into a temp and the output dims
    // they imply checked against the compiled shape (@check_values_i64), as Slice does, or,
    // where they are sizes set at run time, written (setOrCheckDims).
    if (!o.runtimeKernels) no("non-constant pads (checked by the runtime only)");
    std::string beg = b.temp("before", DType::I64, {rank}),
                cnt = b.temp("dims", DType::I64, {rank});
    for (int64_t d = 0; d < rank; ++d) {
      ExprPtr first = intImm(0), total = ir[size_t(d)];
      for (int64_t k = 0; k < A; ++k) {
        ExprPtr a = n.hasInput(3) ? loadI64(b, n.inputs[3], k) : intImm(k);
        a = select(cmp(Op::Lt, a, intImm(0)), add(a, intImm(rank)), a);
        const ExprPtr here = cmp(Op::Eq, a, intImm(d)), lead = loadI64(b, n.inputs[1], k);
        first = select(here, lead, first);
        total = select(here, add(ir[size_t(d)], add(lead, loadI64(b, n.inputs[1], A + k))), total);
      }
      pre.push_back(Stmt::store(beg, intImm(d), first));
      pre.push_back(Stmt::store(cnt, intImm(d), total));
      before[size_t(d)] = load(beg, intImm(d), DType::I64);
    }
    for (Stmt& st : setOrCheckDims(o, n.outputs[0], cnt, od)) pre.push_back(std::move(st));
  }
  DType t = n.outputs[0]->type.dtype;
  ExprPtr cval = constant(t, 0);
  if (n.hasInput(2) && mode == "constant") {
    const Value* cv = n.inputs[2];
    if (numel(staticDims(cv, "constant_value")) != 1 || cv->type.dtype != t)
      no("a constant_value of one element of the output's type is needed");
    cval = !cv->constant ? load(b.input(cv), intImm(0), t)
           : isFloat(t)  ? constant(t, cv->constant->getF64(0))
                         : intImm(cv->constant->getI64(0), t);
  }
  for (int64_t x : id)
    if (x == 0) no("an empty input");
  std::string in = b.input(n.inputs[0]);
  const auto is = stridesOf(ir);
  Schedule s;
  s["mode"] = mode;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) -> ExprPtr {
        std::vector<ExprPtr> idx;
        ExprPtr inside;
        for (size_t d = 0; d < v.size(); ++d) {
          ExprPtr p = sub(v[d], before[d]);
          const ExprPtr dim = ir[d], last = sub(dim, intImm(1));
          if (mode == "edge") {
            p = clampIndex(p, dim);
          } else if (mode == "wrap") { // ((p % n) + n) % n, as the reference
            p = binary(Op::Mod, add(binary(Op::Mod, p, dim), dim), dim);
          } else if (mode == "reflect") {
            p = select(cmp(Op::Lt, p, intImm(0)), neg(p), p);
            p = select(cmp(Op::Gt, p, last), sub(mul(intImm(2), last), p), p);
            p = clampIndex(p, dim);
          } else {
            ExprPtr ok = binary(Op::And, cmp(Op::Ge, p, intImm(0)), cmp(Op::Le, p, last));
            inside = inside ? binary(Op::And, inside, ok) : ok;
            p = clampIndex(p, dim); // a safe index for the eager select
          }
          idx.push_back(p);
        }
        ExprPtr x = load(in, runIndex(idx, is), t);
        return inside ? select(inside, x, cval) : x;
      },
      o, s, std::move(pre));
}

} // namespace

std::optional<LoweredNode> lowerDataFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  const std::string& op = n.op;
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
    return lowerAlias(n, name, o);
  if (op == "Transpose") return lowerTranspose(n, name, o);
  if (op == "Expand")
    if (auto ln = lowerExpand(n, name, o)) return ln;
  if (op == "Concat") return lowerConcat(n, name, o);
  if (op == "Split") return lowerSplit(n, name, o);
  if (op == "Gather") return lowerGather(n, name, o);
  if (op == "GatherElements") return lowerGatherElements(n, name, o);
  if (op == "GatherND") return lowerGatherND(n, name, o);
  if (op == "Trilu") return lowerTrilu(n, name, o);
  if (op == "ReverseSequence") return lowerReverseSequence(n, name, o);
  if (op == "ScatterND") return lowerScatterND(n, name, o);
  if (op == "ScatterElements") return lowerScatterElements(n, name, o);
  if (op == "TensorScatter") return lowerTensorScatter(n, name, o);
  if (op == "GridSample") return lowerGridSample(n, name, o);
  if (op == "CenterCropPad") return lowerCenterCropPad(n, name, o);
  if (op == "Pad") return lowerPad(n, name, o);
  if (op == "Resize") return lowerResize(n, name, o);
  if (op == "DFT") return lowerDft(n, name, o);
  if (op == "STFT") return lowerStft(n, name, o);
  if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow")
    return lowerWindowFunction(n, name, o);
  if (op == "MelWeightMatrix") return lowerMelWeightMatrix(n, name, o);
  if (op == "AffineGrid") return lowerAffineGrid(n, name, o);
  if (op == "Col2Im") return lowerCol2Im(n, name, o);
  if (op == "TfIdfVectorizer") return lowerTfIdf(n, name, o);
  if (op == "DeformConv") return lowerDeformConv(n, name, o);
  if (op == "Pow" && isInteger(n.inputs.at(0)->type.dtype) && n.inputs.size() > 1 && n.inputs[1] &&
      isInteger(n.inputs[1]->type.dtype))
    return lowerIntPow(n, name, o);
  return lowerRearrange(n, name, o);
}

} // namespace aicc::loop::detail
