// GridSample (ai.onnx, opsets 16-22) as a loop nest with the reference kernel's arithmetic
// (src/ops/shape_grid.cpp), in f64 like it: for each output point the grid gives one coordinate
// per spatial dim (the last grid dim lists x, y, z: the innermost spatial dim first), unnormalized
// (align_corners or not), rounded half to even for `nearest`, moved inside by the padding mode
// (border: clamped; reflection: reflected off the borders) when outside, and turned into taps:
// 1 (nearest), 2 (linear) or 4 (cubic, A = -0.75) per dim, each tap index outside the input
// dropped (zeros), clamped (border) or reflected (reflection). The output is the weighted sum over
// every combination of one tap per dim, for each channel.
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

struct Tap {
  ExprPtr index;  // i64, inside [0, len)
  ExprPtr weight; // f64, 0 for a dropped tap
};

ExprPtr f64(double v) { return constant(DType::F64, v); }

// x reflected into [lo, hi] (the reference's reflectInto: bounced off the nearer border until
// inside), f64. lo and hi are f64 expressions of the run's sizes, or constants.
ExprPtr reflect(ExprPtr x, const ExprPtr& lo, const ExprPtr& hi) {
  if (equal(lo, hi)) return lo; // an empty range (a side of 1 with align_corners)
  // (a range empty only at run time bounces by 1, finite, and is replaced by lo after)
  const ExprPtr empty = cmp(Op::Le, sub(hi, lo), f64(0));
  const ExprPtr rng = select(empty, f64(1), sub(hi, lo));
  // n = trunc(dx / rng) whole bounces, r = what is left; an even count lands r from the border
  // crossed, an odd one r from the other.
  auto bounce = [&](ExprPtr dx, bool below) {
    ExprPtr n = cast(DType::I64, div(dx, rng));
    ExprPtr r = sub(dx, mul(cast(DType::F64, n), rng));
    ExprPtr even = cmp(Op::Eq, binary(Op::Mod, n, intImm(2)), intImm(0));
    ExprPtr fromLo = add(lo, r), fromHi = sub(hi, r);
    return below ? select(even, fromLo, fromHi) : select(even, fromHi, fromLo);
  };
  return select(empty, lo,
                select(cmp(Op::Lt, x, lo), bounce(sub(lo, x), true),
                       select(cmp(Op::Gt, x, hi), bounce(sub(x, hi), false), x)));
}

} // namespace

