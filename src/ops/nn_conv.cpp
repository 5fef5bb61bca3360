// Conv and ConvTranspose (1-D, 2-D and 3-D; groups, dilations, strides, pads, auto_pad).
// Both lower to GEMM: Conv as im2col + W * col, ConvTranspose as W^T * X + col2im. Float types
// compute in f32 (f64 in double).
#include "ops/layout.h"
#include "ops/nn.h"

#include <algorithm>

namespace aicc {
namespace {

// Spatial dims of `d` (all but the first two).
Dims spatialOf(const Dims& d) { return Dims(d.begin() + 2, d.end()); }
int64_t prod3(const std::array<Window, 3>& g, int64_t Window::*f) {
  return g[0].*f * g[1].*f * g[2].*f;
}

// col[(c, kz, ky, kx), (oz, oy, ox)] = x[c, oz*s - pb + kz*d, ...] (0 outside the input).
template <typename T>
void im2col(const T* x, int64_t channels, const std::array<Window, 3>& g, T* col) {
  const auto &w0 = g[0], &w1 = g[1], &w2 = g[2];
  const int64_t P = w0.out * w1.out * w2.out, inSize = w0.in * w1.in * w2.in;
  T* dst = col;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t a = 0; a < w0.kernel; ++a)
      for (int64_t b = 0; b < w1.kernel; ++b)
        for (int64_t e = 0; e < w2.kernel; ++e, dst += P) {
          T* d = dst;
          for (int64_t oz = 0; oz < w0.out; ++oz) {
            int64_t iz = oz * w0.stride - w0.padBegin + a * w0.dilation;
            for (int64_t oy = 0; oy < w1.out; ++oy, d += w2.out) {
              int64_t iy = oy * w1.stride - w1.padBegin + b * w1.dilation;
              if (iz < 0 || iz >= w0.in || iy < 0 || iy >= w1.in) {
                std::fill(d, d + w2.out, T(0));
                continue;
              }
              const T* src = x + c * inSize + (iz * w1.in + iy) * w2.in;
              for (int64_t ox = 0; ox < w2.out; ++ox) {
                int64_t ix = ox * w2.stride - w2.padBegin + e * w2.dilation;
                d[ox] = ix >= 0 && ix < w2.in ? src[ix] : T(0);
              }
            }
          }
        }
}

template <typename T>
void convImpl(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t M,
              int64_t G, const std::array<Window, 3>& g) {
  const int64_t Cg = C / G, Mg = M / G;
  const int64_t inSize = prod3(g, &Window::in), P = prod3(g, &Window::out);
  const int64_t K = Cg * prod3(g, &Window::kernel);
  bool direct = true; // 1x1, stride 1, no padding: the input is its own im2col
  for (const auto& wd : g)
    direct = direct && wd.kernel == 1 && wd.stride == 1 && wd.padBegin == 0 && wd.padEnd == 0;
  std::vector<T> col(direct ? 0 : static_cast<size_t>(K * P));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t grp = 0; grp < G; ++grp) {
      const T* xg = x + (n * C + grp * Cg) * inSize;
      T* yg = y + (n * M + grp * Mg) * P;
      for (int64_t m = 0; m < Mg; ++m)
        std::fill(yg + m * P, yg + (m + 1) * P, bias ? bias[grp * Mg + m] : T(0));
      if (!direct) im2col(xg, Cg, g, col.data());
      gemmAcc<T>(Mg, P, K, w + grp * Mg * K, direct ? xg : col.data(), yg);
    }
}

// Checks shared by Conv and ConvTranspose: float X of rank >= 3, weights W of the same rank.
void checkConvOperands(const KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  AICC_CHECK(X.rank() >= 3, "input X has shape {}, expected [N, C, spatial...]",
             formatDims(X.shape()));
  AICC_CHECK(W.rank() == X.rank(), "weights W have shape {}, expected rank {} like X {}",
             formatDims(W.shape()), X.rank(), formatDims(X.shape()));
}

