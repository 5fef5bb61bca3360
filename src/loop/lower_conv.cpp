// Conv (NCHW, any spatial rank, stride, padding, dilation and group) as a direct loop nest, or as
// micro-kernel calls per image (and group): depthwise 3x3 (pad 1, stride 1/2) or im2col + GEMM
// for 1-D and 2-D convolutions (see rt/callees.cpp for the call contracts).
#include "kernels/conv.h"
#include "kernels/conv_nchwc.h"
#include "kernels/gemm.h"
#include "kernels/registry.h"
#include "loop/lower_ops.h"

#include <functional>
#include <tuple>

namespace aicc::loop::detail {

namespace {

const Value* outerOf(const Bind& bind, const Value* v) {
  auto it = bind.find(v);
  return it != bind.end() ? it->second : v;
}

} // namespace

ConvShape convShape(const Node& head, const Dims& xd, const Dims& wd, const Dims& yd) {
  ConvShape s;
  if (xd.size() < 3 || wd.size() != xd.size() || yd.size() != xd.size())
    no("Conv operands must have rank >= 3 and equal ranks");
  size_t r = xd.size() - 2;
  s.N = xd[0], s.C = xd[1], s.M = wd[0], s.G = head.attrInt("group");
  if (s.G <= 0 || s.C % s.G || s.M % s.G || wd[1] != s.C / s.G)
    no("Conv channels do not match the group count");
  s.in.assign(xd.begin() + 2, xd.end());
  s.out.assign(yd.begin() + 2, yd.end());
  s.k.assign(wd.begin() + 2, wd.end());
  s.stride = head.attrInts("strides", Dims(r, 1));
  s.dil = head.attrInts("dilations", Dims(r, 1));
  if (s.stride.size() != r || s.dil.size() != r) no("Conv strides/dilations of the wrong rank");
  std::string ap = head.attrString("auto_pad");
  s.padBegin.assign(r, 0), s.padEnd.assign(r, 0);
  if (ap == "NOTSET") {
    Dims p = head.attrInts("pads", Dims(2 * r, 0));
    if (p.size() != 2 * r) no("Conv pads of the wrong rank");
    for (size_t d = 0; d < r; ++d) s.padBegin[d] = p[d], s.padEnd[d] = p[d + r];
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t d = 0; d < r; ++d) {
      int64_t total = std::max<int64_t>(0, (s.out[d] - 1) * s.stride[d] + (s.k[d] - 1) * s.dil[d] +
                                               1 - s.in[d]);
      s.padBegin[d] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      s.padEnd[d] = total - s.padBegin[d];
    }
  } else if (ap != "VALID") {
    no("Conv auto_pad '" + ap + "'");
  }
  for (size_t d = 0; d < r; ++d)
    if ((s.in[d] + s.padBegin[d] + s.padEnd[d] - s.dil[d] * (s.k[d] - 1) - 1) / s.stride[d] + 1 !=
        s.out[d])
      no("Conv output shape does not match the attributes");
  return s;
}

namespace {

CallArg buf(const std::string& b, ExprPtr off) { return CallArg{b, std::move(off), nullptr}; }
CallArg val(int64_t v) { return CallArg{"", nullptr, intImm(v)}; }

} // namespace

