// QLinearConv (1-D/2-D, NCHW, u8/i8 activations and weights) as one call of the runtime's
// quantized convolution kernels (kernels/qconv.h, contracts in rt/callees_quant.cpp):
//  - depthwise (one input channel per group, constant bias, partial sums provably below 2^24):
//    @qdwconv_nchw_<f32 NCHW depthwise kernel> with the weights (w - wzp) as floats;
//  - otherwise @qconv2d_nchw_<int8 GEMM kernel>: the best QConvGemm kernel of the target's ISA
//    that takes these weights (the AVX512-VNNI one needs w - wzp within int8), weights packed for
//    its tile here, with their row sums.
// Lowering-time work also computes the per-channel requantization factors exactly as the
// reference kernel does (src/ops/quant_conv.cpp). Scales, zero points and weights must be
// constants there; the bias may be computed. Run-time weights (or scales, zero points) take the
// direct loop nest (lowerQConvLoop). Declines (the node falls back) for anything else: 3-D
// convolutions, per-channel x/y zero points, other types, non-finite factors.
#include "kernels/dqgemm.h"
#include "kernels/qconv.h"
#include "loop/lower_quant.h"
#include "ops/quant_util.h"

namespace aicc::loop::detail {

namespace {

// (w - wzp[m]) as int16 rows [M, Kc], w_zero_point input `zpAt`.
Tensor shiftedWeights(const Node& n, const Tensor& w, int64_t M, size_t zpAt = 5) {
  std::vector<double> wzp = quantConst(n, zpAt, M, "w_zero_point");
  const int64_t Kc = w.numel() / M;
  Tensor t(DType::I16, {M, Kc});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < Kc; ++i)
      t.data<int16_t>()[m * Kc + i] = static_cast<int16_t>(
          w.getI64(m * Kc + i) - static_cast<int64_t>(wzp[wzp.size() == 1 ? 0 : size_t(m)]));
  return t;
}

// factor[m] = st(st(x_scale * w_scale[m]) / y_scale) as float (st: x_scale's type).
Tensor factors(const Node& n, int64_t M) {
  std::vector<double> xs = quantConst(n, 1, 1, "x_scale"), ws = quantConst(n, 4, M, "w_scale"),
                      ys = quantConst(n, 6, 1, "y_scale");
  DType st = n.inputs[1]->type.dtype;
  if (!isFloat(st)) no(n.describe() + ": x_scale is not a float");
  Tensor f(DType::F32, {M});
  for (int64_t m = 0; m < M; ++m) {
    double wm = ws[ws.size() == 1 ? 0 : size_t(m)];
    f.data<float>()[m] = static_cast<float>(roundToType(st, roundToType(st, xs[0] * wm) / ys[0]));
  }
  return f;
}

// The 16 geometry arguments N, C, H, W, M, group, KH, KW, strides, pads (t, l, b, r), dilations
// (1-D convolutions as H = 1).
std::vector<int64_t> geometry(const ConvShape& s) {
  const bool one = s.in.size() == 1;
  auto at = [&](const Dims& d, int64_t pad1) { return one ? Dims{pad1, d[0]} : d; };
  Dims in = at(s.in, 1), k = at(s.k, 1), st = at(s.stride, 1), dl = at(s.dil, 1);
  Dims pb = at(s.padBegin, 0), pe = at(s.padEnd, 0);
  return {s.N,   s.C,   in[0], in[1], s.M,   s.G,   k[0],  k[1],
          st[0], st[1], pb[0], pb[1], pe[0], pe[1], dl[0], dl[1]};
}

// The GEMM kernel: the best QConvGemm kernel within the target's ISA that takes the weights.
const kernels::KernelDesc& gemmKernel(const Tensor& w16, kernels::Isa isa) {
  for (const auto& k : kernels::allKernels())
    if (k.op == kernels::KernelOp::QConvGemm && kernels::isaWithin(k.isa, isa) &&
        kernels::qconvGemmTakes(k, w16.data<int16_t>(), w16.numel()))
      return k;
  throw Error("no int8 convolution kernel"); // the generic one takes everything
}

kernels::QConvShape qshape(const std::vector<int64_t>& g) {
  kernels::QConvShape s;
  for (size_t j = 0; j < 16; ++j) s.*kernels::QConvShape::kGeometry[j] = g[j];
  return s;
}

// The GEMM form's weight arguments: w16 packed for kd's tile, and its row sums.
std::vector<CallArg> gemmWeights(FuncBuilder& b, const kernels::KernelDesc& kd,
                                 const kernels::QConvShape& qs, const Tensor& w16, int64_t M,
                                 const LowerOptions& o) {
  Tensor packed(DType::U8, {kernels::qconvPackedBytes(kd, qs)});
  if (!o.probe) kernels::packQConvWeights(kd, qs, w16.data<int16_t>(), packed.raw());
  Tensor rowSum(DType::I32, {M});
  const int64_t Kc = w16.numel() / M;
  for (int64_t m = 0; m < M; ++m) {
    int64_t sum = 0;
    for (int64_t k = 0; k < Kc; ++k) sum += w16.data<int16_t>()[m * Kc + k];
    rowSum.data<int32_t>()[m] = static_cast<int32_t>(sum);
  }
  return {bufferArg(b.constant("wp", std::move(packed),
                               fmt::format("{} panels of {}x{}x{} (k-groups x rows x k), w - wzp",
                                           kd.name, (Kc + kd.kg - 1) / kd.kg, kd.mr, kd.kg))),
          bufferArg(b.constant("rowsum", std::move(rowSum), "i32 [M]"))};
}

// The weights' arguments, the callee and the layout notes of the depthwise form on the f32 plane
// kernels (wf: w - wzp as floats, checked exact) or, with wf null, of the GEMM form.
std::string planeOrGemm(FuncBuilder& b, const LowerOptions& o, const kernels::QConvShape& qs,
                        const Tensor& w16, int64_t M, Tensor* wf, std::vector<CallArg>& args,
                        Schedule& sched) {
  if (wf) {
    const auto& kd = kernels::defaultKernel(kernels::KernelOp::DepthwiseConvNchw, o.kernelIsa);
    args.push_back(bufferArg(b.constant("wf", std::move(*wf), "f32 [M, KH*KW], w - wzp")));
    sched["layout"] = std::string("nchw; f32 planes of x - xzp (exact: sums below 2^24)");
    sched["parallel"] = std::vector<std::string>{"channels"};
    return "qdwconv_nchw_" + std::string(kd.name);
  }
  const auto& kd = gemmKernel(w16, o.kernelIsa);
  for (auto& a : gemmWeights(b, kd, qs, w16, M, o)) args.push_back(std::move(a));
  sched["layout"] = std::string("nchw; activations packed per call into ") + std::to_string(kd.nr) +
                    "-pixel panels; exact int32 sums";
  sched["parallel"] = std::vector<std::string>{"pixel panels x output channels"};
  return "qconv2d_nchw_" + std::string(kd.name);
}

// QLinearConv with run-time weights: ConvInteger's direct loop nest (convBody: exact int32
// sums of (x - x_zero_point)(w - w_zero_point[m]) over the bias) into a temp, then requantized as
// the reference does: float(acc) * f32(f32(x_scale * w_scale[m]) / y_scale), rounded half to
// even, plus y_zero_point, saturated. Scales and zero points may be run-time values too.
std::optional<LoweredNode> lowerQConvLoop(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  const Value* yv = n.outputs.at(0);
  const Dims yd = staticDims(yv, "y");
  if (yd.size() < 3) no(n.describe() + ": y of rank < 3");
  const DType f = DType::F32, yt = yv->type.dtype;
  const int64_t N = yd[0], M = yd[1], P = numel(yd) / std::max<int64_t>(1, N * M);
  const Value* ws = n.inputs.at(4);
  const int64_t wsCount = numel(staticDims(ws, "w_scale"));
  if (ws->type.dtype != f || (wsCount != 1 && wsCount != M))
    no(n.describe() + ": w_scale is not f32 with 1 or M values");
  FuncBuilder b(n, name, "conv");
  const std::string Y = b.output(0), acc = b.temp("acc", DType::I32, yd);
  Schedule sched;
  Block body = convBody(b, n, {}, acc, o, kLoopCandidate, sched, nullptr);
  const std::string W = b.input(ws), nv = b.fresh("n"), mv = b.fresh("m"), pv = b.fresh("p");
  const ExprPtr m = var(mv), at = add(mul(add(mul(var(nv), intImm(M)), m), intImm(P)), var(pv));
  const ExprPtr factor =
      div(mul(scalarIn(b, n, 1, f, "x_scale"), load(W, wsCount == 1 ? intImm(0) : m, f)),
          scalarIn(b, n, 6, f, "y_scale"));
  const ExprPtr q = add(call("round", {mul(cast(f, load(acc, at, DType::I32)), factor)}),
                        scalarIn(b, n, 7, f, "y_zero_point"));
  for (Stmt& st : nest({nv, mv, pv}, {N, M, P}, {Stmt::store(Y, at, cast(yt, q))}, true))
    body.push_back(std::move(st));
  sched["precision"] = std::string(kInt8Precision);
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace

std::optional<LoweredNode> lowerQConv(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  requireRuntimeKernels(n, o);
  const Value *xv = n.inputs.at(0), *wv = n.inputs.at(3), *yv = n.outputs.at(0);
  DType xt = xv->type.dtype, yt = n.hasInput(7) ? n.inputs[7]->type.dtype : xt;
  if (!isQ8(xt) || !isQ8(wv->type.dtype) || !isQ8(yt) || yv->type.dtype != yt)
    no(n.describe() + ": QLinearConv is lowered for u8/i8 only");
  if (!wv->constant) return lowerQConvLoop(n, name, o);
  const Value* bv = n.hasInput(8) ? n.inputs[8] : nullptr;
  ConvShape s = convShape(n, staticDims(xv, "x"), staticDims(wv, "w"), staticDims(yv, "y"));
  if (s.in.size() != 1 && s.in.size() != 2) no(n.describe() + ": QLinearConv beyond 2-D");
  if (bv && (bv->type.dtype != DType::I32 || staticDims(bv, "B") != Dims{s.M}))
    no(n.describe() + ": the bias must be i32 with one value per output channel");
  const int64_t xzp = static_cast<int64_t>(quantConst(n, 2, 1, "x_zero_point")[0]);
  const int64_t yzp = static_cast<int64_t>(quantConst(n, 7, 1, "y_zero_point")[0]);
  const std::vector<int64_t> geo = geometry(s);
  const kernels::QConvShape qs = qshape(geo);
  Tensor w16 = shiftedWeights(n, *wv->constant, s.M);
  Tensor factor = factors(n, s.M);
  for (int64_t m = 0; m < s.M; ++m)
    if (!std::isfinite(factor.data<float>()[m]))
      no(n.describe() + ": a requantization factor is not finite");

  FuncBuilder b(n, name, "conv");
  std::string Y = b.output(0), X = b.input(xv);
  std::vector<CallArg> args = {bufferArg(X)};
  Schedule sched;
  std::string callee;
  // A 1x1 convolution of many 1x1 images (fold-qdq's Gemm over rows): the images are the rows of a
  // GEMM on the int8 tiles of a DqGemm kernel (kernels/qconv.h qconvRows), where there is one.
  const kernels::KernelDesc* rowsKernel =
      s.G == 1 && qs.H == 1 && qs.W == 1 && qs.KH == 1 && qs.KW == 1 && qs.isPointwise() &&
              s.N >= 8 && xt == DType::U8 && kernels::dqgemmTakes(w16.data<int16_t>(), w16.numel())
          ? kernels::bestKernel(kernels::KernelOp::DqGemm, o.kernelIsa)
          : nullptr;
  if (rowsKernel) {
    Tensor wt(DType::I16, {s.C, s.M}); // w - wzp as [C, M]
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t c = 0; c < s.C; ++c)
        wt.data<int16_t>()[c * s.M + m] = w16.data<int16_t>()[m * s.C + c];
    callee = "qconv_rows_" + std::string(rowsKernel->name);
    for (auto& a : dqgemmWeights(b, *rowsKernel, wt, o)) args.push_back(std::move(a));
    args.push_back(bv ? bufferArg(b.input(bv)) : intArg(0));
    args.push_back(bufferArg(b.constant("factor", std::move(factor), "f32 [M]")));
    args.push_back(bufferArg(Y));
    for (int64_t v : {s.N, s.C, s.M, xzp, yzp, int64_t(yt == DType::I8) << 1})
      args.push_back(intArg(v));
    sched["layout"] = std::string("rows: the images as the GEMM's rows; exact int32 sums");
    sched["micro_kernel"] = callee;
    sched["precision"] = std::string(kInt8Precision);
    return b.finish({Stmt::callKernel(callee, std::move(args))}, std::move(sched), o);
  }
  // Depthwise 3x3 on an int8 kernel where the target has one and the weights fit it; other
  // depthwise ones on the f32 plane kernels when they are exact for these weights and bias.
  const Tensor* bias = bv && bv->constant ? &*bv->constant : nullptr;
  const kernels::KernelDesc* dw8 = nullptr;
  Tensor w8;
  if (s.G > 1 && kernels::qdepthwise3x3Shape(qs)) {
    dw8 = kernels::bestKernel(kernels::KernelOp::QDepthwise3x3, o.kernelIsa);
    w8 = Tensor(DType::I8, {s.M, 3, 4});
    if (dw8 && !kernels::packQDepthwise3x3Weights(s.M, w16.data<int16_t>(), w8.data<int8_t>()))
      dw8 = nullptr;
  }
  Tensor wf;
  bool depthwise = !dw8 && s.G > 1 && s.G == s.C && (!bv || bias);
  if (depthwise) {
    wf = Tensor(DType::F32, {s.M, w16.numel() / s.M});
    for (int64_t i = 0; i < w16.numel(); ++i) wf.data<float>()[i] = float(w16.data<int16_t>()[i]);
    depthwise =
        kernels::qdepthwiseExact(qs, wf.data<float>(), bias ? bias->data<int32_t>() : nullptr);
  }
  if (dw8) {
    callee = "qdwconv_nchw_" + std::string(dw8->name);
    args.push_back(bufferArg(b.constant("w8", std::move(w8), "i8 [M, 3, 4], rows of w - wzp")));
    sched["layout"] = std::string("nchw; uint8 rows, three taps per vpdpbusd; int32 accumulation");
    sched["parallel"] = std::vector<std::string>{"channels"};
  } else {
    callee = planeOrGemm(b, o, qs, w16, s.M, depthwise ? &wf : nullptr, args, sched);
  }
  args.push_back(bv ? bufferArg(b.input(bv)) : intArg(0));
  args.push_back(bufferArg(b.constant("factor", std::move(factor), "f32 [M]")));
  args.push_back(bufferArg(Y));
  for (int64_t v : geo) args.push_back(intArg(v));
  for (int64_t v : {xzp, yzp, int64_t(xt == DType::I8) | int64_t(yt == DType::I8) << 1})
    args.push_back(intArg(v));
  sched["micro_kernel"] = callee;
  sched["precision"] = std::string(kInt8Precision);
  return b.finish({Stmt::callKernel(callee, std::move(args))}, std::move(sched), o);
}

namespace {

// ConvInteger with uint8 weights and a zero point (ONNX Runtime's QUInt8): w - wzp spans
// [-255, 255], outside the int8 tiles. As (w - 128) + (128 - wzp): the first, within int8, on the
// tiles with one more output row of ones, which sums x - xzp over each pixel's window (padding
// included, reading xzp); then y[m] = T[m] + (128 - wzp[m]) * T[ones], exact in int32 as the
// reference's. Group 1, where the target has an int8-quad tile (the int16 tile takes the weights
// as they are); nullopt otherwise.
std::optional<LoweredNode> uint8WeightsSplit(const Node& n, FuncBuilder& b, const LowerOptions& o,
                                             const ConvShape& s, const Tensor& w16, const Value* zv,
                                             DType xt) {
  const Tensor& w = *n.inputs[1]->constant;
  if (s.G != 1 || w.dtype() != DType::U8 || kernels::dqgemmTakes(w16.data<int16_t>(), w16.numel()))
    return std::nullopt;
  const int64_t Kc = w16.numel() / s.M, P = numel(s.out);
  Tensor w2(DType::I16, {s.M + 1, Kc});
  for (int64_t i = 0; i < s.M * Kc; ++i)
    w2.data<int16_t>()[i] = static_cast<int16_t>(w.getI64(i) - 128);
  for (int64_t k = 0; k < Kc; ++k) w2.data<int16_t>()[s.M * Kc + k] = 1;
  const auto& kd = gemmKernel(w2, o.kernelIsa);
  if (kd.kg != 4) return std::nullopt;
  ConvShape s2 = s;
  s2.M = s.M + 1;
  const std::vector<int64_t> geo = geometry(s2);
  const std::vector<double> wzp = quantConst(n, 3, s.M, "w_zero_point");
  Tensor c(DType::I32, {s.M});
  for (int64_t m = 0; m < s.M; ++m)
    c.data<int32_t>()[m] = 128 - static_cast<int32_t>(wzp[wzp.size() == 1 ? 0 : size_t(m)]);
  const std::string T = b.temp("sums", DType::I32, {s.N, s.M + 1, P}), Y = b.output(0);
  const std::string callee = "qconv2d_nchw_" + std::string(kd.name);
  std::vector<CallArg> args = {bufferArg(b.input(n.inputs[0]))};
  for (auto& a : gemmWeights(b, kd, qshape(geo), w2, s.M + 1, o)) args.push_back(std::move(a));
  for (auto& a : {intArg(0), intArg(0), bufferArg(T)}) args.push_back(a); // no bias, int32 sums
  for (int64_t v : geo) args.push_back(intArg(v));
  args.push_back(zv ? bufferArg(b.input(zv)) : intArg(0));
  for (int64_t v : {int64_t(0), int64_t(xt == DType::I8)}) args.push_back(intArg(v));
  Block body = {Stmt::callKernel(callee, std::move(args))};
  const std::string C = b.constant("shift", std::move(c), "i32 [M], 128 - w_zero_point");
  const std::string nv = b.loopVar("n"), mv = b.loopVar("m"), pv = b.loopVar("p");
  const ExprPtr base = mul(var(nv), intImm((s.M + 1) * P));
  const ExprPtr t = load(T, add(base, add(mul(var(mv), intImm(P)), var(pv))), DType::I32);
  const ExprPtr ones = load(T, add(base, add(intImm(s.M * P), var(pv))), DType::I32);
  const ExprPtr y = add(t, mul(load(C, var(mv), DType::I32), ones));
  const ExprPtr at = add(mul(add(mul(var(nv), intImm(s.M)), var(mv)), intImm(P)), var(pv));
  for (auto& st : nest({nv, mv, pv}, {s.N, s.M, P}, {Stmt::store(Y, at, y)}, true,
                       vectorWidthFor(o, DType::I32, P)))
    body.push_back(std::move(st));
  Schedule sched;
  sched["micro_kernel"] = callee;
  sched["layout"] =
      std::string("nchw; uint8 weights as (w - 128) + (128 - wzp): the tiles on w - ") +
      "128 with a row of ones (each pixel's sum of x - xzp), then the shift";
  sched["precision"] = std::string(kInt8Precision);
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace

// ConvInteger with constant weights (1-D / 2-D) on the same int8 GEMM kernels, without the
// requantization: the tiles store the exact int32 sums (factor 0 in the @qconv2d_nchw call). The x
// zero point may be a run-time scalar (DynamicQuantizeLinear's, in ONNX Runtime's
// quantize_dynamic models), w's one per tensor or per output channel. Depthwise ones run on the
// f32 plane kernels where exact (as QLinearConv's), other group counts on the GEMM form. nullopt
// where it does not apply (the loop nest then runs it).
std::optional<LoweredNode> lowerConvIntegerCall(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *wv = n.inputs.at(1), *yv = n.outputs.at(0);
  const DType xt = xv->type.dtype;
  if (!o.runtimeKernels || !wv->constant || !isQ8(xt) || !isQ8(wv->type.dtype)) return std::nullopt;
  const Value* zv = n.hasInput(2) ? n.inputs[2] : nullptr;
  if (zv && (zv->type.dtype != xt || numel(staticDims(zv, "x_zero_point")) != 1))
    return std::nullopt;
  if (n.hasInput(3) && !n.inputs[3]->constant) return std::nullopt;
  ConvShape s = convShape(n, staticDims(xv, "x"), staticDims(wv, "w"), staticDims(yv, "y"));
  if (s.in.size() != 1 && s.in.size() != 2) return std::nullopt;
  const std::vector<int64_t> geo = geometry(s);
  const kernels::QConvShape qs = qshape(geo);
  Tensor w16 = shiftedWeights(n, *wv->constant, s.M, 3);
  FuncBuilder b(n, name, "conv");
  std::vector<CallArg> args = {bufferArg(b.input(xv))};
  Schedule sched;
  if (auto split = uint8WeightsSplit(n, b, o, s, w16, zv, xt)) return split;
  // Depthwise: the f32 plane kernels over x - xzp, exact where every partial sum is an integer
  // below 2^24 (as QLinearConv's depthwise form); else the GEMM form, one weight row per group.
  Tensor wf;
  bool depthwise = s.G > 1 && s.G == s.C;
  if (depthwise) {
    wf = Tensor(DType::F32, {s.M, w16.numel() / s.M});
    for (int64_t i = 0; i < w16.numel(); ++i) wf.data<float>()[i] = float(w16.data<int16_t>()[i]);
    depthwise = kernels::qdepthwiseExact(qs, wf.data<float>(), nullptr);
  }
  const std::string callee =
      planeOrGemm(b, o, qs, w16, s.M, depthwise ? &wf : nullptr, args, sched);
  args.push_back(intArg(0)); // no bias
  args.push_back(intArg(0)); // no factor: int32 sums
  args.push_back(bufferArg(b.output(0)));
  for (int64_t v : geo) args.push_back(intArg(v));
  args.push_back(zv ? bufferArg(b.input(zv)) : intArg(0));
  for (int64_t v : {int64_t(0), int64_t(xt == DType::I8)}) args.push_back(intArg(v));
  sched["micro_kernel"] = callee;
  sched["precision"] = std::string(kInt8Precision);
  return b.finish({Stmt::callKernel(callee, std::move(args))}, std::move(sched), o);
}

} // namespace aicc::loop::detail