std::vector<RValue> convKernel(KernelCtx& c) {
  checkConvOperands(c);
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0), G = c.node.attrInt("group");
  AICC_CHECK(G >= 1 && C % G == 0 && M % G == 0,
             "group {} must divide input channels {} and output channels {}", G, C, M);
  AICC_CHECK(W.dim(1) * G == C, "weights W {} expect {} input channels, X {} has {}",
             formatDims(W.shape()), W.dim(1) * G, formatDims(X.shape()), C);
  Dims kernel = kernelShapeOf(c.node, spatialOf(W.shape()));
  AICC_CHECK(kernel == spatialOf(W.shape()), "kernel_shape {} does not match weights {}",
             formatDims(kernel), formatDims(W.shape()));
  if (c.has(2))
    AICC_CHECK(c.in(2).numel() == M, "bias B has shape {}, expected [{}]",
               formatDims(c.in(2).shape()), M);
  WindowAttrs a = readWindowAttrs(c.node, static_cast<size_t>(X.rank() - 2));
  auto ws = slideDims(a, spatialOf(X.shape()), kernel, false);
  auto g = windows3(ws);
  Dims outShape{N, M};
  for (const auto& wd : ws) outShape.push_back(wd.out);
  Tensor x = toCompute(X), w = W.castTo(x.dtype()),
         b = c.has(2) ? c.in(2).castTo(x.dtype()) : Tensor();
  Tensor y(x.dtype(), outShape);
  withComputeType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    convImpl<T>(x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr, y.data<T>(), N, C, M,
                G, g);
  });
  return {RValue::of(fromCompute(y, X.dtype()))};
}

void convInfer(InferCtx& c) {
  const auto& ws = c.inShape(1);
  const auto& xs = c.inShape(0);
  int64_t G = c.node.attrInt("group");
  AICC_CHECK(G >= 1, "attribute 'group' is {}, must be positive", G);
  Dim M = ws && !ws->empty() ? (*ws)[0] : Dim{};
  std::optional<Dims> kernel;
  if (auto k = c.node.attrInts("kernel_shape", {}); !k.empty())
    kernel = k;
  else if (ws && ws->size() >= 2)
    kernel = toDims(Shape(ws->begin() + 2, ws->end()));
  if (xs && ws) {
    AICC_CHECK(xs->size() == ws->size(), "X {} and W {} have different ranks", formatShape(*xs),
               formatShape(*ws));
    Dim cx = (*xs)[1], cw = (*ws)[1];
    AICC_CHECK(!cx.isStatic() || !cw.isStatic() || cx.value == cw.value * G,
               "X {} has {} channels but W {} with group {} expects {}", formatShape(*xs), cx.value,
               formatShape(*ws), G, cw.value * G);
  }
  inferSliding(c, M, kernel, false, c.inDType(0));
}

// ---- ConvTranspose ------------------------------------------------------------------------------

// Windows of ConvTranspose: `in` is the input (small) size, `out` the output size.
std::vector<Window> transposeDims(const Node& n, const Dims& inSpatial, const Dims& kernel) {
  size_t sp = inSpatial.size();
  AICC_CHECK(kernel.size() == sp, "kernel has {} spatial dims, input has {}", kernel.size(), sp);
  WindowAttrs a = readWindowAttrs(n, sp);
  Dims outPad = n.attrInts("output_padding", Dims(sp, 0));
  if (outPad.empty()) outPad.assign(sp, 0);
  AICC_CHECK(outPad.size() == sp, "attribute 'output_padding' has {} values, expected {}",
             outPad.size(), sp);
  Dims outShape = n.attrInts("output_shape", {});
  if (outShape.size() == sp + 2) outShape.erase(outShape.begin(), outShape.begin() + 2);
  AICC_CHECK(outShape.empty() || outShape.size() == sp,
             "attribute 'output_shape' has {} values, expected {}", outShape.size(), sp);
  std::vector<Window> ws(sp);
  for (size_t i = 0; i < sp; ++i) {
    Window& w = ws[i];
    w.in = inSpatial[i];
    w.kernel = kernel[i];
    w.stride = a.strides[i];
    w.dilation = a.dilations[i];
    AICC_CHECK(w.kernel >= 1, "kernel size {} in spatial dim {} is invalid", w.kernel, i);
    AICC_CHECK(outPad[i] >= 0, "output_padding {} is negative", outPad[i]);
    int64_t full = w.stride * (w.in - 1) + outPad[i] + w.extent();
    bool same = a.autoPad == "SAME_UPPER" || a.autoPad == "SAME_LOWER";
    if (!outShape.empty() || same) {
      w.out = !outShape.empty() ? outShape[i] : w.in * w.stride;
      int64_t total = full - w.out;
      int64_t half = floorDiv(total, 2);
      w.padBegin = a.autoPad == "SAME_UPPER" ? half : total - half;
      w.padEnd = total - w.padBegin;
    } else {
      if (a.autoPad == "NOTSET") {
        w.padBegin = a.pads[i];
        w.padEnd = a.pads[i + sp];
      }
      w.out = full - w.padBegin - w.padEnd;
    }
    AICC_CHECK(w.out >= 0, "output size {} in spatial dim {} is negative", w.out, i);
  }
  return ws;
}

