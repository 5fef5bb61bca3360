// Data movement as loop nests: Transpose, Concat, Slice, Gather, GatherElements (indices checked
// at run time), Trilu, ScatterND (every reduction), Pad (constant/edge/reflect), Resize (nearest
// and linear), and the view ops Reshape/Flatten/Squeeze/Unsqueeze as copies marked `kind = "alias"`
// (the memory planner makes them views; codegen can drop the copy).
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

// A copy of every element of the output from an input index expression (after `prefix`).
LoweredNode gatherNest(FuncBuilder& b, const std::string& out, const Dims& od,
                       const std::function<ExprPtr(const std::vector<ExprPtr>&)>& value,
                       const LowerOptions& o, Schedule sched = {}, Block prefix = {}) {
  std::vector<std::string> vs;
  for (size_t d = 0; d < od.size(); ++d) vs.push_back(b.fresh("i" + std::to_string(d)));
  auto vv = vars(vs);
  DType t = b.node.outputs[0]->type.dtype;
  int64_t w = od.empty() ? 1 : vectorWidthFor(o, t, od.back());
  Block body = std::move(prefix);
  for (auto& s : nest(vs, od, {Stmt::store(out, linearIndex(vv, strides(od)), value(vv))}, true, w))
    body.push_back(std::move(s));
  sched["vector_width"] = w;
  return b.finish(std::move(body), std::move(sched), o);
}

std::optional<LoweredNode> lowerAlias(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  FuncBuilder b(n, name, "alias");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output");
  std::string in = b.input(n.inputs.at(0));
  if (numel(staticDims(n.inputs[0], "input")) != numel(od)) no("element counts differ");
  DType t = n.outputs[0]->type.dtype;
  int64_t total = numel(od);
  std::string i = b.fresh("i");
  Block body = nest({i}, {total}, {Stmt::store(out, var(i), load(in, var(i), t))}, true,
                    vectorWidthFor(o, t, total));
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
  auto is = strides(id);
  std::vector<int64_t> st(od.size());
  for (size_t k = 0; k < od.size(); ++k) st[k] = is.at(normAxis(perm[k], id.size(), n));
  DType t = n.outputs[0]->type.dtype;
  Schedule s;
  s["perm"] = perm;
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
  auto is = strides(id);
  DType t = n.inputs[0]->type.dtype;
  Block body;
  int64_t begin = 0;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (!n.outputs[k]) no("an omitted Split output");
    Dims od = staticDims(n.outputs[k], "output");
    if (od.size() != id.size()) no("output rank differs from the input's");
    std::string out = b.output(k);
    std::vector<std::string> vs;
    for (size_t d = 0; d < od.size(); ++d) vs.push_back(b.fresh("i" + std::to_string(d)));
    auto vv = vars(vs);
    std::vector<ExprPtr> idx = vv;
    idx[size_t(axis)] = add(vv[size_t(axis)], intImm(begin));
    int64_t w = od.empty() ? 1 : vectorWidthFor(o, t, od.back());
    for (auto& st :
         nest(vs, od,
              {Stmt::store(out, linearIndex(vv, strides(od)), load(in, linearIndex(idx, is), t))},
              true, w))
      body.push_back(std::move(st));
    begin += od[size_t(axis)];
  }
  if (begin != id[size_t(axis)]) no("the outputs do not cover the input along the axis");
  Schedule sched;
  sched["axis"] = axis;
  return b.finish(std::move(body), std::move(sched), o);
}

std::optional<LoweredNode> lowerSlice(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  auto starts = constInts(n, 1), ends = constInts(n, 2);
  if (!starts || !ends) no("non-constant starts/ends");
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  for (size_t k = 0; k < axes.size(); ++k) axes[k] = static_cast<int64_t>(k);
  if (n.hasInput(3)) {
    auto a = constInts(n, 3);
    if (!a) no("non-constant axes");
    axes = *a;
  }
  if (n.hasInput(4)) {
    auto s = constInts(n, 4);
    if (!s) no("non-constant steps");
    steps = *s;
  }
  if (axes.size() != starts->size() || steps.size() != starts->size()) no("inconsistent inputs");
  std::vector<int64_t> begin(id.size(), 0), step(id.size(), 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = normAxis(axes[k], id.size(), n), dim = id[a], st = steps[k];
    if (st == 0) no("a zero step");
    int64_t s = (*starts)[k];
    if (s < 0) s += dim;
    s = st > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    begin[a] = s, step[a] = st;
  }
  auto is = strides(id);
  DType t = n.outputs[0]->type.dtype;
  std::string in = b.input(n.inputs[0]);
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx;
        for (size_t d = 0; d < v.size(); ++d)
          idx.push_back(add(intImm(begin[d]), mul(v[d], intImm(step[d]))));
        return load(in, linearIndex(idx, is), t);
      },
      o);
}

