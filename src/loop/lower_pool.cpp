// MaxPool, AveragePool, LpPool (NCHW, any spatial rank; pads, strides, dilations, ceil_mode through
// the static output shape), GlobalAveragePool and GlobalMaxPool as loop nests: for every output
// element, an accumulation over the window with bounds guards; runtime kernels where they apply,
// including the NCHW16c pools and means of the layout pass.
#include "kernels/conv_nchwc.h"
#include "kernels/registry.h"
#include "loop/lower_ops.h"

#include <limits>
#include <tuple>

namespace aicc::loop::detail {

namespace {

std::optional<LoweredNode> lowerGlobal(const Node& n, const std::string& name,
                                       const LowerOptions& o, bool isMax) {
  FuncBuilder b(n, name, "pool");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.size() < 2) no("a float input of rank >= 2 is needed");
  int64_t rows = id[0] * id[1], len = numel(id) / std::max<int64_t>(1, rows);
  // Symbolic sizes: the run's rows (N * C) and row length (the spatial dims).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  const std::vector<ExprPtr> orr = runDims(o, n.outputs[0], staticDims(n.outputs[0], "output"));
  if (orr.empty() || !equal(orr[0], ir[0])) no("the result's batch is not the input's");
  const ExprPtr rowsE = product(ir, 0, 2), lenE = product(ir, 2);
  std::string in = b.input(n.inputs[0]);
  // f32 GlobalAveragePool with runtime kernels: vector row sums, rows over the threads.
  if (!isMax && o.runtimeKernels && t == DType::F32 && rows >= 1 && len >= 1) {
    const auto& kd = kernels::defaultKernel(kernels::KernelOp::DepthwiseConvNchw, o.kernelIsa);
    std::vector<CallArg> a = {CallArg{in, nullptr, nullptr}, CallArg{out, nullptr, nullptr},
                              CallArg{"", nullptr, rowsE}, CallArg{"", nullptr, lenE}};
    Schedule sch;
    markKernel(sch, kd.name);
    sch["parallel"] = std::vector<std::string>{"rows"};
    return b.finish({Stmt::callKernel(std::string("global_avgpool_") + kd.name, a)}, std::move(sch),
                    o);
  }
  std::string r = b.fresh("r"), k = b.fresh("k");
  ExprPtr acc = load(out, var(r), t), x = load(in, add(mul(var(r), lenE), var(k)), t);
  Block body = {Stmt::store(
      out, var(r), isMax ? constant(t, -std::numeric_limits<double>::infinity()) : constant(t, 0))};
  if (len > 0)
    for (auto& s : runNest(
             {k}, {lenE},
             {Stmt::store(out, var(r), isMax ? select(cmp(Op::Gt, x, acc), x, acc) : add(acc, x))},
             false))
      body.push_back(std::move(s));
  if (!isMax)
    body.push_back(
        Stmt::store(out, var(r), div(acc, asInt(lenE) ? constant(t, double(len)) : cast(t, lenE))));
  Schedule sch;
  sch["parallel"] = std::vector<std::string>{r};
  if (rows == 0) return b.finish({}, std::move(sch), o);
  return b.finish(runNest({r}, {rowsE}, std::move(body), true), std::move(sch), o);
}

std::optional<LoweredNode> lowerWindow(const Node& n, const std::string& name,
                                       const LowerOptions& o, bool isMax) {
  if (n.outputs.size() > 1 && n.outputs[1]) no("MaxPool Indices output");
  FuncBuilder b(n, name, "pool");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input"), od = staticDims(n.outputs[0], "output");
  DType t = n.outputs[0]->type.dtype;
  // MaxPool also on 8-bit integers (fold-qdq's DQ -> MaxPool -> Q), in the loop nest below.
  const bool int8Max = isMax && n.op == "MaxPool" && (t == DType::U8 || t == DType::I8);
  if ((!isComputeFloat(t) && !int8Max) || id.size() < 3 || od.size() != id.size())
    no("a float (or, for MaxPool, 8-bit integer) input of rank >= 3 is needed");
  size_t r = id.size() - 2;
  Dims k = n.attrInts("kernel_shape");
  Dims st = n.attrInts("strides", Dims(r, 1)), dl = n.attrInts("dilations", Dims(r, 1));
  if (k.size() != r || st.size() != r || dl.size() != r) no("attributes of the wrong rank");
  std::string ap = n.attrString("auto_pad");
  Dims pb(r, 0), pe(r, 0);
  if (ap == "NOTSET") {
    Dims p = n.attrInts("pads", Dims(2 * r, 0));
    if (p.size() != 2 * r) no("pads of the wrong rank");
    for (size_t d = 0; d < r; ++d) pb[d] = p[d], pe[d] = p[d + r];
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t d = 0; d < r; ++d) {
      int64_t total =
          std::max<int64_t>(0, (od[d + 2] - 1) * st[d] + (k[d] - 1) * dl[d] + 1 - id[d + 2]);
      pb[d] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[d] = total - pb[d];
    }
  } else if (ap != "VALID") {
    no("auto_pad " + ap);
  }
  // Symbolic sizes: the run's batch, channels and spatial sizes; SAME pads follow the run's
  // sizes (pads: the run's; pb / pe above: at the bounds).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), orr = runDims(o, n.outputs[0], od);
  std::vector<ExprPtr> pads(2 * r);
  for (size_t d = 0; d < r; ++d) {
    pads[d] = intImm(pb[d]), pads[d + r] = intImm(pe[d]);
    if (isImm(ir[d + 2]) && isImm(orr[d + 2])) continue;
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER")
      std::tie(pads[d], pads[d + r]) = samePads(ap, ir[d + 2], orr[d + 2], k[d], st[d], dl[d]);
  }
  // LpPool: the sum of |x|^p over the window's inside positions, then its p-th root.
  const int64_t lp = n.op == "LpPool" ? n.attrInt("p") : 0;
  if (n.op == "LpPool" && lp < 1) no("LpPool with p < 1");
  bool countPad = !isMax && !lp && n.attrInt("count_include_pad") != 0;
  std::string in = b.input(n.inputs[0]);
  // 2-D f32 MaxPool and AveragePool with runtime kernels, one call per image: on NCHW16c
  // (passes/assign_layout.h: a 3-D pool over (H, W, lanes), one lane wide) the blocked row kernel
  // over C = blocks x 16 lanes; else the depthwise machinery (its max mode, or sums then divided
  // by the window counts).
  const kernels::KernelDesc* bk = kernels::bestKernel(kernels::KernelOp::ConvNchw16c, o.kernelIsa);
  const bool blocked = bk && r == 3 && id[4] == kernels::kNchwcBlock &&
                       od[4] == kernels::kNchwcBlock && k[2] == 1 && st[2] == 1 && pb[2] == 0 &&
                       pe[2] == 0 && dl == Dims{1, 1, 1};
  if ((isMax || !lp) && o.runtimeKernels && t == DType::F32 && (r == 2 || blocked)) {
    const auto& kd =
        blocked ? *bk : kernels::defaultKernel(kernels::KernelOp::DepthwiseConvNchw, o.kernelIsa);
    std::string nv = b.fresh("n");
    ExprPtr nn = var(nv);
    const int64_t C = blocked ? id[1] * kernels::kNchwcBlock : id[1];
    std::vector<CallArg> a = {CallArg{in, mul(nn, product({intImm(C), ir[2], ir[3]})), nullptr},
                              CallArg{out, mul(nn, product({intImm(C), orr[2], orr[3]})), nullptr}};
    auto arg = [&](ExprPtr v) { a.push_back(CallArg{"", nullptr, std::move(v)}); };
    for (int64_t v : {C, int64_t(0), int64_t(0), int64_t(0)}) arg(intImm(v));
    arg(ir[2]), arg(ir[3]);
    for (int64_t v : {k[0], k[1], st[0], st[1]}) arg(intImm(v));
    for (size_t d : {size_t(0), size_t(1), r, r + 1}) arg(pads[d]);
    for (int64_t v : {dl[0], dl[1]}) arg(intImm(v));
    arg(orr[2]), arg(orr[3]);
    if (!isMax) arg(intImm(countPad ? 1 : 0));
    Schedule sch;
    markKernel(sch, kd.name);
    sch["layout"] = std::string(blocked ? "nchw16c" : "nchw; padded planes");
    sch["parallel"] = blocked ? std::vector<std::string>{"channel blocks", "rows"}
                              : std::vector<std::string>{"channels"};
    const std::string callee =
        std::string(isMax ? "maxpool_nchw" : "avgpool_nchw") + (blocked ? "16c_" : "_") + kd.name;
    return b.finish(runNest({nv}, {ir[0]}, {Stmt::callKernel(callee, a)}, false), std::move(sch),
                    o);
  }
  // One loop over batch x channels (the parallel one: batch is usually 1), then the window.
  std::vector<std::string> ov = {b.fresh("nc")}, kv;
  for (size_t d = 0; d < r; ++d) ov.push_back(b.fresh("o" + std::to_string(d)));
  for (size_t d = 0; d < r; ++d) kv.push_back(b.fresh("k" + std::to_string(d)));
  const std::vector<ExprPtr> inner(ir.begin() + 2, ir.end());
  std::vector<ExprPtr> ext = {product(orr, 0, 2)};
  ext.insert(ext.end(), orr.begin() + 2, orr.end());
  ExprPtr yIdx = runIndex(vars(ov), stridesOf(ext));
  ExprPtr base = var(ov[0]);
  std::vector<ExprPtr> pos;
  ExprPtr inside, counted;
  for (size_t d = 0; d < r; ++d) {
    ExprPtr p =
        add(sub(mul(var(ov[d + 1]), intImm(st[d])), pads[d]), mul(var(kv[d]), intImm(dl[d])));
    pos.push_back(p);
    ExprPtr ok = binary(Op::And, cmp(Op::Ge, p, intImm(0)), cmp(Op::Lt, p, inner[d]));
    inside = inside ? binary(Op::And, inside, ok) : ok;
    ExprPtr cok = cmp(Op::Lt, p, add(inner[d], pads[d + r]));
    counted = counted ? binary(Op::And, counted, cok) : cok;
  }
  ExprPtr xIdx = add(mul(base, product(inner)), runIndex(pos, stridesOf(inner)));
  ExprPtr acc = load(out, yIdx, t), x = load(in, xIdx, t);
  Block pix = {Stmt::store(out, yIdx,
                           int8Max ? constant(t, t == DType::U8 ? 0.0 : -128.0)
                           : isMax ? constant(t, -std::numeric_limits<double>::infinity())
                                   : constant(t, 0))};
  std::string cnt;
  if (!isMax && !lp) {
    cnt = b.temp("count", t, od);
    pix.push_back(Stmt::store(cnt, yIdx, constant(t, 0)));
  }
  ExprPtr step = isMax ? select(cmp(Op::Gt, x, acc), x, acc)
                 : lp  ? add(acc, call("pow", {call("abs", {x}), constant(t, double(lp))}))
                       : add(acc, x);
  Block win = {Stmt::ifThen(inside, {Stmt::store(out, yIdx, step)})};
  if (!isMax && !lp)
    win.push_back(Stmt::ifThen(countPad ? counted : inside,
                               {Stmt::store(cnt, yIdx, add(load(cnt, yIdx, t), constant(t, 1)))}));
  for (auto& s : nest(kv, k, std::move(win), false)) pix.push_back(std::move(s));
  if (lp)
    pix.push_back(Stmt::store(out, yIdx, call("pow", {acc, constant(t, 1.0 / double(lp))})));
  else if (!isMax)
    pix.push_back(Stmt::store(out, yIdx, div(acc, load(cnt, yIdx, t))));
  Schedule sch;
  sch["parallel"] = std::vector<std::string>{ov[0]};
  return b.finish(runNest(ov, ext, std::move(pix), true), std::move(sch), o);
}

} // namespace