template <typename T>
void convTransposeImpl(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t M,
                       int64_t G, const std::array<Window, 3>& g) {
  const int64_t Cg = C / G, Mg = M / G;
  const int64_t Pin = prod3(g, &Window::in), Pout = prod3(g, &Window::out);
  const int64_t Kk = prod3(g, &Window::kernel), R = Mg * Kk;
  const auto &w0 = g[0], &w1 = g[1], &w2 = g[2];
  std::vector<T> wt(static_cast<size_t>(R * Cg)), col(static_cast<size_t>(R * Pin));
  std::fill(y, y + N * M * Pout, T(0));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t grp = 0; grp < G; ++grp) {
      // wt[r, c] = W[grp*Cg + c, r]; col = wt * x_g.
      for (int64_t ci = 0; ci < Cg; ++ci)
        for (int64_t r = 0; r < R; ++r)
          wt[static_cast<size_t>(r * Cg + ci)] = w[(grp * Cg + ci) * R + r];
      std::fill(col.begin(), col.end(), T(0));
      gemmAcc<T>(R, Pin, Cg, wt.data(), x + (n * C + grp * Cg) * Pin, col.data());
      // col2im: scatter-add every (m, kz, ky, kx) row into the output.
      const T* src = col.data();
      for (int64_t m = 0; m < Mg; ++m) {
        T* ym = y + (n * M + grp * Mg + m) * Pout;
        for (int64_t a = 0; a < w0.kernel; ++a)
          for (int64_t b = 0; b < w1.kernel; ++b)
            for (int64_t e = 0; e < w2.kernel; ++e, src += Pin)
              for (int64_t iz = 0; iz < w0.in; ++iz) {
                int64_t oz = iz * w0.stride - w0.padBegin + a * w0.dilation;
                if (oz < 0 || oz >= w0.out) continue;
                for (int64_t iy = 0; iy < w1.in; ++iy) {
                  int64_t oy = iy * w1.stride - w1.padBegin + b * w1.dilation;
                  if (oy < 0 || oy >= w1.out) continue;
                  const T* s = src + (iz * w1.in + iy) * w2.in;
                  T* d = ym + (oz * w1.out + oy) * w2.out;
                  for (int64_t ix = 0; ix < w2.in; ++ix) {
                    int64_t ox = ix * w2.stride - w2.padBegin + e * w2.dilation;
                    if (ox >= 0 && ox < w2.out) d[ox] += s[ix];
                  }
                }
              }
      }
    }
  if (bias)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        T* ym = y + (n * M + m) * Pout;
        for (int64_t p = 0; p < Pout; ++p) ym[p] += bias[m];
      }
}