// Out-of-range indices: the runtime's check before the copy reports them (as the interpreter
// does: @check_indices_*), and the copy clamps, so it never reads outside the data. The C bundle
// has no error path (as for integer division by zero) and reads the nearest element.
Block checkIndices(const std::string& ind, DType it, int64_t count, int64_t dim,
                   const LowerOptions& o) {
  if (dim == 0 && count > 0) no("indices into an empty dimension");
  if (!o.runtimeKernels) return {};
  return {Stmt::callKernel(it == DType::I64 ? "check_indices_i64" : "check_indices_i32",
                           {CallArg{ind, nullptr, nullptr}, CallArg{"", nullptr, intImm(count)},
                            CallArg{"", nullptr, intImm(dim)}})};
}

// Index k (int32/int64, negative from the end) into [0, dim).
ExprPtr clampedIndex(ExprPtr k, DType it, int64_t dim) {
  if (it != DType::I64) k = cast(DType::I64, k);
  return clampIndex(select(cmp(Op::Lt, k, intImm(0)), add(k, intImm(dim)), k), dim);
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
  auto is = strides(id), xs = strides(xd);
  DType t = n.outputs[0]->type.dtype;
  Block check = checkIndices(ind, it, numel(xd), id[axis], o);
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> xi(v.begin() + axis, v.begin() + axis + xd.size());
        ExprPtr k = clampedIndex(load(ind, linearIndex(xi, xs), it), it, id[axis]);
        std::vector<ExprPtr> idx(v.begin(), v.begin() + axis);
        idx.push_back(k);
        idx.insert(idx.end(), v.begin() + axis + xd.size(), v.end());
        return load(in, linearIndex(idx, is), t);
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
  Block check = checkIndices(ind, it, numel(xd), id[axis], o);
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx = v;
        idx[axis] = clampedIndex(load(ind, linearIndex(v, strides(xd)), it), it, id[axis]);
        return load(in, linearIndex(idx, strides(id)), t);
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
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        ExprPtr diag = sub(v[v.size() - 1], v[v.size() - 2]); // column - row
        ExprPtr keep = cmp(upper ? Op::Ge : Op::Le, diag, k);
        return select(keep, load(in, linearIndex(v, strides(od)), t), constant(t, 0));
      },
      o);
}

std::optional<LoweredNode> lowerPad(const Node& n, const std::string& name, const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  std::string mode = n.attrString("mode");
  if (mode != "constant" && mode != "edge" && mode != "reflect") no("Pad mode " + mode);
  auto pads = constInts(n, 1);
  if (!pads) no("non-constant pads");
  std::vector<int64_t> axes;
  if (n.hasInput(3)) {
    auto a = constInts(n, 3);
    if (!a) no("non-constant axes");
    for (int64_t x : *a) axes.push_back(normAxis(x, id.size(), n));
  } else {
    for (size_t k = 0; k < id.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (pads->size() != 2 * axes.size()) no("pads of the wrong length");
  std::vector<int64_t> before(id.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) before[axes[k]] = (*pads)[k];
  DType t = n.outputs[0]->type.dtype;
  ExprPtr cval = constant(t, 0);
  if (n.hasInput(2) && mode == "constant") {
    const Value* cv = n.inputs[2];
    if (!cv->constant || cv->constant->numel() != 1) no("non-constant constant_value");
    cval = isFloat(t) ? constant(t, cv->constant->getF64(0)) : intImm(cv->constant->getI64(0), t);
  }
  for (int64_t x : id)
    if (x == 0) no("an empty input");
  std::string in = b.input(n.inputs[0]);
  auto is = strides(id);
  Schedule s;
  s["mode"] = mode;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) -> ExprPtr {
        std::vector<ExprPtr> idx;
        ExprPtr inside;
        for (size_t d = 0; d < v.size(); ++d) {
          ExprPtr p = sub(v[d], intImm(before[d]));
          ExprPtr last = intImm(id[d] - 1);
          if (mode == "edge") {
            p = clampIndex(p, id[d]);
          } else if (mode == "reflect") {
            p = select(cmp(Op::Lt, p, intImm(0)), neg(p), p);
            p = select(cmp(Op::Gt, p, last), sub(intImm(2 * (id[d] - 1)), p), p);
            p = clampIndex(p, id[d]);
          } else {
            ExprPtr ok = binary(Op::And, cmp(Op::Ge, p, intImm(0)), cmp(Op::Le, p, last));
            inside = inside ? binary(Op::And, inside, ok) : ok;
            p = clampIndex(p, id[d]); // a safe index for the eager select
          }
          idx.push_back(p);
        }
        ExprPtr x = load(in, linearIndex(idx, is), t);
        return inside ? select(inside, x, cval) : x;
      },
      o, s);
}

