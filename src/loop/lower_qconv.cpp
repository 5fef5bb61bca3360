// QLinearConv (1-D/2-D, NCHW, u8/i8 activations and weights) as one call of the runtime's
// quantized convolution kernel (kernels/qconv.h, contract in rt/callees_quant.cpp).
// Lowering-time work: the weights shifted by their zero points (int16 rows) and the per-channel
// requantization factors, computed exactly as the reference kernel does (src/ops/quant_conv.cpp).
// Scales, zero points and weights must be constants; the bias may be computed. Declines (the node
// falls back) for anything else: 3-D convolutions, per-channel x/y zero points, other types.
#include "loop/lower_quant.h"
#include "ops/quant_util.h"

namespace aicc::loop::detail {

namespace {

CallArg buffer(const std::string& b) { return CallArg{b, nullptr, nullptr}; }
CallArg value(int64_t v) { return CallArg{"", nullptr, intImm(v)}; }

// (w - wzp[m]) as int16 rows [M, Kc].
Tensor shiftedWeights(const Node& n, const Tensor& w, int64_t M) {
  std::vector<double> wzp = quantConst(n, 5, M, "w_zero_point");
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

} // namespace

std::optional<LoweredNode> lowerQConv(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  requireRuntimeKernels(n, o);
  const Value *xv = n.inputs.at(0), *wv = n.inputs.at(3), *yv = n.outputs.at(0);
  DType xt = xv->type.dtype, yt = n.hasInput(7) ? n.inputs[7]->type.dtype : xt;
  if (!isQ8(xt) || !isQ8(wv->type.dtype) || !isQ8(yt) || yv->type.dtype != yt)
    no(n.describe() + ": QLinearConv is lowered for u8/i8 only");
  if (!wv->constant) no(n.describe() + ": QLinearConv weights are not constant");
  const Value* bv = n.hasInput(8) ? n.inputs[8] : nullptr;
  ConvShape s = convShape(n, staticDims(xv, "x"), staticDims(wv, "w"), staticDims(yv, "y"));
  if (s.in.size() != 1 && s.in.size() != 2) no(n.describe() + ": QLinearConv beyond 2-D");
  if (bv && (bv->type.dtype != DType::I32 || staticDims(bv, "B") != Dims{s.M}))
    no(n.describe() + ": the bias must be i32 with one value per output channel");
  const int64_t xzp = static_cast<int64_t>(quantConst(n, 2, 1, "x_zero_point")[0]);
  const int64_t yzp = static_cast<int64_t>(quantConst(n, 7, 1, "y_zero_point")[0]);
  FuncBuilder b(n, name, "conv");
  std::string Y = b.output(0), X = b.input(xv);
  std::string W = b.constant("w16", shiftedWeights(n, *wv->constant, s.M), "int16 rows [M, Kc]");
  std::string F = b.constant("factor", factors(n, s.M), "f32 [M]");
  std::vector<CallArg> args = {buffer(X), buffer(W), bv ? buffer(b.input(bv)) : value(0),
                               buffer(F), buffer(Y)};
  for (int64_t v : geometry(s)) args.push_back(value(v));
  for (int64_t v : {xzp, yzp, int64_t(xt == DType::I8) | int64_t(yt == DType::I8) << 1})
    args.push_back(value(v));
  Schedule sched;
  sched["micro_kernel"] = std::string("qconv2d_nchw");
  sched["layout"] = std::string("nchw; int16 weights shifted at compile time; int32 accumulation");
  sched["parallel"] = std::vector<std::string>{s.G > 1 ? "groups" : "output channels"};
  return b.finish({Stmt::callKernel("qconv2d_nchw", std::move(args))}, std::move(sched), o);
}

} // namespace aicc::loop::detail