namespace {

// Weights packed at compile time for @conv2d_nchw_packed_<kd>'s GEMM form (kernels::convRowsFor
// of one group's geometry cs, which the runtime picks alike), G groups one after another: group
// g's [cs.Cout, cs.Cin * taps] rows read from groupWeights(g). The constant's name, its floats per
// group and whether the pixels are the GEMM's rows (the call's last argument says so).
struct PackedConvWeights {
  std::string name;
  int64_t perGroup;
  bool pixelRows;
};
PackedConvWeights packedConvWeights(FuncBuilder& b, const std::string& base,
                                    const kernels::KernelDesc& kd, const kernels::Conv2dShape& cs,
                                    int64_t G,
                                    const std::function<const float*(int64_t)>& groupWeights,
                                    const LowerOptions& o) {
  const kernels::ConvRows rows = kernels::convRowsFor(kd, cs);
  const bool pixelRows = rows == kernels::ConvRows::Pixels;
  const int64_t per = kernels::convPackedWeightFloats(kd, cs, rows);
  Tensor packed(DType::F32, {o.probe ? 0 : per * G}); // a probe needs no data
  for (int64_t g = 0; g < G && !o.probe; ++g)
    kernels::packConvWeights(kd, cs, rows, groupWeights(g), packed.data<float>() + g * per);
  return {b.constant(base, std::move(packed),
                     std::string(pixelRows ? "packed_b:" : "packed_a:") + kd.name),
          per, pixelRows};
}

// ConvTranspose's sizes as its lowerings take them: groups, channels per group (in, out), the
// input's static sides (at the bounds), kernel, strides, dilations, the leading pads and the
// run's dims of X and Y.
struct ConvTransposeGeometry {
  int64_t G, Cg, Mg;
  Dims in, k, st, dl;
  std::vector<ExprPtr> padBegin, xr, yr;
};

// ConvTranspose as a GEMM and a col2im, per image and group: cols[(mg, k), i] = sum over c of
// W[g * Cg + c, mg, k] * x[g * Cg + c, i] (the packed convolution kernel as a 1x1 convolution
// over the input's pixels i, its weights W transposed and packed at compile time), then
// y[g * Mg + mg, o] += cols[(mg, k), i] where o = i * stride - pad + k * dilation lies inside the
// output, after y = bias. A gather loop nest tested every tap of every input channel at every
// output pixel: ppocrv4-det's 2x2 stride-2 upsamplings took 199 of its 221 ms (Intel Xeon).
Block convTransposeGemm(FuncBuilder& b, const ConvTransposeGeometry& geo, const Tensor& w,
                        const std::string& X, const std::string& B, const std::string& outParam,
                        const LowerOptions& o, const kernels::KernelDesc& kd, Schedule& sched) {
  const bool two = geo.in.size() == 2; // a 1-D one is 2-D of height 1
  auto as2 = [&](const Dims& d, int64_t one) { return two ? d : Dims{one, d[0]}; };
  const Dims in = as2(geo.in, 1), k = as2(geo.k, 1), st = as2(geo.st, 1), dl = as2(geo.dl, 1);
  const std::vector<ExprPtr> inE =
      two ? std::vector<ExprPtr>{geo.xr[2], geo.xr[3]} : std::vector<ExprPtr>{intImm(1), geo.xr[2]};
  const std::vector<ExprPtr> outE =
      two ? std::vector<ExprPtr>{geo.yr[2], geo.yr[3]} : std::vector<ExprPtr>{intImm(1), geo.yr[2]};
  const std::vector<ExprPtr> pad =
      two ? geo.padBegin : std::vector<ExprPtr>{intImm(0), geo.padBegin[0]};
  const int64_t G = geo.G, Cg = geo.Cg, Mg = geo.Mg, K = k[0] * k[1], M = G * Mg;
  kernels::Conv2dShape cs; // one group's GEMM, as a 1x1 convolution
  cs.H = in[0], cs.W = in[1], cs.Cin = Cg, cs.Cout = Mg * K, cs.KH = cs.KW = 1;
  std::vector<float> wt(size_t(Mg * K * Cg)); // group g's W [Cg, Mg * K] transposed
  const PackedConvWeights packed = packedConvWeights(
      b, b.fresh("w_transposed"), kd, cs, G,
      [&](int64_t g) {
        const float* src = w.data<float>() + g * Cg * Mg * K;
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t j = 0; j < Mg * K; ++j) wt[size_t(j * Cg + c)] = src[c * Mg * K + j];
        return wt.data();
      },
      o);
  const std::string& WP = packed.name;
  const int64_t per = packed.perGroup;
  const bool pixelRows = packed.pixelRows;
  const std::string cols = b.temp("cols", DType::F32, {Mg * K, in[0] * in[1]});
  const std::string nv = b.fresh("n"), gv = b.fresh("g"), mv = b.fresh("m"), pv = b.fresh("p");
  const ExprPtr n = var(nv), g = var(gv), inSz = product(inE), outSz = product(outE);
  // y = bias (or 0).
  const ExprPtr yAt = add(mul(add(mul(n, intImm(M)), var(mv)), outSz), var(pv));
  Block body =
      runNest({nv, mv, pv}, {geo.xr[0], intImm(M), outSz},
              {Stmt::store(outParam, yAt,
                           B.empty() ? constant(DType::F32, 0) : load(B, var(mv), DType::F32))},
              true);
  // Per image and group: the GEMM into cols, then each column added at its output pixel.
  std::vector<CallArg> a = {buf(X, mul(add(mul(n, intImm(G * Cg)), mul(g, intImm(Cg))), inSz)),
                            buf(WP, mul(g, intImm(per))),
                            val(0),
                            buf(cols, nullptr),
                            val(Cg),
                            val(Mg * K),
                            CallArg{"", nullptr, inE[0]},
                            CallArg{"", nullptr, inE[1]}};
  for (int64_t v : {1, 1, 1, 1, 0, 0, 0, 0, 1, 1}) a.push_back(val(v));
  for (auto& c : clampArgs(nullptr, true)) a.push_back(std::move(c));
  a.push_back(residualArg(nullptr, nullptr));
  a.push_back(val(int64_t(pixelRows ? kernels::kConvPixelRows : kernels::kConvChannelRows)));
  const std::string khv = b.fresh("kh"), kwv = b.fresh("kw"), ihv = b.fresh("ih"),
                    iwv = b.fresh("iw");
  const ExprPtr oh = add(sub(mul(var(ihv), intImm(st[0])), pad[0]), mul(var(khv), intImm(dl[0])));
  const ExprPtr ow = add(sub(mul(var(iwv), intImm(st[1])), pad[1]), mul(var(kwv), intImm(dl[1])));
  const ExprPtr inside =
      binary(Op::And, binary(Op::And, cmp(Op::Ge, oh, intImm(0)), cmp(Op::Lt, oh, outE[0])),
             binary(Op::And, cmp(Op::Ge, ow, intImm(0)), cmp(Op::Lt, ow, outE[1])));
  const ExprPtr y = add(mul(add(mul(n, intImm(M)), add(mul(g, intImm(Mg)), var(mv))), outSz),
                        add(mul(oh, outE[1]), ow));
  const ExprPtr col =
      add(mul(add(mul(add(mul(var(mv), intImm(k[0])), var(khv)), intImm(k[1])), var(kwv)), inSz),
          add(mul(var(ihv), inE[1]), var(iwv)));
  Block scatter = runNest(
      {mv, khv, kwv, ihv, iwv}, {intImm(Mg), intImm(k[0]), intImm(k[1]), inE[0], inE[1]},
      {Stmt::ifThen(
          inside, {Stmt::store(outParam, y,
                               add(load(outParam, y, DType::F32), load(cols, col, DType::F32)))})},
      true);
  Block perGroup = {Stmt::callKernel(std::string("conv2d_nchw_packed_") + kd.name, a)};
  for (Stmt& st2 : scatter) perGroup.push_back(std::move(st2));
  for (Stmt& st2 : runNest({nv, gv}, {geo.xr[0], intImm(G)}, std::move(perGroup), false))
    body.push_back(std::move(st2));
  markKernel(sched, kd.name);
  sched["layout"] = std::string("nchw; weights transposed and packed at compile time (") +
                    (pixelRows ? "B" : "A") + " panels), then col2im";
  sched["tile"] = std::vector<int64_t>{kd.mr, kd.nr, kd.kc};
  return body;
}

