// Resize (nearest, linear, cubic; antialias, exclude_outside, axes; scales constant or given at
// run time; sizes constant or given at run time, under every keep_aspect_ratio_policy;
// tf_crop_and_resize with its roi constant or given at run time) and CenterCropPad as loop nests
// over the output, with the reference kernels' arithmetic (src/ops/shape_resize.cpp,
// shape_misc.cpp).
#include "loop/lower_ops.h"

#include <cmath>
#include <limits>

namespace aicc::loop::detail {

namespace {

// Resize by `sizes`, as the reference (ops/shape_resize.cpp resizePlan): with
// keep_aspect_ratio_policy stretch each axis's scale is size / in, the declared output's; with
// not_larger / not_smaller one scale s, the smallest / largest of those, for every axis, whose
// sizes are then floor(s * in + 0.5). Constant sizes: s here; sizes given at run time: a stretch
// checks them against the declared output, the others compute s into an f64 temp (the scales the
// nests read) and check the sizes it gives.
void sizesScales(const Node& n, FuncBuilder& b, const LowerOptions& o, const Dims& id,
                 const Dims& od, const std::vector<ExprPtr>& ore, const std::vector<size_t>& axes,
                 std::vector<double>& scale, std::string& runScales, DType& runScalesType,
                 Block& pre) {
  const Value* sz = n.hasInput(3) ? n.inputs[3] : nullptr;
  if (!sz || (sz->type.shape && numel(staticDims(sz, "sizes")) == 0)) return;
  const std::string policy = n.attrString("keep_aspect_ratio_policy");
  const bool larger = policy == "not_larger";
  if (sz->constant) {
    if (policy == "stretch") return;
    double s = larger ? std::numeric_limits<double>::infinity() : 0.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      const double r = double(sz->constant->getI64(int64_t(i))) / double(id[axes[i]]);
      s = larger ? std::min(s, r) : std::max(s, r);
    }
    for (size_t a : axes) scale[a] = s;
    return;
  }
  if (sz->type.dtype != DType::I64 || numel(staticDims(sz, "sizes")) != int64_t(axes.size()))
    no("sizes that are not one int64 per axis");
  if (!o.runtimeKernels) no("sizes given at run time (checked by the runtime only)");
  if (policy == "stretch") { // (symbolic sizes: the output's run dims)
    std::vector<ExprPtr> want;
    for (size_t a : axes) want.push_back(ore[a]);
    pre.push_back(checkValuesI64(b.input(sz), want));
    return;
  }
  std::vector<int64_t> want;
  for (size_t a : axes) want.push_back(od[a]);
  const std::string sv = b.temp("scales", DType::F64, {int64_t(axes.size())}),
                    got = b.temp("sizes", DType::I64, {int64_t(axes.size())}),
                    best = b.temp("scale", DType::F64, {1});
  auto f64 = [](double v) { return floatImm(v, DType::F64); };
  const ExprPtr cur = load(best, intImm(0), DType::F64);
  pre.push_back(
      Stmt::store(best, intImm(0), f64(larger ? std::numeric_limits<double>::infinity() : 0.0)));
  for (size_t i = 0; i < axes.size(); ++i) {
    const ExprPtr r = div(cast(DType::F64, loadI64(b, sz, int64_t(i))), f64(double(id[axes[i]])));
    pre.push_back(Stmt::store(best, intImm(0), larger ? min(cur, r) : max(cur, r)));
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    pre.push_back(Stmt::store(sv, intImm(int64_t(i)), cur));
    pre.push_back(Stmt::store(
        got, intImm(int64_t(i)),
        cast(DType::I64, call("floor", {add(mul(cur, f64(double(id[axes[i]]))), f64(0.5))}))));
  }
  pre.push_back(checkValuesI64(got, want));
  runScales = sv, runScalesType = DType::F64;
}

} // namespace