std::optional<LoweredNode> lowerResize(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  const std::string mode = n.attrString("mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") no("Resize mode " + mode);
  const bool antialias = n.attrInt("antialias", 0) != 0;
  if (antialias && mode == "nearest") no("Resize antialias in nearest mode");
  const bool exclude = n.attrInt("exclude_outside", 0) != 0;
  std::string ctm = n.attrString("coordinate_transformation_mode");
  std::string nm = n.attrString("nearest_mode");
  if (ctm == "tf_crop_and_resize") no("tf_crop_and_resize");
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  if (od.size() != id.size()) no("rank mismatch");
  std::vector<double> scale(id.size(), 1.0);
  // `axes`: the scales (or sizes) name these dims only; the others keep their size.
  std::vector<size_t> axes;
  if (n.attr("axes"))
    for (int64_t a : n.attrInts("axes")) axes.push_back(size_t(normAxis(a, id.size(), n)));
  else
    for (size_t d = 0; d < id.size(); ++d) axes.push_back(d);
  std::string runScales; // scales given at run time: read from their buffer
  if (n.hasInput(2) && n.inputs[2]->constant && n.inputs[2]->constant->numel() > 0) {
    const Tensor& s = *n.inputs[2]->constant;
    if (s.numel() != static_cast<int64_t>(axes.size())) no("scales of the wrong length");
    for (size_t i = 0; i < axes.size(); ++i) scale[axes[i]] = s.getF64(static_cast<int64_t>(i));
  } else if (n.hasInput(2) && n.inputs[2]->type.shape &&
             numel(staticDims(n.inputs[2], "scales")) > 0) {
    // They map coordinates by their own values, which the output size (floor(in * scale)) does
    // not give back: every dim takes the general formula with the scale loaded.
    if (numel(staticDims(n.inputs[2], "scales")) != static_cast<int64_t>(axes.size()) ||
        n.inputs[2]->type.dtype != DType::F32)
      no("scales that are not one f32 per dim");
    runScales = b.input(n.inputs[2]);
  } else {
    for (size_t d = 0; d < id.size(); ++d)
      scale[d] = static_cast<double>(od[d]) / static_cast<double>(id[d]);
  }
  std::string in = b.input(n.inputs[0]);
  auto is = strides(id);
  DType t = n.outputs[0]->type.dtype;
  Schedule sch;
  sch["coordinate_transformation_mode"] = ctm;
  sch["nearest_mode"] = nm;
  auto c = [](double x) { return floatImm(x, DType::F64); };
  // The source coordinate (f64) of output position x along dim d.
  std::vector<int64_t> axisPos(id.size(), -1); // where dim d's scale is in the scales input
  for (size_t i = 0; i < axes.size(); ++i) axisPos[axes[i]] = int64_t(i);
  auto source = [&](size_t d, ExprPtr x) -> ExprPtr {
    ExprPtr s = runScales.empty()
                    ? c(scale[d])
                    : cast(DType::F64, load(runScales, intImm(axisPos[d]), DType::F32));
    x = cast(DType::F64, x);
    if (ctm == "asymmetric") return div(x, s);
    if (ctm == "half_pixel") return sub(div(add(x, c(0.5)), s), c(0.5));
    if (ctm == "pytorch_half_pixel") return od[d] > 1 ? sub(div(add(x, c(0.5)), s), c(0.5)) : c(0);
    if (ctm == "align_corners") { // the unrounded output length scale * in, as the reference
      if (runScales.empty()) {
        const double len = scale[d] * double(id[d]);
        return len == 1 ? c(0) : mul(x, c(double(id[d] - 1) / (len - 1)));
      }
      ExprPtr len = mul(s, c(double(id[d])));
      return select(cmp(Op::Eq, len, c(1)), c(0),
                    div(mul(x, c(double(id[d] - 1))), sub(len, c(1))));
    }
    if (ctm == "tf_half_pixel_for_nearest") return div(add(x, c(0.5)), s);
    if (ctm == "half_pixel_symmetric") { // off = center * (1 - od / (scale * id))
      ExprPtr adj = div(c(double(od[d])), mul(s, c(double(id[d]))));
      ExprPtr off = mul(c(id[d] / 2.0), sub(c(1), adj));
      return sub(add(off, div(add(x, c(0.5)), s)), c(0.5));
    }
    no("coordinate_transformation_mode " + ctm);
  };
  auto resized = [&](size_t d) {
    return runScales.empty() ? !(od[d] == id[d] && scale[d] == 1.0) : axisPos[d] >= 0;
  };
  if (mode == "linear" || mode == "cubic") {
    // As the reference: taps base + i with distance i - r, where base = floor(x) (x - 1 for an
    // integral x) and r = x - base; i in {0, 1} with weights 1 - r and r (linear) or
    // i in {-1, .., 2} with the cubic kernel of cubic_coeff_a (cubic); indices clamped to the
    // edge, or with exclude_outside the outside taps weighted 0 and the rest renormalized; the
    // sum over every combination of one tap per resized dim in f64.
    if (!isComputeFloat(t)) no(mode + " Resize of a non-float type");
    sch["mode"] = mode;
    const bool cubic = mode == "cubic";
    const double A = n.attrFloat("cubic_coeff_a");
    auto cubicWeight = [&](ExprPtr dist) { // dist = |i - r|
      ExprPtr near = add(mul(mul(sub(mul(c(A + 2), dist), c(A + 3)), dist), dist), c(1));
      ExprPtr far =
          sub(mul(add(mul(sub(mul(c(A), dist), c(5 * A)), dist), c(8 * A)), dist), c(4 * A));
      return select(cmp(Op::Le, dist, c(1)), near, select(cmp(Op::Lt, dist, c(2)), far, c(0)));
    };
    return gatherNest(
        b, out, od,
        [&](const std::vector<ExprPtr>& v) {
          std::vector<size_t> dims;
          std::vector<std::vector<std::pair<ExprPtr, ExprPtr>>> taps(v.size()); // (index, weight)
          for (size_t d = 0; d < v.size(); ++d) {
            if (!resized(d)) continue;
            ExprPtr x = source(d, v[d]), fl = call("floor", {x});
            ExprPtr base = select(cmp(Op::Eq, fl, x), sub(x, c(1)), fl), r = sub(x, base);
            ExprPtr bi = cast(DType::I64, base), sum;
            // antialias (downscaling): the kernel stretched by 1 / scale, over a wider footprint
            // [lo, 2 - lo) of taps, normalized; the scale is a constant then.
            const double st = antialias ? std::min(scale[d], 1.0) : 1.0;
            if (antialias && !runScales.empty()) no("antialias with scales given at run time");
            const int64_t lo = int64_t(std::floor((cubic ? -2.0 : -1.0) / st)) + 1;
            for (int64_t i = lo; i < 2 - lo; ++i) {
              ExprPtr dist = call("abs", {mul(sub(c(double(i)), r), c(st))});
              ExprPtr w = cubic ? cubicWeight(dist) : max(c(0), sub(c(1), dist));
              ExprPtr idx = add(bi, intImm(i));
              if (exclude)
                w = select(
                    binary(Op::And, cmp(Op::Ge, idx, intImm(0)), cmp(Op::Lt, idx, intImm(id[d]))),
                    w, c(0));
              sum = sum ? add(sum, w) : w;
              taps[d].push_back({clampIndex(idx, id[d]), w});
            }
            if (exclude || antialias)
              for (auto& tp : taps[d])
                tp.second = select(cmp(Op::Eq, sum, c(0)), tp.second, div(tp.second, sum));
            dims.push_back(d);
          }
          size_t combos = 1;
          for (size_t d : dims) combos *= taps[d].size();
          ExprPtr sum;
          for (size_t corner = 0; corner < combos; ++corner) {
            std::vector<ExprPtr> idx(v);
            ExprPtr w;
            size_t rest = corner;
            for (size_t d : dims) {
              const auto& tp = taps[d][rest % taps[d].size()];
              rest /= taps[d].size();
              idx[d] = tp.first;
              w = w ? mul(w, tp.second) : tp.second;
            }
            ExprPtr term = cast(DType::F64, load(in, linearIndex(idx, is), t));
            // A zero weight skips its tap, as the reference (0 * inf would be NaN).
            if (w) term = select(cmp(Op::Eq, w, c(0)), c(0), mul(w, term));
            sum = sum ? add(sum, term) : term;
          }
          return cast(t, sum);
        },
        o, sch);
  }
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx;
        for (size_t d = 0; d < v.size(); ++d) {
          if (!resized(d)) {
            idx.push_back(v[d]);
            continue;
          }
          ExprPtr xo = source(d, v[d]);
          ExprPtr r;
          if (nm == "round_prefer_floor")
            r = call("ceil", {sub(xo, c(0.5))});
          else if (nm == "round_prefer_ceil")
            r = call("floor", {add(xo, c(0.5))});
          else if (nm == "floor")
            r = call("floor", {xo});
          else if (nm == "ceil")
            r = call("ceil", {xo});
          else
            no("nearest_mode " + nm);
          idx.push_back(clampIndex(cast(DType::I64, r), id[d]));
        }
        return load(in, linearIndex(idx, is), t);
      },
      o, sch);
}