// ReduceMean over H and W of an NCHW16c tensor [N, C/16, H, W, 16] (the layout pass's
// GlobalAveragePool), per image, when the blocked kernels are there; else nullopt (the reduction
// lowering's loop nest).
std::optional<LoweredNode> lowerBlockedMean(const Node& n, const std::string& name,
                                            const LowerOptions& o) {
  const kernels::KernelDesc* kd = kernels::bestKernel(kernels::KernelOp::ConvNchw16c, o.kernelIsa);
  if (!o.runtimeKernels || !kd || n.inputs.size() != 2 || !n.inputs[1] ||
      !n.inputs[1]->isConstant() || !n.inputs[1]->constant->defined() ||
      n.inputs[1]->constant->toI64Vector() != std::vector<int64_t>{2, 3} ||
      n.attrInt("keepdims", 1) != 1 || n.inputs[0]->type.dtype != DType::F32)
    return std::nullopt;
  const auto shape = n.inputs[0]->type.shape ? toDims(*n.inputs[0]->type.shape) : std::nullopt;
  if (!shape || shape->size() != 5 || (*shape)[4] != kernels::kNchwcBlock) return std::nullopt;
  const Dims& d = *shape;
  // Symbolic sizes: the run's batch and sides.
  const std::vector<ExprPtr> xr = runDims(o, n.inputs[0], d);
  const std::vector<ExprPtr> yr = runDims(o, n.outputs[0], staticDims(n.outputs[0], "Y"));
  if (!equalDims({xr[0]}, {yr[0]})) no("blocked mean between different symbolic batches");
  FuncBuilder b(n, name, "reduce");
  const std::string X = b.input(n.inputs[0]), Y = b.output(0), nv = b.fresh("n");
  const ExprPtr nn = var(nv);
  Schedule sched;
  markKernel(sched, kd->name);
  sched["layout"] = std::string("nchw16c");
  Block body = runNest({nv}, {xr[0]},
                       {Stmt::callKernel(std::string("mean_nchw16c_") + kd->name,
                                         {CallArg{X, mul(nn, product(xr, 1)), nullptr},
                                          CallArg{Y, mul(nn, intImm(d[1] * d[4])), nullptr},
                                          CallArg{"", nullptr, intImm(d[1])},
                                          CallArg{"", nullptr, product(xr, 2, 4)}})},
                       false);
  return b.finish(std::move(body), std::move(sched), o);
}