std::optional<LoweredNode> lowerResize(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  const std::string mode = n.attrString("mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") no("Resize mode " + mode);
  const bool antialias = n.attrInt("antialias", 0) != 0;
  if (antialias && mode == "nearest") no("Resize antialias in nearest mode");
  const bool exclude = n.attrInt("exclude_outside", 0) != 0;
  std::string ctm = n.attrString("coordinate_transformation_mode");
  std::string nm = n.attrString("nearest_mode");
  const bool crop = ctm == "tf_crop_and_resize";
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
  // Symbolic sizes: the run's input and output dims.
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), ore = runDims(o, n.outputs[0], od);
  bool symbolic = false;
  for (size_t d = 0; d < id.size(); ++d) symbolic |= !isImm(ir[d]) || !isImm(ore[d]);
  std::string runScales; // scales given at run time: read from their buffer
  DType runScalesType = DType::F32;
  Block pre; // (sizes given at run time: their checks)
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
    if (!o.runtimeKernels) no("scales given at run time (checked by the runtime only)");
    runScales = b.input(n.inputs[2]);
    // The runtime checks they give the declared output: floor(in * scale) along each axis.
    const std::string given = b.temp("scaled_sizes", DType::I64, {int64_t(axes.size())});
    std::vector<int64_t> want;
    for (size_t i = 0; i < axes.size(); ++i) {
      const ExprPtr sc = cast(DType::F64, load(runScales, intImm(int64_t(i)), DType::F32));
      pre.push_back(Stmt::store(
          given, intImm(int64_t(i)),
          cast(DType::I64, call("floor", {mul(sc, floatImm(double(id[axes[i]]), DType::F64))}))));
      want.push_back(od[axes[i]]);
    }
    pre.push_back(checkValuesI64(given, want));
  } else {
    for (size_t d = 0; d < id.size(); ++d)
      scale[d] = static_cast<double>(od[d]) / static_cast<double>(id[d]);
    sizesScales(n, b, o, id, od, ore, axes, scale, runScales, runScalesType, pre);
  }
  // Symbolic sizes with the output's size given (sizes, stretched; an FPN's upsampling to the
  // skip connection's size): each resized dim's scale is the run's out / in, in f64 as the
  // reference divides them.
  const bool sized =
      !(n.hasInput(2) && n.inputs[2]->type.shape && numel(staticDims(n.inputs[2], "scales")) > 0);
  const bool runSized = symbolic && sized && runScales.empty();
  std::string in = b.input(n.inputs[0]);
  // tf_crop_and_resize: the crop's start and end along each resized dim, from roi (constant or
  // given at run time: [starts of the axes, ends of the axes]).
  std::vector<ExprPtr> roiStart(id.size()), roiEnd(id.size());
  if (crop) {
    if (!n.hasInput(1) || numel(staticDims(n.inputs[1], "roi")) != 2 * int64_t(axes.size()) ||
        !isComputeFloat(n.inputs[1]->type.dtype))
      no("tf_crop_and_resize without a float roi of two values per axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      auto at = [&](size_t k) -> ExprPtr {
        if (const Value* r = n.inputs[1]; r->constant)
          return floatImm(r->constant->getF64(int64_t(k)), DType::F64);
        return cast(DType::F64,
                    load(b.input(n.inputs[1]), intImm(int64_t(k)), n.inputs[1]->type.dtype));
      };
      roiStart[axes[i]] = at(i), roiEnd[axes[i]] = at(i + axes.size());
    }
  }
  // Symbolic sizes: the run's input dims for strides and edge clamps; with constant scales, a
  // coordinate mapping that does not read the sizes (not align_corners or pytorch_half_pixel);
  // with sizes, the run's scales (not antialiased: its footprint is the scale's).
  if (symbolic && (!runScales.empty() || ctm == "half_pixel_symmetric" || crop ||
                   (runSized ? antialias : ctm == "align_corners" || ctm == "pytorch_half_pixel")))
    no("Resize with symbolic sizes takes constant scales and a mapping that does not read the "
       "sizes, or sizes without antialias");
  const std::vector<ExprPtr> is = stridesOf(ir);
  DType t = n.outputs[0]->type.dtype;
  Schedule sch;
  sch["coordinate_transformation_mode"] = ctm;
  sch["nearest_mode"] = nm;
  auto c = [](double x) { return floatImm(x, DType::F64); };
  // The source coordinate (f64) of output position x along dim d.
  std::vector<int64_t> axisPos(id.size(), -1); // where dim d's scale is in the scales input
  for (size_t i = 0; i < axes.size(); ++i) axisPos[axes[i]] = int64_t(i);
  // Dim d's scale (f64): the constant, the run's from the scales input, or the run's out / in.
  auto scaleOf = [&](size_t d) {
    if (runSized) return div(floatOf(DType::F64, ore[d]), floatOf(DType::F64, ir[d]));
    return runScales.empty() ? c(scale[d])
                             : cast(DType::F64, load(runScales, intImm(axisPos[d]), runScalesType));
  };
  auto source = [&](size_t d, ExprPtr x) -> ExprPtr {
    ExprPtr s = scaleOf(d);
    x = cast(DType::F64, x);
    if (ctm == "asymmetric") return div(x, s);
    if (ctm == "half_pixel") return sub(div(add(x, c(0.5)), s), c(0.5));
    if (ctm == "pytorch_half_pixel") {
      const ExprPtr y = sub(div(add(x, c(0.5)), s), c(0.5));
      return !runSized ? (od[d] > 1 ? y : c(0)) : select(cmp(Op::Gt, ore[d], intImm(1)), y, c(0));
    }
    if (ctm == "align_corners") { // the unrounded output length scale * in, as the reference
      if (runScales.empty() && !runSized) {
        const double len = scale[d] * double(id[d]);
        return len == 1 ? c(0) : mul(x, c(double(id[d] - 1) / (len - 1)));
      }
      ExprPtr len = mul(s, floatOf(DType::F64, ir[d]));
      return select(cmp(Op::Eq, len, c(1)), c(0),
                    div(mul(x, sub(floatOf(DType::F64, ir[d]), c(1))), sub(len, c(1))));
    }
    if (ctm == "tf_half_pixel_for_nearest") return div(add(x, c(0.5)), s);
    if (crop) { // (the scale unused)
      const ExprPtr span = mul(sub(roiEnd[d], roiStart[d]), c(double(id[d] - 1)));
      const ExprPtr at = od[d] > 1
                             ? div(mul(mul(x, sub(roiEnd[d], roiStart[d])), c(double(id[d] - 1))),
                                   c(double(od[d] - 1)))
                             : div(span, c(2));
      return add(at, mul(roiStart[d], c(double(id[d] - 1))));
    }
    if (ctm == "half_pixel_symmetric") { // off = center * (1 - od / (scale * id))
      ExprPtr adj = div(c(double(od[d])), mul(s, c(double(id[d]))));
      ExprPtr off = mul(c(id[d] / 2.0), sub(c(1), adj));
      return sub(add(off, div(add(x, c(0.5)), s)), c(0.5));
    }
    no("coordinate_transformation_mode " + ctm);
  };
  // tf_crop_and_resize: a source coordinate outside [0, in - 1] along any resized dim (NaN
  // included) takes extrapolation_value.
  const ExprPtr extrapolation = constant(t, n.attrFloat("extrapolation_value"));
  auto outside = [&](size_t d, const ExprPtr& x) {
    return logicalNot(binary(Op::And, cmp(Op::Ge, x, c(0)), cmp(Op::Le, x, c(double(id[d] - 1)))));
  };
  auto cropped = [&](const ExprPtr& out, const ExprPtr& value) {
    return out ? select(out, extrapolation, value) : value;
  };
  // (a dim of the same size in and out maps every coordinate to itself: not resized)
  auto resized = [&](size_t d) {
    if (runSized) return axisPos[d] >= 0 && !equal(ir[d], ore[d]);
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
    // Each resized dim's taps depend on its output coordinate alone: per coordinate, a table of
    // the taps' indices and weights (normalized where the reference does), computed before the
    // nest, which then reads them.
    std::vector<std::string> tapIndex(id.size()), tapWeight(id.size());
    std::vector<int64_t> tapCount(id.size(), 0);
    for (size_t d = 0; d < id.size(); ++d) {
      if (!resized(d)) continue;
      // antialias (downscaling): the kernel stretched by 1 / scale, over a wider footprint
      // [lo, 2 - lo) of taps, normalized. A scale given at run time is at least out / in (the
      // output is floor(in * scale) long, checked): the footprint of that scale holds the
      // run's, its extra taps weigh 0.
      const double st =
          antialias ? std::min(runScales.empty() ? scale[d] : double(od[d]) / double(id[d]), 1.0)
                    : 1.0;
      const ExprPtr stRun = antialias && !runScales.empty() ? min(scaleOf(d), c(1)) : c(st);
      const int64_t lo = int64_t(std::floor((cubic ? -2.0 : -1.0) / st)) + 1, T = 2 - 2 * lo;
      tapCount[d] = T;
      tapIndex[d] = b.temp("tap_index", DType::I64, {od[d] * T});
      tapWeight[d] = b.temp("tap_weight", DType::F64, {od[d] * T});
      const std::string ov = b.fresh("o"), sum = b.temp("tap_sum", DType::F64, {1});
      const ExprPtr x = source(d, var(ov)), fl = call("floor", {x});
      const ExprPtr base = select(cmp(Op::Eq, fl, x), sub(x, c(1)), fl), r = sub(x, base);
      const ExprPtr bi = cast(DType::I64, base);
      auto at = [&](int64_t i) { return add(mul(var(ov), intImm(T)), intImm(i - lo)); };
      auto weight = [&](int64_t i) { return load(tapWeight[d], at(i), DType::F64); };
      Block entry;
      for (int64_t i = lo; i < 2 - lo; ++i) {
        ExprPtr dist = call("abs", {mul(sub(c(double(i)), r), stRun)});
        ExprPtr w = cubic ? cubicWeight(dist) : max(c(0), sub(c(1), dist));
        ExprPtr idx = add(bi, intImm(i));
        if (exclude)
          w = select(binary(Op::And, cmp(Op::Ge, idx, intImm(0)), cmp(Op::Lt, idx, ir[d])), w,
                     c(0));
        entry.push_back(Stmt::store(tapWeight[d], at(i), w));
        entry.push_back(Stmt::store(tapIndex[d], at(i), clampIndex(idx, ir[d])));
      }
      if (exclude || antialias) {
        ExprPtr total;
        for (int64_t i = lo; i < 2 - lo; ++i) total = total ? add(total, weight(i)) : weight(i);
        entry.push_back(Stmt::store(sum, intImm(0), total));
        const ExprPtr sv = load(sum, intImm(0), DType::F64);
        for (int64_t i = lo; i < 2 - lo; ++i)
          entry.push_back(Stmt::store(
              tapWeight[d], at(i), select(cmp(Op::Eq, sv, c(0)), weight(i), div(weight(i), sv))));
      }
      pre.push_back(Stmt::forLoop(ov, intImm(0), ore[d], std::move(entry)));
    }
    return gatherNest(
        b, out, od,
        [&](const std::vector<ExprPtr>& v) {
          std::vector<size_t> dims;
          std::vector<std::vector<std::pair<ExprPtr, ExprPtr>>> taps(v.size()); // (index, weight)
          ExprPtr out; // (tf_crop_and_resize)
          for (size_t d = 0; d < v.size(); ++d) {
            if (!resized(d)) continue;
            if (crop)
              out = out ? binary(Op::Or, out, outside(d, source(d, v[d])))
                        : outside(d, source(d, v[d]));
            for (int64_t i = 0; i < tapCount[d]; ++i) {
              const ExprPtr at = add(mul(v[d], intImm(tapCount[d])), intImm(i));
              taps[d].push_back(
                  {load(tapIndex[d], at, DType::I64), load(tapWeight[d], at, DType::F64)});
            }
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
            ExprPtr term = cast(DType::F64, load(in, runIndex(idx, is), t));
            // A zero weight skips its tap, as the reference (0 * inf would be NaN).
            if (w) term = select(cmp(Op::Eq, w, c(0)), c(0), mul(w, term));
            sum = sum ? add(sum, term) : term;
          }
          return cropped(out, cast(t, sum));
        },
        o, sch, std::move(pre));
  }
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx;
        ExprPtr out; // (tf_crop_and_resize)
        for (size_t d = 0; d < v.size(); ++d) {
          if (!resized(d)) {
            idx.push_back(v[d]);
            continue;
          }
          // An integer upsampling factor (PyTorch's nearest exports: asymmetric, floor): the
          // integer quotient, as floor(x / k) in f64 is (no f64 division and floor per element).
          const double k = scale[d];
          if (!crop && !runSized && runScales.empty() && ctm == "asymmetric" && nm == "floor" &&
              k >= 1 && k == std::floor(k) && k < 65536) {
            idx.push_back(clampIndex(div(v[d], intImm(int64_t(k))), ir[d]));
            continue;
          }
          ExprPtr xo = source(d, v[d]);
          if (crop) out = out ? binary(Op::Or, out, outside(d, xo)) : outside(d, xo);
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
          idx.push_back(clampIndex(cast(DType::I64, r), ir[d]));
        }
        return cropped(out, load(in, runIndex(idx, is), t));
      },
      o, sch, std::move(pre));
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

} // namespace aicc::loop::detail