// ScatterND's combination of the current value `a` with the update `u`, as the reference kernel
// computes it (max/min keep `a` unless `u` is strictly larger/smaller, like std::max/std::min).
ExprPtr scatterCombine(const std::string& red, ExprPtr a, ExprPtr u) {
  if (red == "none") return u;
  if (red == "add") return add(a, u);
  if (red == "mul") return mul(a, u);
  if (red == "max") return select(cmp(Op::Lt, a, u), u, a);
  if (red == "min") return select(cmp(Op::Lt, u, a), u, a);
  no("scatter reduction '" + red + "'");
}

// The body of one index tuple `tv` of ScatterND: lets for its k coordinates (negative ones
// wrapped), then the update slice stored/combined into `out`. Only constant indices, all checked
// in range at compile time, are lowered (an out-of-range index is an error the reference kernel
// reports).
Block scatterTuple(FuncBuilder& b, const std::string& tv, const std::string& out,
                   const std::string& ind, const std::string& upd, const Dims& dd, int64_t k,
                   int64_t slice, const LowerOptions& o) {
  const DType t = b.node.outputs[0]->type.dtype, it = b.node.inputs[1]->type.dtype;
  auto ds = strides(dd);
  Block body;
  ExprPtr off = intImm(0), inRange;
  for (int64_t j = 0; j < k; ++j) {
    ExprPtr raw = load(ind, add(mul(var(tv), intImm(k)), intImm(j)), it);
    if (it != DType::I64) raw = cast(DType::I64, raw);
    std::string c = b.fresh("c" + std::to_string(j));
    body.push_back(Stmt::let(c, select(cmp(Op::Lt, raw, intImm(0)), add(raw, intImm(dd[j])), raw)));
    ExprPtr ok =
        binary(Op::And, cmp(Op::Ge, var(c), intImm(0)), cmp(Op::Lt, var(c), intImm(dd[j])));
    inRange = inRange ? binary(Op::And, inRange, ok) : ok;
    off = add(off, mul(var(c), intImm(ds[j])));
  }
  std::string sv = b.fresh("s");
  ExprPtr dst = add(off, var(sv)), src = add(mul(var(tv), intImm(slice)), var(sv));
  ExprPtr v = scatterCombine(b.node.attrString("reduction"), load(out, dst, t), load(upd, src, t));
  body.push_back(Stmt::ifThen(inRange, nest({sv}, {slice}, {Stmt::store(out, dst, v)}, false,
                                            vectorWidthFor(o, t, slice))));
  return body;
}