std::optional<LoweredNode> lowerGridSample(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  const Dims xd = staticDims(n.inputs.at(0), "X"), gd = staticDims(n.inputs.at(1), "grid");
  const DType t = n.outputs[0]->type.dtype, gt = n.inputs[1]->type.dtype;
  if (!isComputeFloat(t) || !isComputeFloat(gt)) no("GridSample is lowered for f32/f64 only");
  std::string mode = n.attrString("mode"), pad = n.attrString("padding_mode");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if ((mode != "linear" && mode != "nearest" && mode != "cubic") ||
      (pad != "zeros" && pad != "border" && pad != "reflection"))
    no("GridSample mode '" + mode + "' / padding_mode '" + pad + "'");
  const bool align = n.attrInt("align_corners") != 0;
  const int64_t r = int64_t(xd.size()) - 2;
  if (r < 1 || int64_t(gd.size()) != r + 2 || gd.back() != r || gd[0] != xd[0])
    no("grid does not match the input");
  // Symbolic sizes (an image's H and W, the grid's): the run's dims, every value at its run
  // strides; the coordinates' ranges follow the run's input sides.
  const std::vector<ExprPtr> xr = runDims(o, n.inputs[0], xd), gr = runDims(o, n.inputs[1], gd);
  {
    std::vector<ExprPtr> want = {xr[0], xr[1]};
    want.insert(want.end(), gr.begin() + 1, gr.end() - 1);
    const Dims od = staticDims(n.outputs[0], "output");
    const std::vector<ExprPtr> orr = runDims(o, n.outputs[0], od);
    if (!equal(xr[0], gr[0]) || !sameRunDims(od, orr, want))
      no("grid does not match the input at the run's sizes");
  }
  const ExprPtr N = xr[0], C = xr[1];
  const std::vector<ExprPtr> spatial(xr.begin() + 2, xr.end()), st = stridesOf(spatial);
  const ExprPtr P = product(gr, 1, gr.size() - 1), plane = product(spatial);
  if (numel(xd) == 0 || numel(gd) == 0) no("an empty input or grid");
  std::string X = b.input(n.inputs[0]), G = b.input(n.inputs[1]);
  std::string nv = b.loopVar("n"), pv = b.loopVar("p"), cv = b.loopVar("c");
  Block body;
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    const ExprPtr dim = spatial[size_t(d)];
    const ExprPtr len = floatOf(DType::F64, dim);
    const ExprPtr lo = f64(align ? 0 : -0.5),
                  hi = isImm(dim) ? f64(double(*asInt(dim)) - (align ? 1 : 0.5))
                                  : sub(len, f64(align ? 1 : 0.5));
    ExprPtr g =
        cast(DType::F64,
             load(G, add(mul(add(mul(var(nv), P), var(pv)), intImm(r)), intImm(r - 1 - d)), gt));
    ExprPtr v = align ? mul(div(add(g, f64(1)), f64(2)), sub(len, f64(1)))
                      : div(sub(mul(add(g, f64(1)), len), f64(1)), f64(2));
    // |v| >= 1e9 (and NaN) to +-1e9, as the reference keeps the index math defined.
    v = select(cmp(Op::Lt, call("abs", {v}), f64(1e9)), v,
               select(cmp(Op::Gt, v, f64(0)), f64(1e9), f64(-1e9)));
    if (mode == "nearest") v = call("round", {v});
    ExprPtr outside = binary(Op::Or, cmp(Op::Lt, v, lo), cmp(Op::Gt, v, hi));
    if (pad == "border") v = select(outside, min(max(v, f64(0)), sub(len, f64(1))), v);
    if (pad == "reflection") v = select(outside, reflect(v, lo, hi), v);
    const std::string vn = b.fresh("v" + std::to_string(d));
    body.push_back(Stmt::let(vn, v));
    v = var(vn, DType::F64);
    std::vector<std::pair<ExprPtr, ExprPtr>> raw; // (i64 index, f64 weight)
    if (mode == "nearest") {
      raw.push_back({cast(DType::I64, v), f64(1)});
    } else {
      const std::string f0n = b.fresh("f" + std::to_string(d));
      body.push_back(Stmt::let(f0n, call("floor", {v})));
      ExprPtr f0 = var(f0n, DType::F64), f = sub(v, f0), i0 = cast(DType::I64, f0);
      if (mode == "linear") {
        raw = {{i0, sub(f64(1), f)}, {add(i0, intImm(1)), f}};
      } else {
        const double A = -0.75;
        auto w = [&](ExprPtr s) { // s >= 0 here: f + 1, f, 1 - f, 2 - f
          ExprPtr near = add(mul(mul(sub(mul(f64(A + 2), s), f64(A + 3)), s), s), f64(1));
          ExprPtr far =
              sub(mul(add(mul(sub(mul(f64(A), s), f64(5 * A)), s), f64(8 * A)), s), f64(4 * A));
          return select(cmp(Op::Le, s, f64(1)), near, far);
        };
        raw = {{sub(i0, intImm(1)), w(add(f, f64(1)))},
               {i0, w(f)},
               {add(i0, intImm(1)), w(sub(f64(1), f))},
               {add(i0, intImm(2)), w(sub(f64(2), f))}};
      }
    }
    for (auto& [idx, w] : raw) {
      const std::string in = b.fresh("i" + std::to_string(d)),
                        wn = b.fresh("w" + std::to_string(d));
      ExprPtr inside = binary(Op::And, cmp(Op::Ge, idx, intImm(0)), cmp(Op::Lt, idx, dim));
      ExprPtr fixed =
          pad == "reflection"
              ? clampIndex(cast(DType::I64, reflect(cast(DType::F64, idx), lo, hi)), dim)
              : clampIndex(idx, dim);
      body.push_back(Stmt::let(in, select(inside, idx, fixed)));
      body.push_back(Stmt::let(wn, pad == "zeros" ? select(inside, w, f64(0)) : w));
      taps[size_t(d)].push_back({var(in), var(wn, DType::F64)});
    }
  }
  // Every combination of one tap per dim: the offset into the plane and the product weight.
  std::vector<std::pair<ExprPtr, ExprPtr>> combos = {{intImm(0), f64(1)}};
  for (int64_t d = 0; d < r; ++d) {
    std::vector<std::pair<ExprPtr, ExprPtr>> next;
    for (const auto& [off, w] : combos)
      for (const Tap& tp : taps[size_t(d)])
        next.push_back({add(off, mul(tp.index, st[size_t(d)])), mul(w, tp.weight)});
    combos = std::move(next);
  }
  ExprPtr base = mul(add(mul(var(nv), C), var(cv)), plane);
  ExprPtr acc = f64(0);
  for (const auto& [off, w] : combos)
    acc = add(acc, mul(w, cast(DType::F64, load(X, add(base, off), t))));
  ExprPtr y = add(mul(add(mul(var(nv), C), var(cv)), P), var(pv));
  for (auto& s : runNest({cv}, {C}, {Stmt::store(out, y, cast(t, acc))}, false))
    body.push_back(std::move(s));
  Schedule sched;
  sched["mode"] = mode;
  sched["padding_mode"] = pad;
  return b.finish(runNest({nv, pv}, {N, P}, std::move(body), true), std::move(sched), o);
}

} // namespace aicc::loop::detail