std::vector<RValue> convTransposeKernel(KernelCtx& c) {
  checkConvOperands(c);
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  const int64_t N = X.dim(0), C = X.dim(1), G = c.node.attrInt("group");
  AICC_CHECK(G >= 1 && C % G == 0, "group {} must divide input channels {}", G, C);
  AICC_CHECK(W.dim(0) == C, "weights W {} expect {} input channels, X {} has {}",
             formatDims(W.shape()), W.dim(0), formatDims(X.shape()), C);
  const int64_t M = W.dim(1) * G;
  Dims kernel = kernelShapeOf(c.node, spatialOf(W.shape()));
  AICC_CHECK(kernel == spatialOf(W.shape()), "kernel_shape {} does not match weights {}",
             formatDims(kernel), formatDims(W.shape()));
  if (c.has(2))
    AICC_CHECK(c.in(2).numel() == M, "bias B has shape {}, expected [{}]",
               formatDims(c.in(2).shape()), M);
  auto ws = transposeDims(c.node, spatialOf(X.shape()), kernel);
  auto g = windows3(ws);
  Dims outShape{N, M};
  for (const auto& wd : ws) outShape.push_back(wd.out);
  Tensor x = toCompute(X), w = W.castTo(x.dtype()),
         b = c.has(2) ? c.in(2).castTo(x.dtype()) : Tensor();
  Tensor y(x.dtype(), outShape);
  withComputeType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    convTransposeImpl<T>(x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr, y.data<T>(),
                         N, C, M, G, g);
  });
  return {RValue::of(fromCompute(y, X.dtype()))};
}

void convTransposeInfer(InferCtx& c) {
  const auto& xs = c.inShape(0);
  const auto& ws = c.inShape(1);
  int64_t G = c.node.attrInt("group");
  AICC_CHECK(G >= 1, "attribute 'group' is {}, must be positive", G);
  Dim M = ws && ws->size() >= 2 && (*ws)[1].isStatic() ? Dim::known((*ws)[1].value * G) : Dim{};
  if (!xs) return c.setTensor(0, c.inDType(0), std::nullopt);
  AICC_CHECK(xs->size() >= 3, "input X has rank {}, expected at least 3", xs->size());
  size_t sp = xs->size() - 2;
  std::optional<Dims> kernel;
  if (auto k = c.node.attrInts("kernel_shape", {}); !k.empty())
    kernel = k;
  else if (ws && ws->size() == xs->size())
    kernel = toDims(Shape(ws->begin() + 2, ws->end()));
  Shape out{(*xs)[0], M};
  auto in = toDims(Shape(xs->begin() + 2, xs->end()));
  if (kernel && in) {
    for (const auto& w : transposeDims(c.node, *in, *kernel)) out.push_back(Dim::known(w.out));
  } else if (kernel && kernel->size() == sp) {
    // A symbolic input size: every form of the output size (pads, SAME, output_shape) is affine in
    // it, out = a * in + b, so two static sizes give a and b (ir/dim_expr.h).
    try {
      const auto w1 = transposeDims(c.node, Dims(sp, 1), *kernel);
      const auto w2 = transposeDims(c.node, Dims(sp, 2), *kernel);
      for (size_t i = 0; i < sp; ++i) {
        const Dim d = (*xs)[i + 2];
        auto e = d.isStatic() ? std::nullopt : dimExpr(d);
        if (d.isStatic()) {
          out.push_back(Dim::known(transposeDims(c.node, Dims(sp, d.value), *kernel)[i].out));
          continue;
        }
        const int64_t a = w2[i].out - w1[i].out, b = w1[i].out - a;
        out.push_back(e ? dimOf(*e * DimExpr::constant(a) + DimExpr::constant(b)) : Dim{});
      }
    } catch (const std::exception&) {
      out.resize(2);
      for (size_t i = 0; i < sp; ++i) out.push_back(Dim{});
    }
  } else {
    for (size_t i = 0; i < sp; ++i) out.push_back(Dim{});
  }
  c.setTensor(0, c.inDType(0), out);
}

// ---- aicc.ConvNchwc: Conv (group 1 or depthwise) on NCHW16c activations (ops/layout.h) -------
// X [N, ceil(C/16), H, W, 16], W [M, C / group, KH, KW], B [M] -> Y [N, ceil(M/16), OH, OW, 16]:
// the Conv of the unblocked input, blocked (lanes past M zero). A stem (group 1, few channels)
// reads X unblocked, [N, C, H, W].