// The checks ScatterND and ScatterElements share: shapes static, int32/int64 indices, data,
// updates and output of one type, a known reduction (none on bool).
struct ScatterOperands {
  Dims dd, xd, ud; // data, indices, updates
  DType t, it;     // element and index types
  std::string red;
};
ScatterOperands scatterOperands(const Node& n) {
  ScatterOperands s{staticDims(n.inputs.at(0), "data"),
                    staticDims(n.inputs.at(1), "indices"),
                    staticDims(n.inputs.at(2), "updates"),
                    n.outputs[0]->type.dtype,
                    n.inputs[1]->type.dtype,
                    n.attrString("reduction")};
  scatterCombine(s.red, intImm(0), intImm(0)); // declines unknown reductions
  if (s.it != DType::I64 && s.it != DType::I32) no("indices must be int32/int64");
  if (s.t == DType::Bool && s.red != "none") no(n.op + " reduction '" + s.red + "' on bool");
  if (s.dd != staticDims(n.outputs[0], "output") || n.inputs[0]->type.dtype != s.t ||
      n.inputs[2]->type.dtype != s.t)
    no("data, updates and output differ in type or shape");
  return s;
}

// ScatterND: out = data, then for each index tuple (in order: with duplicate indices the last
// update wins, or all combine) the update slice at the tuple's offset.
std::optional<LoweredNode> lowerScatterND(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  const auto [dd, xd, ud, t, it, red] = scatterOperands(n);
  if (xd.empty() || xd.back() < 1 || xd.back() > static_cast<int64_t>(dd.size()))
    no("indices' last dim is out of range for the data rank");
  const int64_t k = xd.back();
  Dims want(xd.begin(), xd.end() - 1), sliceDims(dd.begin() + k, dd.end());
  want.insert(want.end(), sliceDims.begin(), sliceDims.end());
  if (ud != want) no("updates shape " + formatDims(ud) + ", expected " + formatDims(want));
  // An out-of-range index is an error (the reference kernel reports it); compiled code has no
  // way to report it, so only constant indices, checked here, are lowered.
  const Tensor* ic = n.inputs[1]->constant ? &*n.inputs[1]->constant : nullptr;
  if (!ic)
    no("ScatterND indices computed at run time (out-of-range checks need the reference kernel)");
  for (int64_t e = 0; e < ic->numel(); ++e) {
    int64_t v = ic->getI64(e), dim = dd[size_t(e % k)];
    if (v < -dim || v >= dim) no("ScatterND index " + std::to_string(v) + " is out of range");
  }
  std::string data = b.input(n.inputs[0]), ind = b.input(n.inputs[1]), upd = b.input(n.inputs[2]);
  const int64_t total = numel(dd);
  std::string i = b.fresh("i"), tv = b.fresh("t");
  Block body = nest({i}, {total}, {Stmt::store(out, var(i), load(data, var(i), t))}, true,
                    vectorWidthFor(o, t, total));
  // Serial over tuples: later tuples see (and may overwrite) earlier ones.
  for (auto& s : nest({tv}, {numel(xd) / k},
                      scatterTuple(b, tv, out, ind, upd, dd, k, numel(sliceDims), o), false))
    body.push_back(std::move(s));
  Schedule s;
  s["reduction"] = red;
  return b.finish(std::move(body), std::move(s), o);
}