// ConvTranspose as a gather loop nest: y[n, m, o] = bias[m] + sum over the input channels c of
// m's group and kernel taps k of x[n, c, i] * w[c, m % Mg, k] where i * stride = o + pad - k * dil.
// Symbolic sizes (LowerOptions::runDim): the run's extents and strides.
Block convTransposeBody(FuncBuilder& b, const Node& head, const Bind& bind,
                        const std::string& outParam, const LowerOptions& o,
                        const std::string& candidate, Schedule& sched) {
  const Value* xv = outerOf(bind, head.inputs.at(0));
  const Value* wv = outerOf(bind, head.inputs.at(1));
  const Value* bv = head.hasInput(2) ? outerOf(bind, head.inputs[2]) : nullptr;
  DType t = xv->type.dtype;
  // The GEMM form (convTransposeGemm): f32, constant weights, 1-D or 2-D, runtime kernels; the
  // default, or a GEMM micro-kernel candidate.
  const size_t rank = xv->type.shape ? xv->type.shape->size() : 0;
  const bool gemmOk = o.runtimeKernels && t == DType::F32 && wv->constant && wv->type.dtype == t &&
                      (rank == 3 || rank == 4);
  const kernels::KernelDesc* kd = nullptr;
  if (candidate.empty() && gemmOk) {
    kd = &kernels::defaultKernel(kernels::KernelOp::Gemm, o.kernelIsa);
  } else if (!candidate.empty() && candidate != kLoopCandidate) {
    if (candidate.rfind("ukernel:", 0) != 0) no("unknown candidate '" + candidate + "'");
    kd = kernels::findKernel(candidate.substr(8));
    if (!kd || !kernels::isaWithin(kd->isa, o.kernelIsa) || kd->op != kernels::KernelOp::Gemm ||
        !gemmOk)
      no("candidate '" + candidate + "' does not apply to ConvTranspose");
  }
  if (!isComputeFloat(t) || wv->type.dtype != t || (bv && bv->type.dtype != t))
    no("ConvTranspose is lowered for f32/f64 only");
  Dims xd = staticDims(xv, "X"), wd = staticDims(wv, "W"), yd = staticDims(head.outputs[0], "Y");
  if (xd.size() < 3 || wd.size() != xd.size() || yd.size() != xd.size()) no("bad ranks");
  size_t r = xd.size() - 2;
  int64_t G = head.attrInt("group"), C = xd[1];
  if (G <= 0 || C % G || wd[0] != C) no("channels do not match the group count");
  int64_t Cg = C / G, Mg = wd[1], M = Mg * G;
  if (yd[1] != M) no("output channels mismatch");
  Dims in(xd.begin() + 2, xd.end()), out(yd.begin() + 2, yd.end()), k(wd.begin() + 2, wd.end());
  Dims st = head.attrInts("strides", Dims(r, 1)), dl = head.attrInts("dilations", Dims(r, 1));
  Dims op = head.attrInts("output_padding", Dims(r, 0));
  if (op.empty()) op.assign(r, 0);
  if (st.size() != r || dl.size() != r || op.size() != r) no("attributes of the wrong rank");
  std::string ap = head.attrString("auto_pad");
  Dims outShape = head.attrInts("output_shape", {});
  const std::vector<ExprPtr> xr = runDims(o, xv, xd), yr = runDims(o, head.outputs[0], yd);
  bool symbolic = false;
  for (size_t d = 0; d < xr.size(); ++d) symbolic |= !isImm(xr[d]) || !isImm(yr[d]);
  Dims pb(r, 0);
  for (size_t d = 0; d < r; ++d) {
    int64_t full = st[d] * (in[d] - 1) + op[d] + dl[d] * (k[d] - 1) + 1;
    if (!outShape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      int64_t total = full - out[d];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pb[d] = ap == "SAME_UPPER" ? half : total - half;
    } else if (ap == "NOTSET") {
      Dims p = head.attrInts("pads", Dims(2 * r, 0));
      if (p.size() != 2 * r) no("pads of the wrong rank");
      pb[d] = p[d];
      if (full - p[d] - p[d + r] != out[d]) no("output shape does not match the attributes");
    }
  }
  std::string X = b.input(xv), W = b.input(wv), B = bv ? b.input(bv) : "";
  const int64_t kSz = numel(k);
  const std::vector<ExprPtr> inE(xr.begin() + 2, xr.end()), outE(yr.begin() + 2, yr.end());
  // The leading pads as expressions: with output_shape or auto_pad SAME at symbolic sizes they
  // follow the run's sizes (total = stride * (in - 1) + output_padding + dilation * (k - 1) + 1
  // - out, split as above: half = floor(total / 2)); else pb's.
  std::vector<ExprPtr> pbE;
  for (size_t d = 0; d < r; ++d) {
    pbE.push_back(intImm(pb[d]));
    if (!symbolic || (outShape.empty() && ap != "SAME_UPPER" && ap != "SAME_LOWER")) continue;
    const ExprPtr total =
        sub(add(mul(intImm(st[d]), sub(inE[d], intImm(1))), intImm(op[d] + dl[d] * (k[d] - 1) + 1)),
            outE[d]);
    // floor(total / 2) for either sign (total may be negative)
    const ExprPtr half = select(cmp(Op::Ge, total, intImm(0)), div(total, intImm(2)),
                                neg(div(add(neg(total), intImm(1)), intImm(2))));
    pbE.back() = ap == "SAME_UPPER" ? half : sub(total, half);
  }
  const ExprPtr inSz = product(inE), outSz = product(outE);
  if (kd) {
    ConvTransposeGeometry geo{G, Cg, Mg, in, k, st, dl, pbE, xr, yr};
    return convTransposeGemm(b, geo, *wv->constant, X, B, outParam, o, *kd, sched);
  }
  std::string nv = b.fresh("n"), mv = b.fresh("m"), cv = b.fresh("c");
  std::vector<std::string> ov, kv;
  for (size_t d = 0; d < r; ++d) ov.push_back(b.fresh("o" + std::to_string(d)));
  for (size_t d = 0; d < r; ++d) kv.push_back(b.fresh("k" + std::to_string(d)));
  ExprPtr n = var(nv), m = var(mv), c = var(cv);
  ExprPtr yIdx =
      add(add(mul(n, mul(intImm(M), outSz)), mul(m, outSz)), runIndex(vars(ov), stridesOf(outE)));
  ExprPtr ic = add(mul(div(m, intImm(Mg)), intImm(Cg)), c);
  std::vector<ExprPtr> pos;
  ExprPtr cond;
  for (size_t d = 0; d < r; ++d) {
    ExprPtr tt = sub(add(var(ov[d]), pbE[d]), mul(var(kv[d]), intImm(dl[d])));
    ExprPtr ok =
        binary(Op::And, cmp(Op::Ge, tt, intImm(0)), cmp(Op::Lt, tt, mul(inE[d], intImm(st[d]))));
    if (st[d] != 1) ok = binary(Op::And, ok, cmp(Op::Eq, mod(tt, intImm(st[d])), intImm(0)));
    cond = cond ? binary(Op::And, cond, ok) : ok;
    pos.push_back(st[d] == 1 ? tt : div(tt, intImm(st[d])));
  }
  ExprPtr xIdx =
      add(add(mul(n, mul(intImm(C), inSz)), mul(ic, inSz)), runIndex(pos, stridesOf(inE)));
  ExprPtr wIdx = add(add(mul(ic, intImm(Mg * kSz)), mul(mod(m, intImm(Mg)), intImm(kSz))),
                     linearIndex(vars(kv), strides(k)));
  Stmt accum = Stmt::store(outParam, yIdx,
                           add(load(outParam, yIdx, t), mul(load(X, xIdx, t), load(W, wIdx, t))));
  std::vector<std::string> red = {cv};
  Dims redExt = {Cg};
  for (size_t d = 0; d < r; ++d) red.push_back(kv[d]), redExt.push_back(k[d]);
  Block pix = {Stmt::store(outParam, yIdx, bv ? load(B, m, t) : constant(t, 0))};
  for (auto& s2 : nest(red, redExt, {Stmt::ifThen(cond, {accum})}, false))
    pix.push_back(std::move(s2));
  std::vector<std::string> outer = {nv, mv};
  std::vector<ExprPtr> outerExt = {xr[0], intImm(M)};
  for (size_t d = 0; d < r; ++d) outer.push_back(ov[d]), outerExt.push_back(outE[d]);
  sched["candidate"] = std::string(kLoopCandidate);
  sched["parallel"] = std::vector<std::string>{nv};
  return runNest(outer, outerExt, std::move(pix), true);
}