// RoiAlign, in double as the reference (ops/nn_roi.cpp): per roi its box scaled (and shifted
// half a pixel), per bin a gh x gw grid of bilinear samples (sampling_ratio, else ceil of the
// bin's size: a loop extent of the run's boxes), averaged or maxed; a sample outside
// [-1, H] x [-1, W] weighs 0. Batch indices outside [0, N) are the run's error (checkValuesBelow).
std::optional<LoweredNode> lowerRoiAlign(const Node& n, const std::string& name,
                                         const LowerOptions& o) {
  FuncBuilder b(n, name, "pool");
  const Dims xd = staticDims(n.inputs.at(0), "X"), rd = staticDims(n.inputs.at(1), "rois");
  const DType t = n.inputs[0]->type.dtype, bt = n.inputs.at(2)->type.dtype;
  if ((t != DType::F32 && t != DType::F64) || n.inputs[1]->type.dtype != t || bt != DType::I64)
    no("RoiAlign of f32/f64 with int64 batch indices");
  if (xd.size() != 4 || rd.size() != 2 || rd[1] != 4) no("X [N, C, H, W] and rois [R, 4]");
  const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], R = rd[0];
  const int64_t OH = n.attrInt("output_height", 1), OW = n.attrInt("output_width", 1),
                ratio = n.attrInt("sampling_ratio", 0);
  const double scale = n.attrFloat("spatial_scale");
  const std::string mode = n.attrString("mode"),
                    ctm = n.attrString("coordinate_transformation_mode");
  if ((mode != "avg" && mode != "max") || (ctm != "half_pixel" && ctm != "output_half_pixel"))
    no("RoiAlign mode or coordinate transformation");
  const bool half = ctm == "half_pixel", avg = mode == "avg";
  if (staticDims(n.outputs[0], "Y") != Dims{R, C, OH, OW}) no("output shape");
  const std::string x = b.input(n.inputs[0]), rois = b.input(n.inputs[1]),
                    bidx = b.input(n.inputs[2]), y = b.output(0),
                    acc = b.temp("acc", DType::F64, {1});
  const std::string rv = b.fresh("r"), cv = b.fresh("c"), phv = b.fresh("ph"), pwv = b.fresh("pw"),
                    iyv = b.fresh("iy"), ixv = b.fresh("ix");
  auto d = [](double v) { return floatImm(v, DType::F64); };
  auto f64 = [](ExprPtr e) { return cast(DType::F64, std::move(e)); };
  auto let = [&](Block& blk, const std::string& base, ExprPtr e) {
    const std::string v = b.fresh(base);
    blk.push_back(Stmt::let(v, std::move(e)));
    return var(v, DType::F64);
  };
  auto leti = [&](Block& blk, const std::string& base, ExprPtr e) {
    const std::string v = b.fresh(base);
    blk.push_back(Stmt::let(v, std::move(e)));
    return var(v);
  };
  Block roi;
  const ExprPtr r = var(rv);
  const ExprPtr bi = clampIndex(load(bidx, r, DType::I64), N);
  auto coord = [&](int k) {
    return sub(mul(f64(load(rois, add(mul(r, intImm(4)), intImm(k)), t)), d(scale)),
               d(half ? 0.5 : 0.0));
  };
  const ExprPtr x0 = let(roi, "x0", coord(0)), y0 = let(roi, "y0", coord(1));
  ExprPtr rw = sub(coord(2), x0), rh = sub(coord(3), y0);
  if (!half) rw = max(rw, d(1)), rh = max(rh, d(1));
  rw = let(roi, "rw", rw), rh = let(roi, "rh", rh);
  const ExprPtr bh = let(roi, "bh", div(rh, d(double(OH)))),
                bw = let(roi, "bw", div(rw, d(double(OW))));
  auto grid = [&](const ExprPtr& size, int64_t bins) -> ExprPtr {
    if (ratio > 0) return intImm(ratio);
    return max(cast(DType::I64, call("ceil", {div(size, d(double(bins)))})), intImm(0));
  };
  const ExprPtr gh = leti(roi, "gh", grid(rh, OH)), gw = leti(roi, "gw", grid(rw, OW));
  const ExprPtr count = let(roi, "count", f64(max(mul(gh, gw), intImm(1))));
  // One sample at (sy, sx): the bilinear weights of its four positions (0 outside the plane).
  Block sample;
  const ExprPtr sy =
      let(sample, "sy",
          add(add(y0, mul(f64(var(phv)), bh)), div(mul(add(f64(var(iyv)), d(0.5)), bh), f64(gh))));
  const ExprPtr sx =
      let(sample, "sx",
          add(add(x0, mul(f64(var(pwv)), bw)), div(mul(add(f64(var(ixv)), d(0.5)), bw), f64(gw))));
  const ExprPtr inside =
      binary(Op::And, binary(Op::And, cmp(Op::Ge, sy, d(-1)), cmp(Op::Le, sy, d(double(H)))),
             binary(Op::And, cmp(Op::Ge, sx, d(-1)), cmp(Op::Le, sx, d(double(W)))));
  const ExprPtr cy = max(sy, d(0)), cx = max(sx, d(0));
  const ExprPtr yl0 = leti(sample, "yl", cast(DType::I64, cy)),
                xl0 = leti(sample, "xl", cast(DType::I64, cx));
  const ExprPtr yEdge = cmp(Op::Ge, yl0, intImm(H - 1)), xEdge = cmp(Op::Ge, xl0, intImm(W - 1));
  const ExprPtr yl = leti(sample, "y_lo", select(yEdge, intImm(H - 1), yl0)),
                xl = leti(sample, "x_lo", select(xEdge, intImm(W - 1), xl0));
  const ExprPtr yh = select(yEdge, intImm(H - 1), add(yl0, intImm(1))),
                xh = select(xEdge, intImm(W - 1), add(xl0, intImm(1)));
  const ExprPtr ly = let(sample, "ly", sub(select(yEdge, f64(yl), cy), f64(yl))),
                lx = let(sample, "lx", sub(select(xEdge, f64(xl), cx), f64(xl)));
  const ExprPtr hy = sub(d(1), ly), hx = sub(d(1), lx);
  const ExprPtr plane = mul(add(mul(bi, intImm(C)), var(cv)), intImm(H * W));
  auto px = [&](const ExprPtr& yy, const ExprPtr& xx) {
    return f64(load(x, add(plane, add(mul(clampIndex(yy, H), intImm(W)), clampIndex(xx, W))), t));
  };
  auto w = [&](ExprPtr e) { return select(inside, std::move(e), d(0)); };
  const ExprPtr t0 = mul(w(mul(hy, hx)), px(yl, xl)), t1 = mul(w(mul(hy, lx)), px(yl, xh)),
                t2 = mul(w(mul(ly, hx)), px(yh, xl)), t3 = mul(w(mul(ly, lx)), px(yh, xh));
  const ExprPtr a = load(acc, intImm(0), DType::F64);
  if (avg) {
    sample.push_back(Stmt::store(acc, intImm(0), add(add(add(add(a, t0), t1), t2), t3)));
  } else {
    const ExprPtr v = let(sample, "v", max(max(max(t0, t1), t2), t3));
    const ExprPtr first =
        binary(Op::And, cmp(Op::Eq, var(iyv), intImm(0)), cmp(Op::Eq, var(ixv), intImm(0)));
    sample.push_back(Stmt::store(acc, intImm(0), select(first, v, max(a, v))));
  }
  Block bin = {
      Stmt::store(acc, intImm(0), d(0)),
      Stmt::forLoop(iyv, intImm(0), gh, {Stmt::forLoop(ixv, intImm(0), gw, std::move(sample))})};
  bin.push_back(Stmt::store(
      y,
      add(mul(add(mul(add(mul(r, intImm(C)), var(cv)), intImm(OH)), var(phv)), intImm(OW)),
          var(pwv)),
      cast(t, avg ? div(a, count) : a)));
  roi.push_back(
      Stmt::forLoop(cv, intImm(0), intImm(C),
                    {Stmt::forLoop(phv, intImm(0), intImm(OH),
                                   {Stmt::forLoop(pwv, intImm(0), intImm(OW), std::move(bin))})}));
  Block body = checkValuesBelow(bidx, DType::I64, R, N, o);
  body.push_back(Stmt::forLoop(rv, intImm(0), intImm(R), std::move(roi)));
  Schedule sch;
  sch["mode"] = mode;
  return b.finish(std::move(body), std::move(sch), o);
}