std::vector<RValue> convNchwcKernel(KernelCtx& c) {
  const Tensor& W = c.in(1);
  AICC_CHECK(W.rank() == 4, "weights W have shape {}, expected [M, C, KH, KW]",
             formatDims(W.shape()));
  const int64_t G = c.node.attrInt("group");
  AICC_CHECK(G == 1 || (W.dim(1) == 1 && G == W.dim(0)),
             "group {} (aicc.ConvNchwc is group 1 or depthwise)", G);
  const bool plane = c.in(0).rank() == 4;
  AICC_CHECK(!plane || G == 1, "a plane (NCHW) input needs group 1, not {}", G);
  const RValue x = plane ? c.value(0) : RValue::of(unblockChannels(c.in(0), W.dim(1) * G));
  std::vector<const RValue*> args = {&x, &c.value(1)};
  if (c.has(2)) args.push_back(&c.value(2));
  KernelCtx conv(c.node, args, nullptr);
  return {RValue::of(blockChannels(convKernel(conv).at(0).tensor))};
}

void convNchwcInfer(InferCtx& c) {
  const auto& xs = c.inShape(0);
  const auto& ws = c.inShape(1);
  const std::optional<Dims> wd = ws ? toDims(*ws) : std::nullopt;
  if (!xs || !wd || (xs->size() != 5 && xs->size() != 4) || wd->size() != 4)
    return c.setTensor(0, c.inDType(0), std::nullopt);
  // The batch and the sides may be symbolic (the channels and lanes are not).
  const Shape& x = *xs;
  const Dims& w = *wd;
  const int64_t C = w[1] * c.node.attrInt("group");
  if (x.size() == 4)
    AICC_CHECK(x[1].isStatic() && x[1].value == C && c.node.attrInt("group") == 1,
               "plane input X {} does not match W {} (group 1)", formatShape(x), formatDims(w));
  else
    AICC_CHECK(x[4].isStatic() && x[4].value == kLayoutBlock && x[1].isStatic() &&
                   x[1].value == (C + kLayoutBlock - 1) / kLayoutBlock,
               "X {} is not W {}'s input channels blocked by {}", formatShape(x), formatDims(w),
               kLayoutBlock);
  const Dims kernel = kernelShapeOf(c.node, {w[2], w[3]});
  const WindowAttrs a = readWindowAttrs(c.node, 2);
  Shape out{x[0], Dim::known((w[0] + kLayoutBlock - 1) / kLayoutBlock)};
  for (size_t i = 0; i < 2; ++i)
    out.push_back(x[i + 2].isStatic()
                      ? Dim::known(slideDim(a, i, x[i + 2].value, kernel[i], false).out)
                      : slideSymbolic(a, i, x[i + 2], kernel[i], false));
  out.push_back(Dim::known(kLayoutBlock));
  c.setTensor(0, c.inDType(0), out);
}

OpBuilder convAttrs(OpBuilder b) {
  b.attrString("auto_pad", "NOTSET")
      .attr("dilations", Attribute::Kind::Ints)
      .attrInt("group", 1)
      .attr("kernel_shape", Attribute::Kind::Ints)
      .attr("pads", Attribute::Kind::Ints)
      .attr("strides", Attribute::Kind::Ints);
  return b;
}

} // namespace

void registerNnConvOps(OpRegistry& r) {
  convAttrs(r.op("Conv").perSample()).inputs(2, 3).infer(convInfer).kernel(convKernel);
  convAttrs(r.op("ConvNchwc", kAiccDomain).perSample())
      .inputs(2, 3)
      .infer(convNchwcInfer)
      .kernel(convNchwcKernel);
  convAttrs(r.op("ConvTranspose").perSample())
      .attr("output_padding", Attribute::Kind::Ints)
      .attr("output_shape", Attribute::Kind::Ints)
      .inputs(2, 3)
      .infer(convTransposeInfer)
      .kernel(convTransposeKernel);
}

} // namespace aicc