// aicc.ConvNchwc (ops/layout.h): the blocked convolution kernel per image, weights packed at
// compile time (kernels/conv_nchwc.h), the epilogue (bias, residual, clamp, activation) in its
// tile.
Block convNchwcBody(FuncBuilder& b, const Node& head, const Bind& bind, const std::string& outParam,
                    const LowerOptions& o, Schedule& sched, FusedClamp* clamp) {
  const Value* xv = outerOf(bind, head.inputs.at(0));
  const Value* wv = outerOf(bind, head.inputs.at(1));
  const Value* bv = head.hasInput(2) ? outerOf(bind, head.inputs[2]) : nullptr;
  const kernels::KernelDesc* kd = kernels::bestKernel(kernels::KernelOp::ConvNchw16c, o.kernelIsa);
  if (!o.runtimeKernels || !kd) no("aicc.ConvNchwc needs the blocked convolution kernel (AVX-512)");
  if (xv->type.dtype != DType::F32 || !wv->constant || (bv && bv->type.dtype != DType::F32))
    no("aicc.ConvNchwc is lowered for f32 with constant weights");
  const Dims xd = staticDims(xv, "X"), wd = staticDims(wv, "W"),
             yd = staticDims(head.outputs[0], "Y");
  if ((xd.size() != 5 && xd.size() != 4) || wd.size() != 4 || yd.size() != 5)
    no("aicc.ConvNchwc operands of the wrong rank");
  const bool plane = xd.size() == 4; // a stem reading NCHW planes
  // The logical NCHW geometry, as Conv's.
  const int64_t G = head.attrInt("group");
  const ConvShape s =
      convShape(head, {xd[0], wd[1] * G, xd[2], xd[3]}, wd, {yd[0], wd[0], yd[2], yd[3]});
  const bool dw = s.G > 1;
  if (plane && dw) no("aicc.ConvNchwc on NCHW input is group 1");
  if (dw && (s.G != s.C || s.M != s.C)) no("aicc.ConvNchwc is group 1 or depthwise");
  kernels::Conv2dShape cs;
  cs.H = s.in[0], cs.W = s.in[1], cs.Cin = s.C, cs.Cout = s.M, cs.KH = s.k[0], cs.KW = s.k[1];
  cs.strideH = s.stride[0], cs.strideW = s.stride[1], cs.padTop = s.padBegin[0];
  cs.padLeft = s.padBegin[1], cs.padBottom = s.padEnd[0], cs.padRight = s.padEnd[1];
  cs.dilH = s.dil[0], cs.dilW = s.dil[1];
  if (!kernels::nchwcConvApplies(cs)) no("aicc.ConvNchwc: the blocked kernel does not apply");
  const int64_t per = dw      ? kernels::nchwcDepthwiseWeightFloats(cs)
                      : plane ? kernels::nchwcPlanePackedWeightFloats(cs)
                              : kernels::nchwcPackedWeightFloats(cs);
  Tensor packed(DType::F32, {o.probe ? 0 : per});
  if (!o.probe)
    (dw      ? kernels::packNchwcDepthwise
     : plane ? kernels::packNchwcPlaneWeights
             : kernels::packNchwcWeights)(cs, wv->constant->data<float>(), packed.data<float>());
  const std::string X = b.input(xv), W = b.input(wv), B = bv ? b.input(bv) : "";
  const std::string WP =
      b.constant(W + "_nchw16c", std::move(packed), std::string("packed_nchw16c:") + kd->name);
  const std::string nv = b.fresh("n");
  const ExprPtr n = var(nv);
  // Symbolic sizes (LowerOptions::runDim): the run's batch and sides, as the kernel's arguments
  // and the images' offsets (the kernel runs rows of any width; the pads are explicit).
  const std::vector<ExprPtr> xr = runDims(o, xv, xd), yr = runDims(o, head.outputs[0], yd);
  const ExprPtr inFloats = product(xr, 1), outFloats = product(yr, 1);
  std::vector<CallArg> a = {
      buf(X, mul(n, inFloats)),         buf(WP, nullptr), bv ? buf(B, nullptr) : val(0),
      buf(outParam, mul(n, outFloats)), val(cs.Cin),      val(cs.Cout)};
  a.push_back(CallArg{"", nullptr, xr[2]});
  a.push_back(CallArg{"", nullptr, xr[3]});
  for (int64_t v : {cs.KH, cs.KW, cs.strideH, cs.strideW, cs.padTop, cs.padLeft, cs.padBottom,
                    cs.padRight, cs.dilH, cs.dilW})
    a.push_back(val(v));
  for (auto& c : clampArgs(clamp, true)) a.push_back(std::move(c));
  a.push_back(residualArg(clamp, mul(n, outFloats)));
  markKernel(sched, kd->name, clamp);
  sched["layout"] =
      std::string(plane ? "nchw -> nchw16c" : "nchw16c") + "; weights packed at compile time";
  if (!dw) sched["tile"] = std::vector<int64_t>{kd->mr, kd->nr};
  const char* callee = dw ? "dwconv_nchw16c_" : plane ? "conv2d_nchw_nchw16c_" : "conv2d_nchw16c_";
  return runNest({nv}, {xr[0]}, {Stmt::callKernel(std::string(callee) + kd->name, a)}, false);
}

} // namespace