// MaxUnpool: zeros, then each X value at its index (into the unpooled [N, C, (x - 1) s - pads + k]
// tensor, row major; later duplicates win, as the reference writes in order), placed at the same
// coordinates of a larger output_shape when one is given (checked at run time against the
// declared output). Indices outside the unpooled tensor are the run's error (checkValuesBelow).
std::optional<LoweredNode> lowerMaxUnpool(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  FuncBuilder b(n, name, "pool");
  const Dims xd = staticDims(n.inputs.at(0), "X"), od = staticDims(n.outputs.at(0), "Y");
  const DType t = n.inputs[0]->type.dtype;
  if (t == DType::String || n.inputs.at(1)->type.dtype != DType::I64 ||
      staticDims(n.inputs[1], "I") != xd || xd.size() < 3 || od.size() != xd.size())
    no("MaxUnpool of X and int64 indices of one shape");
  const size_t sp = xd.size() - 2;
  const Dims k = n.attrInts("kernel_shape"), s = n.attrInts("strides", Dims(sp, 1)),
             pads = n.attrInts("pads", Dims(2 * sp, 0));
  if (k.size() != sp || s.size() != sp || pads.size() != 2 * sp) no("window attributes");
  Dims unpooled = {xd[0], xd[1]};
  for (size_t i = 0; i < sp; ++i)
    unpooled.push_back((xd[i + 2] - 1) * s[i] - pads[i] - pads[i + sp] + k[i]);
  for (size_t i = 0; i < od.size(); ++i)
    if (od[i] < unpooled[i]) no("an output smaller than the unpooled shape");
  Block body;
  if (od != unpooled) {
    if (!n.hasInput(2) || !o.runtimeKernels) no("an output shape other than the unpooled one");
    body.push_back(checkValuesI64(b.input(n.inputs[2]), od));
  }
  const std::string x = b.input(n.inputs[0]), ind = b.input(n.inputs[1]), y = b.output(0);
  const int64_t total = numel(unpooled);
  for (auto& st : checkValuesBelow(ind, DType::I64, numel(xd), total, o))
    body.push_back(std::move(st));
  const std::string zv = b.fresh("z"), ev = b.fresh("e");
  body.push_back(
      Stmt::forLoop(zv, intImm(0), intImm(numel(od)), {Stmt::store(y, var(zv), constant(t, 0))}));
  // The index's coordinates in the unpooled tensor, at the output's strides.
  const ExprPtr kk = clampIndex(load(ind, var(ev), DType::I64), std::max<int64_t>(total, 1));
  const Dims ust = strides(unpooled), ost = strides(od);
  ExprPtr at = intImm(0);
  for (size_t d = 0; d < od.size(); ++d)
    at = add(at, mul(mod(div(kk, intImm(ust[d])), intImm(unpooled[d])), intImm(ost[d])));
  body.push_back(
      Stmt::forLoop(ev, intImm(0), intImm(numel(xd)), {Stmt::store(y, at, load(x, var(ev), t))}));
  return b.finish(std::move(body), {}, o);
}