// ScatterElements: out = data, then for each element of `indices` (in order: later duplicates
// win, or combine by `reduction`) out at the element's own coordinates with the one along `axis`
// replaced by the index = the update. Indices computed at run time are checked by the runtime
// (@check_indices_*) and clamped, so the stores stay inside `out`.
std::optional<LoweredNode> lowerScatterElements(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  const auto [dd, xd, ud, t, it, red] = scatterOperands(n);
  if (ud != xd || xd.size() != dd.size() || dd.empty()) no("indices and updates do not match");
  const size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), dd.size(), n));
  for (size_t d = 0; d < dd.size(); ++d)
    if (d != axis && xd[d] > dd[d]) no("indices larger than the data off the axis");
  std::string data = b.input(n.inputs[0]), ind = b.input(n.inputs[1]), upd = b.input(n.inputs[2]);
  const int64_t total = numel(dd);
  std::string i = b.fresh("i");
  Block body = checkIndices(ind, it, numel(xd), dd[axis], o);
  for (auto& s : nest({i}, {total}, {Stmt::store(out, var(i), load(data, var(i), t))}, true,
                      vectorWidthFor(o, t, total)))
    body.push_back(std::move(s));
  std::vector<std::string> vs;
  for (size_t d = 0; d < xd.size(); ++d) vs.push_back(b.fresh("e" + std::to_string(d)));
  std::vector<ExprPtr> at = vars(vs), to = vars(vs);
  const ExprPtr src = linearIndex(at, strides(xd));
  to[axis] = clampedIndex(load(ind, src, it), it, dd[axis]);
  const ExprPtr dst = linearIndex(to, strides(dd));
  // Serial: later elements see (and may overwrite) earlier ones.
  for (auto& s :
       nest(vs, xd,
            {Stmt::store(out, dst, scatterCombine(red, load(out, dst, t), load(upd, src, t)))},
            false))
    body.push_back(std::move(s));
  Schedule s;
  s["reduction"] = red;
  return b.finish(std::move(body), std::move(s), o);
}