Block convBody(FuncBuilder& b, const Node& head, const Bind& bind, const std::string& outParam,
               const LowerOptions& o, const std::string& candidate, Schedule& sched,
               FusedClamp* clamp) {
  if (head.op == "ConvTranspose" && head.domain.empty())
    return convTransposeBody(b, head, bind, outParam, o, candidate, sched);
  if (head.op == "ConvNchwc" && head.domain == kAiccDomain)
    return convNchwcBody(b, head, bind, outParam, o, sched, clamp);
  // ConvInteger: u8/i8 operands less their zero points (x's a scalar, w's one or one per output
  // channel), exact int32 sums, on the direct loop nest (padding adds nothing, as x - x_zero_point
  // of the reference's padding).
  // QLinearConv's sums likewise (lower_qconv.cpp lowerQConvLoop: its weights at input 3, their
  // zero point at 5, an i32 bias at 8), into an i32 buffer the requantization reads.
  const bool qlinear = head.op == "QLinearConv", integer = head.op == "ConvInteger" || qlinear;
  if ((head.op != "Conv" && !integer) || !head.domain.empty())
    no("head " + head.op + " is not lowered");
  const size_t wAt = qlinear ? 3 : 1, wzpAt = qlinear ? 5 : 3, bAt = qlinear ? 8 : 2;
  const Value* xv = outerOf(bind, head.inputs.at(0));
  const Value* wv = outerOf(bind, head.inputs.at(wAt));
  const Value* bv =
      head.hasInput(bAt) && (!integer || qlinear) ? outerOf(bind, head.inputs[bAt]) : nullptr;
  const Value* yv = head.outputs.at(0);
  DType t = xv->type.dtype;
  const DType wt = wv->type.dtype, acc = integer ? DType::I32 : t;
  if (integer ? !isQ8(t) || !isQ8(wt) || (bv && bv->type.dtype != DType::I32)
              : !isComputeFloat(t) || wt != t || (bv && bv->type.dtype != t))
    no(integer ? "ConvInteger is lowered for u8/i8 operands only"
               : "Conv is lowered for f32/f64 only");
  const Dims xd = staticDims(xv, "X"), yd = staticDims(yv, "Y");
  ConvShape s = convShape(head, xd, staticDims(wv, "W"), yd);
  std::string X = b.input(xv), W = b.input(wv), B = bv ? b.input(bv) : "";
  size_t r = s.in.size();
  int64_t inSz = numel(s.in), outSz = numel(s.out);
  // Symbolic sizes (LowerOptions::runDim): the run's batch and spatial sizes, as the micro-kernel
  // calls' arguments and offsets (their planned sizes are the symbols' bounds).
  const std::vector<ExprPtr> xr = runDims(o, xv, xd), yr = runDims(o, yv, yd);
  bool symbolic = false;
  for (size_t d = 0; d < xr.size(); ++d) symbolic |= !isImm(xr[d]) || !isImm(yr[d]);
  const ExprPtr inSzE = product(xr, 2), outSzE = product(yr, 2);

  // Micro-kernel applicability.
  bool f32 = t == DType::F32, dilOne = true, padsOne = true;
  for (size_t d = 0; d < r; ++d) {
    dilOne &= s.dil[d] == 1;
    padsOne &= s.padBegin[d] == 1 && s.padEnd[d] == 1;
  }
  bool dwOk = f32 && r == 2 && s.G == s.C && s.M == s.C && s.k == Dims{3, 3} && dilOne && padsOne &&
              s.stride[0] == s.stride[1] && (s.stride[0] == 1 || s.stride[0] == 2);
  bool gemmOk = f32 && (r == 1 || r == 2);
  // The NCHW depthwise kernel (runtime kernels): any size, stride, dilation, multiplier.
  const bool dwAny = o.runtimeKernels && f32 && (r == 1 || r == 2) && s.G == s.C;
  const kernels::KernelDesc* kd = nullptr;
  if (candidate.empty()) {
    if (dwAny)
      kd = &kernels::defaultKernel(kernels::KernelOp::DepthwiseConvNchw, o.kernelIsa);
    else if (dwOk)
      kd = &kernels::defaultKernel(kernels::KernelOp::DepthwiseConv3x3, o.kernelIsa);
    else if (gemmOk && o.bf16 && o.runtimeKernels && wv->constant &&
             kernels::bestKernel(kernels::KernelOp::GemmBf16, o.kernelIsa))
      kd = kernels::bestKernel(kernels::KernelOp::GemmBf16, o.kernelIsa);
    else if (gemmOk)
      kd = &kernels::defaultKernel(kernels::KernelOp::Gemm, o.kernelIsa);
  } else if (candidate != kLoopCandidate) {
    if (candidate.rfind("ukernel:", 0) != 0) no("unknown candidate '" + candidate + "'");
    kd = kernels::findKernel(candidate.substr(8));
    if (!kd || !kernels::isaWithin(kd->isa, o.kernelIsa))
      no("candidate '" + candidate + "' is not runnable on the target");
    const bool fits = kd->op == kernels::KernelOp::Gemm               ? gemmOk
                      : kd->op == kernels::KernelOp::DepthwiseConv3x3 ? dwOk
                      : kd->op == kernels::KernelOp::GemmBf16
                          ? gemmOk && o.runtimeKernels && wv->constant && s.k.size() == r
                          : dwAny;
    if (kd->op == kernels::KernelOp::GemmBf16 && !o.bf16)
      no("candidate '" + candidate + "' needs --precision bf16");
    if (!fits) no("candidate '" + candidate + "' does not apply");
  }

  std::string nv = b.fresh("n");
  // The micro-kernels take 2-D geometry: a 1-D convolution is one of height 1.
  const bool two = r == 2;
  const Dims in2 = two ? s.in : Dims{1, s.in[0]}, k2 = two ? s.k : Dims{1, s.k[0]};
  const Dims st2 = two ? s.stride : Dims{1, s.stride[0]}, dl2 = two ? s.dil : Dims{1, s.dil[0]};
  const Dims pb = two ? s.padBegin : Dims{0, s.padBegin[0]};
  const Dims pe = two ? s.padEnd : Dims{0, s.padEnd[0]};
  const std::vector<ExprPtr> in2E =
      two ? std::vector<ExprPtr>{xr[2], xr[3]} : std::vector<ExprPtr>{intImm(1), xr[2]};
  // The pads (top, left, bottom, right) as the calls take them: auto_pad SAME's follow the run's
  // sizes (total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - in), split as convShape
  // splits it at the bounds); the others are the attributes'.
  std::vector<ExprPtr> pad2 = {intImm(pb[0]), intImm(pb[1]), intImm(pe[0]), intImm(pe[1])};
  if (const std::string ap = head.attrString("auto_pad"); symbolic && ap.rfind("SAME", 0) == 0)
    for (size_t d = 0; d < r; ++d) {
      const size_t at = two ? d : 1; // (a 1-D convolution's width)
      std::tie(pad2[at], pad2[at + 2]) =
          samePads(ap, xr[d + 2], yr[d + 2], s.k[d], s.stride[d], s.dil[d]);
    }
  int64_t Cg = s.C / s.G, Mg = s.M / s.G, kSz = numel(s.k);
  if (symbolic && !(o.runtimeKernels && kd && f32 && (r == 1 || r == 2) && s.k.size() == r &&
                    ((Cg == 1 && kd->op == kernels::KernelOp::DepthwiseConvNchw) ||
                     (kernels::isGemmOp(kd->op) && wv->constant))))
    no("Conv with symbolic sizes runs on the NCHW micro-kernels only (f32, 1-D or 2-D, "
       "constant weights or depthwise)");
  // NCHW micro-kernels without layout copies (JIT): depthwise of any size, and GEMM convolution
  // with the weights packed at compile time.
  if (o.runtimeKernels && kd && f32 && (r == 1 || r == 2) && s.k.size() == r) {
    ExprPtr n = var(nv);
    auto geometry = [&](std::vector<CallArg>& a) {
      a.push_back(CallArg{"", nullptr, in2E[0]});
      a.push_back(CallArg{"", nullptr, in2E[1]});
      for (int64_t v : {k2[0], k2[1], st2[0], st2[1]}) a.push_back(val(v));
      for (const ExprPtr& p : pad2) a.push_back(CallArg{"", nullptr, p});
      for (int64_t v : {dl2[0], dl2[1]}) a.push_back(val(v));
    };
    const ExprPtr xImage = mul(n, mul(intImm(s.C), inSzE)),
                  yImage = mul(n, mul(intImm(s.M), outSzE));
    if (Cg == 1 && kd->op == kernels::KernelOp::DepthwiseConvNchw) { // channel multiplier Mg
      const auto* dk = kd;
      std::vector<CallArg> a = {
          buf(X, xImage),        buf(W, nullptr), bv ? buf(B, nullptr) : val(0),
          buf(outParam, yImage), val(s.C),        val(Mg)};
      geometry(a);
      for (auto& c : clampArgs(clamp)) a.push_back(std::move(c));
      markKernel(sched, dk->name, clamp);
      sched["layout"] = std::string("nchw");
      sched["parallel"] = std::vector<std::string>{"channels"};
      return runNest({nv}, {xr[0]}, {Stmt::callKernel(std::string("dwconv_nchw_") + dk->name, a)},
                     false);
    }
    if (kernels::isGemmOp(kd->op) && wv->constant) {
      // One group's geometry, as the runtime sees it: it picks the same GEMM layout
      // (kernels::convRowsFor) for the weights packed here.
      kernels::Conv2dShape cs;
      cs.H = in2[0], cs.W = in2[1], cs.Cin = Cg, cs.Cout = Mg, cs.KH = k2[0], cs.KW = k2[1];
      cs.strideH = st2[0], cs.strideW = st2[1], cs.padTop = pb[0], cs.padLeft = pb[1];
      cs.padBottom = pe[0], cs.padRight = pe[1], cs.dilH = dl2[0], cs.dilW = dl2[1];
      const float* wsrc = wv->constant->data<float>();
      const PackedConvWeights packed = packedConvWeights(
          b, W + "_packed", *kd, cs, s.G, [&](int64_t g) { return wsrc + g * Mg * Cg * kSz; }, o);
      const std::string& WP = packed.name;
      const int64_t per = packed.perGroup;
      const bool pixelRows = packed.pixelRows;
      std::string gv = b.fresh("g");
      ExprPtr g = var(gv);
      const ExprPtr yOff = add(yImage, mul(g, mul(intImm(Mg), outSzE)));
      std::vector<CallArg> a = {buf(X, add(xImage, mul(g, mul(intImm(Cg), inSzE)))),
                                buf(WP, mul(g, intImm(per))),
                                bv ? buf(B, mul(g, intImm(Mg))) : val(0),
                                buf(outParam, yOff),
                                val(Cg),
                                val(Mg)};
      geometry(a);
      for (auto& c : clampArgs(clamp, true)) a.push_back(std::move(c));
      a.push_back(residualArg(clamp, yOff));
      // Activations stored as bf16 (LowerOptions::bf16Activations; bf16 kernels, which run
      // channel rows only): their buffers are bf16 and one more argument says which
      // (kernels::Epilogue::bf16).
      unsigned io = 0;
      if (o.bf16Activations && kd->op == kernels::KernelOp::GemmBf16) {
        auto stored = [&](const std::string& p, unsigned bit) {
          const Value* v = p.empty() ? nullptr : b.ln.valueOf(p);
          if (!v || !o.bf16Activations->count(v)) return;
          io |= bit;
          for (Buffer& q : b.ln.func.params)
            if (q.name == p) q.dtype = DType::BF16;
        };
        stored(X, kernels::kBf16Input);
        if (kd->bf16Io) { // the tile stores bf16 and reads a bf16 residual
          stored(outParam, kernels::kBf16Output);
          stored(a.back().buffer, kernels::kBf16Residual);
        }
      }
      // The GEMM form chosen here (the weights are packed for it), whatever the run's sizes.
      a.push_back(
          val(int64_t(io) | (pixelRows ? kernels::kConvPixelRows : kernels::kConvChannelRows)));
      if (io)
        sched["bf16_activations"] = std::string((io & kernels::kBf16Input ? "in " : "")) +
                                    (io & kernels::kBf16Output ? "out " : "") +
                                    (io & kernels::kBf16Residual ? "residual" : "");
      markKernel(sched, kd->name, clamp);
      sched["layout"] = std::string(pixelRows ? "nchw; weights packed at compile time (B panels, "
                                                "pixels as rows)"
                                              : "nchw; weights packed at compile time (A panels)");
      sched["tile"] = std::vector<int64_t>{kd->mr, kd->nr, kd->kc};
      return runNest({nv, gv}, {xr[0], intImm(s.G)},
                     {Stmt::callKernel(std::string("conv2d_nchw_packed_") + kd->name, a)}, false);
    }
  }
  if (kd && kd->op == kernels::KernelOp::DepthwiseConv3x3) {
    ExprPtr n = var(nv);
    Block call = {
        Stmt::callKernel(std::string("dwconv_nchw_") + kd->name,
                         {buf(X, mul(n, intImm(s.C * inSz))), buf(W, nullptr),
                          bv ? buf(B, nullptr) : val(0), buf(outParam, mul(n, intImm(s.M * outSz))),
                          val(s.C), val(s.in[0]), val(s.in[1]), val(s.stride[0])})};
    markKernel(sched, kd->name);
    sched["layout"] = std::string("nhwc inside the call");
    sched["parallel"] = std::vector<std::string>{nv};
    return nest({nv}, {s.N}, std::move(call), true);
  }
  if (kd) {
    std::string gv = b.fresh("g");
    ExprPtr n = var(nv), g = var(gv);
    Block call = {Stmt::callKernel(
        std::string("conv2d_nchw_") + kd->name,
        {buf(X, add(mul(n, intImm(s.C * inSz)), mul(g, intImm(Cg * inSz)))),
         buf(W, mul(g, intImm(Mg * Cg * kSz))), bv ? buf(B, mul(g, intImm(Mg))) : val(0),
         buf(outParam, add(mul(n, intImm(s.M * outSz)), mul(g, intImm(Mg * outSz)))), val(Cg),
         val(in2[0]), val(in2[1]), val(Mg), val(k2[0]), val(k2[1]), val(st2[0]), val(st2[1]),
         val(pb[0]), val(pb[1]), val(pe[0]), val(pe[1]), val(dl2[0]), val(dl2[1])})};
    markKernel(sched, kd->name);
    sched["layout"] = std::string("nhwc inside the call (im2col + packed weights)");
    sched["parallel"] = std::vector<std::string>{nv};
    return nest({nv, gv}, {s.N, s.G}, std::move(call), true);
  }

  // The direct loop nest: for n, m, o...: y = bias; for c, k...: y += x * w (inside the image).
  std::string mv = b.fresh("m"), cv = b.fresh("c");
  std::vector<std::string> ov, kv;
  for (size_t d = 0; d < r; ++d) ov.push_back(b.fresh("o" + std::to_string(d)));
  for (size_t d = 0; d < r; ++d) kv.push_back(b.fresh("k" + std::to_string(d)));
  ExprPtr n = var(nv), m = var(mv), c = var(cv);
  ExprPtr yIdx = add(add(mul(n, intImm(s.M * outSz)), mul(m, intImm(outSz))),
                     linearIndex(vars(ov), strides(s.out)));
  // Input channel of group(m): (m / Mg) * Cg + c.
  ExprPtr ic = add(mul(div(m, intImm(Mg)), intImm(Cg)), c);
  std::vector<ExprPtr> pos;
  ExprPtr inside;
  for (size_t d = 0; d < r; ++d) {
    ExprPtr p = add(sub(mul(var(ov[d]), intImm(s.stride[d])), intImm(s.padBegin[d])),
                    mul(var(kv[d]), intImm(s.dil[d])));
    pos.push_back(p);
    if (s.padBegin[d] > 0 || s.padEnd[d] > 0 ||
        (s.out[d] - 1) * s.stride[d] + (s.k[d] - 1) * s.dil[d] >= s.in[d]) {
      ExprPtr ok = binary(Op::And, cmp(Op::Ge, p, intImm(0)), cmp(Op::Lt, p, intImm(s.in[d])));
      inside = inside ? binary(Op::And, inside, ok) : ok;
    }
  }
  ExprPtr xIdx =
      add(add(mul(n, intImm(s.C * inSz)), mul(ic, intImm(inSz))), linearIndex(pos, strides(s.in)));
  ExprPtr wIdx =
      add(add(mul(m, intImm(Cg * kSz)), mul(c, intImm(kSz))), linearIndex(vars(kv), strides(s.k)));
  ExprPtr xe = load(X, xIdx, t), we = load(W, wIdx, wt);
  if (integer) { // x's zero point a scalar, w's one per output channel when not
    auto input = [&](size_t k) {
      return head.hasInput(k) ? outerOf(bind, head.inputs[k]) : nullptr;
    };
    xe = sub(cast(DType::I32, xe), zeroPointAt(b, input(2), intImm(0), DType::I32));
    we = sub(cast(DType::I32, we), zeroPointAt(b, input(wzpAt), m, DType::I32));
  }
  Stmt accum = Stmt::store(outParam, yIdx, add(load(outParam, yIdx, acc), mul(xe, we)));
  Block kb = {inside ? Stmt::ifThen(inside, {accum}) : accum};
  std::vector<std::string> redVars = {cv};
  Dims redExt = {Cg};
  for (size_t d = 0; d < r; ++d) redVars.push_back(kv[d]), redExt.push_back(s.k[d]);
  Block pix = {Stmt::store(outParam, yIdx, bv ? load(B, m, acc) : constant(acc, 0))};
  for (auto& st : nest(redVars, redExt, std::move(kb), false)) pix.push_back(std::move(st));
  std::vector<std::string> outer = {nv, mv};
  Dims outerExt = {s.N, s.M};
  for (size_t d = 0; d < r; ++d) outer.push_back(ov[d]), outerExt.push_back(s.out[d]);
  sched["candidate"] = std::string(kLoopCandidate);
  std::vector<std::string> order = outer;
  order.insert(order.end(), redVars.begin(), redVars.end());
  sched["loop_order"] = order;
  sched["parallel"] = std::vector<std::string>{nv};
  return nest(outer, outerExt, std::move(pix), true);
}