// 2-D MaxPool with its Indices output, as a loop nest in the reference's order (ops/nn_pool.cpp):
// per output pixel the window's taps inside the image, rows then columns, a strictly larger value
// replacing the best (the first maximum wins); the index of the best in the flattened input
// (storage_order 1: within its plane column-major), -1 and the lowest value where the window
// holds no pixel of the image.
std::optional<LoweredNode> lowerMaxPoolIndices(const Node& n, const std::string& name,
                                               const LowerOptions& o) {
  FuncBuilder b(n, name, "pool");
  const Dims xd = staticDims(n.inputs.at(0), "X"), yd = staticDims(n.outputs.at(0), "Y");
  const DType t = n.inputs[0]->type.dtype;
  if (xd.size() != 4 || yd.size() != 4 || staticDims(n.outputs[1], "Indices") != yd ||
      n.outputs[1]->type.dtype != DType::I64 || (t != DType::F32 && t != DType::F64))
    no("MaxPool Indices of a 2-D f32/f64 pool");
  const std::string ap = n.attrString("auto_pad");
  if (ap != "NOTSET" && ap != "VALID") no("MaxPool Indices with auto_pad " + ap);
  const Dims k = n.attrInts("kernel_shape"), s = n.attrInts("strides", {1, 1}),
             dl = n.attrInts("dilations", {1, 1});
  const Dims pads = ap == "VALID" ? Dims{0, 0, 0, 0} : n.attrInts("pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || dl.size() != 2 || pads.size() != 4) no("window attributes");
  const int64_t NC = xd[0] * xd[1], H = xd[2], W = xd[3], OH = yd[2], OW = yd[3];
  const bool colMajor = n.attrInt("storage_order", 0) != 0;
  const std::string x = b.input(n.inputs[0]), y = b.output(0), yi = b.output(1),
                    best = b.temp("best", t, {1}), at = b.temp("at", DType::I64, {1});
  const std::string cv = b.fresh("nc"), ohv = b.fresh("oh"), owv = b.fresh("ow"),
                    kyv = b.fresh("ky"), kxv = b.fresh("kx");
  const ExprPtr iy =
      add(sub(mul(var(ohv), intImm(s[0])), intImm(pads[0])), mul(var(kyv), intImm(dl[0])));
  const ExprPtr ix =
      add(sub(mul(var(owv), intImm(s[1])), intImm(pads[1])), mul(var(kxv), intImm(dl[1])));
  const ExprPtr inside =
      binary(Op::And, binary(Op::And, cmp(Op::Ge, iy, intImm(0)), cmp(Op::Lt, iy, intImm(H))),
             binary(Op::And, cmp(Op::Ge, ix, intImm(0)), cmp(Op::Lt, ix, intImm(W))));
  const ExprPtr cy = clampIndex(iy, H), cx = clampIndex(ix, W);
  const ExprPtr v = load(x, add(mul(add(mul(var(cv), intImm(H)), cy), intImm(W)), cx), t);
  const ExprPtr a = load(at, intImm(0), DType::I64);
  const ExprPtr sp = colMajor ? add(cy, mul(intImm(H), cx)) : add(mul(cy, intImm(W)), cx);
  Block tap = {Stmt::ifThen(
      binary(Op::And, inside,
             binary(Op::Or, cmp(Op::Lt, a, intImm(0)), cmp(Op::Gt, v, load(best, intImm(0), t)))),
      {Stmt::store(best, intImm(0), v),
       Stmt::store(at, intImm(0), add(mul(var(cv), intImm(H * W)), sp))})};
  const ExprPtr o1 = add(mul(add(mul(var(cv), intImm(OH)), var(ohv)), intImm(OW)), var(owv));
  Block pixel = {Stmt::store(best, intImm(0),
                             floatImm(t == DType::F32 ? double(std::numeric_limits<float>::lowest())
                                                      : std::numeric_limits<double>::lowest(),
                                      t)),
                 Stmt::store(at, intImm(0), intImm(-1)),
                 Stmt::forLoop(kyv, intImm(0), intImm(k[0]),
                               {Stmt::forLoop(kxv, intImm(0), intImm(k[1]), std::move(tap))}),
                 Stmt::store(y, o1, load(best, intImm(0), t)), Stmt::store(yi, o1, a)};
  Block body = {Stmt::forLoop(
      cv, intImm(0), intImm(NC),
      {Stmt::forLoop(ohv, intImm(0), intImm(OH),
                     {Stmt::forLoop(owv, intImm(0), intImm(OW), std::move(pixel))})})};
  return b.finish(std::move(body), {}, o);
}

std::optional<LoweredNode> lowerPoolFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "ReduceMean") return lowerBlockedMean(n, name, o); // else the reduction's nest
  if (n.op == "GlobalAveragePool") return lowerGlobal(n, name, o, false);
  if (n.op == "GlobalMaxPool") return lowerGlobal(n, name, o, true);
  if (n.op == "MaxPool" && n.outputs.size() > 1 && n.outputs[1])
    return lowerMaxPoolIndices(n, name, o);
  if (n.op == "MaxPool") return lowerWindow(n, name, o, true);
  if (n.op == "AveragePool" || n.op == "LpPool") return lowerWindow(n, name, o, false);
  if (n.op == "RoiAlign") return lowerRoiAlign(n, name, o);
  if (n.op == "MaxUnpool") return lowerMaxUnpool(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