// CenterCropPad: the declared output shape is the target; along each dim the output reads the
// input shifted by (in - out) / 2 when cropping, -((out - in) / 2) when padding (0 outside). The
// target shape comes at run time: the runtime checks it is the declared one (@check_values_i64).
std::optional<LoweredNode> lowerCenterCropPad(const Node& n, const std::string& name,
                                              const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  const Dims xd = staticDims(n.inputs.at(0), "input"), od = staticDims(n.outputs[0], "output");
  const Dims sd = staticDims(n.inputs.at(1), "shape");
  const DType t = n.outputs[0]->type.dtype;
  if (xd.size() != od.size() || sd.size() != 1 || n.inputs[1]->type.dtype != DType::I64)
    no("CenterCropPad shapes do not match");
  std::vector<int64_t> axes = n.attrInts("axes", {});
  if (axes.empty())
    for (size_t d = 0; d < xd.size(); ++d) axes.push_back(int64_t(d));
  if (int64_t(axes.size()) != sd[0]) no("shape has a value per axis");
  std::vector<CallArg> check = {bufferArg(b.input(n.inputs[1])), intArg(sd[0])};
  std::vector<bool> named(xd.size(), false);
  for (int64_t a : axes) {
    const size_t d = size_t(normAxis(a, xd.size(), n));
    named[d] = true;
    check.push_back(intArg(od[d]));
  }
  for (size_t d = 0; d < xd.size(); ++d)
    if (!named[d] && od[d] != xd[d]) no("CenterCropPad changes a dim it does not name");
  if (!o.runtimeKernels && !n.inputs[1]->constant)
    no("a target shape given at run time (checked by the runtime only)");
  std::string in = b.input(n.inputs[0]);
  std::vector<std::string> vs;
  std::vector<ExprPtr> src;
  ExprPtr inside;
  for (size_t d = 0; d < xd.size(); ++d) {
    vs.push_back(b.loopVar("i" + std::to_string(d)));
    const int64_t off = od[d] <= xd[d] ? (xd[d] - od[d]) / 2 : -((od[d] - xd[d]) / 2);
    ExprPtr s = add(var(vs.back()), intImm(off));
    ExprPtr ok = binary(Op::And, cmp(Op::Ge, s, intImm(0)), cmp(Op::Lt, s, intImm(xd[d])));
    inside = inside ? binary(Op::And, inside, ok) : ok;
    src.push_back(clampIndex(s, xd[d]));
  }
  Block body;
  if (o.runtimeKernels) body.push_back(Stmt::callKernel("check_values_i64", std::move(check)));
  ExprPtr v = select(inside, load(in, linearIndex(src, strides(xd)), t), constant(t, 0));
  for (auto& s : nest(vs, od, {Stmt::store(out, linearIndex(vars(vs), strides(od)), v)}, true))
    body.push_back(std::move(s));
  return b.finish(std::move(body), {}, o);
}

} // namespace

std::optional<LoweredNode> lowerDataFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  const std::string& op = n.op;
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
    return lowerAlias(n, name, o);
  if (op == "Transpose") return lowerTranspose(n, name, o);
  if (op == "Concat") return lowerConcat(n, name, o);
  if (op == "Slice") return lowerSlice(n, name, o);
  if (op == "Split") return lowerSplit(n, name, o);
  if (op == "Gather") return lowerGather(n, name, o);
  if (op == "GatherElements") return lowerGatherElements(n, name, o);
  if (op == "Trilu") return lowerTrilu(n, name, o);
  if (op == "ScatterND") return lowerScatterND(n, name, o);
  if (op == "ScatterElements") return lowerScatterElements(n, name, o);
  if (op == "GridSample") return lowerGridSample(n, name, o);
  if (op == "CenterCropPad") return lowerCenterCropPad(n, name, o);
  if (op == "Pad") return lowerPad(n, name, o);
  if (op == "Resize") return lowerResize(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