// aicc.Reorder between NCHW and NCHW16c, per image (kernels/conv_nchwc.h).
std::optional<LoweredNode> lowerReorder(const Node& n, const std::string& name,
                                        const LowerOptions& o) {
  const kernels::KernelDesc* kd = kernels::bestKernel(kernels::KernelOp::ConvNchw16c, o.kernelIsa);
  if (!o.runtimeKernels || !kd) no("aicc.Reorder needs the blocked convolution kernels (AVX-512)");
  const Value* xv = n.inputs.at(0);
  if (xv->type.dtype != DType::F32) no("aicc.Reorder is lowered for f32");
  const bool to = n.attrString("to") == "nchw16c";
  const Value* fv = to ? xv : n.outputs[0]; // the NCHW side
  const Dims flat = staticDims(fv, to ? "X" : "Y");
  if (flat.size() < 3) no("aicc.Reorder of a tensor without spatial dims");
  // Symbolic sizes: the run's batch and sides (both sides' symbolic dims read).
  const std::vector<ExprPtr> fr = runDims(o, fv, flat);
  const Value* bv = to ? n.outputs[0] : xv; // the blocked side
  const std::vector<ExprPtr> br = runDims(o, bv, staticDims(bv, to ? "Y" : "X"));
  if (!equalDims({fr.begin() + 2, fr.end()}, {br.begin() + 2, br.end() - 1}) ||
      !equalDims({fr[0]}, {br[0]}))
    no("aicc.Reorder between different symbolic sizes");
  const int64_t C = flat[1];
  const ExprPtr HW = product(fr, 2), planar = mul(intImm(C), HW),
                blocked = mul(intImm(kernels::nchwcBlocks(C) * kernels::kNchwcBlock), HW);
  FuncBuilder b(n, name, "conv");
  const std::string X = b.input(xv), Y = b.output(0), nv = b.fresh("n");
  const ExprPtr nn = var(nv);
  Schedule sched;
  markKernel(sched, kd->name);
  sched["layout"] = std::string(to ? "nchw -> nchw16c" : "nchw16c -> nchw");
  Block body = runNest({nv}, {fr[0]},
                       {Stmt::callKernel(std::string("reorder_nchw16c_") + kd->name,
                                         {buf(X, mul(nn, to ? planar : blocked)),
                                          buf(Y, mul(nn, to ? blocked : planar)), val(C),
                                          CallArg{"", nullptr, HW}, val(to ? 1 : 0)})},
                       false);
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace aicc::loop::detail

namespace aicc::loop {

std::optional<Bf16ConvIo> bf16ConvIo(const LoweredNode& ln) {
  const std::string prefix = "conv2d_nchw_packed_";
  const Stmt* call = nullptr;
  int calls = 0;
  std::function<void(const Block&)> find = [&](const Block& blk) {
    for (const Stmt& st : blk) {
      if (st.kind == StmtKind::Call) {
        ++calls;
        if (st.name.rfind(prefix, 0) == 0) call = &st;
      }
      find(st.body);
      find(st.orelse);
    }
  };
  find(ln.func.body);
  const kernels::KernelDesc* kd =
      call ? kernels::findKernel(call->name.substr(prefix.size())) : nullptr;
  if (!kd || kd->op != kernels::KernelOp::GemmBf16 || calls != 1 || call->args.size() < 22)
    return std::nullopt;
  // Bound to a graph value of this role (a fused tail the kernel does not take writes a temp).
  auto bound = [&](const CallArg& a, Role r) -> const Value* {
    const Buffer* q = a.buffer.empty() ? nullptr : ln.func.findBuffer(a.buffer);
    return q && q->role == r ? ln.valueOf(a.buffer) : nullptr;
  };
  Bf16ConvIo io; // (bf16 kernels run channel rows only: kernels::convRowsFor)
  io.x = bound(call->args[0], Role::In);
  io.y = bound(call->args[3], Role::Out);
  io.residual = bound(call->args[21], Role::In);
  if (!io.x || !io.y || (!call->args[21].buffer.empty() && !io.residual)) return std::nullopt;
  io.caps = kernels::kBf16Input | (kd->bf16Io ? kernels::kBf16Output | kernels::kBf16Residual : 0);
  return io;
}

} // namespace aicc::loop

namespace aicc::loop::detail {

std::optional<LoweredNode> lowerConvFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o, const std::string& candidate) {
  if (n.domain == kAiccDomain && n.op == "Reorder") return lowerReorder(n, name, o);
  const bool blocked = n.domain == kAiccDomain && n.op == "ConvNchwc";
  if (!blocked &&
      (!n.domain.empty() || (n.op != "Conv" && n.op != "ConvTranspose" && n.op != "ConvInteger")))
    return std::nullopt;
  if (n.op == "ConvInteger" && n.domain.empty())
    if (auto call = lowerConvIntegerCall(n, name, o)) return call;
  FuncBuilder b(n, name, "conv");
  std::string out = b.output(0);
  Schedule sched;
  Block body = convBody(b, n, {}, out, o, candidate, sched);
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace aicc::loop::detail
