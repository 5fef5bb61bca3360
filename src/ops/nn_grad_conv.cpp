// Gradient rules of Conv and ConvTranspose (1-D to 3-D; strides, dilations, pads, auto_pad,
// output_padding / output_shape, groups), written with the two ops themselves:
//   Conv:          dX = ConvTranspose(dY, W); dW = Conv(X viewed [C/G, G*N, ...], dY viewed
//                  [M, N, ...]) with strides and dilations swapped; dB = ReduceSum(dY).
//   ConvTranspose: dX = Conv(dY, W); dW = Conv(dY viewed [M/G, G*N, ...], X viewed [C, N, ...]),
//                  strides and dilations swapped; dB = ReduceSum(dY).
// The geometry (padding actually applied at each end) is computed from the static spatial sizes.
#include "ops/nn.h"
#include "ops/nn_grad.h"

namespace aicc::nngrad {
namespace {

// Per spatial dim: the input/kernel/output sizes, stride, dilation, and the padding applied at
// the beginning and the end of the padded input (Conv) or output (ConvTranspose); the end padding
// here is the one that makes the sizes agree exactly (it may be negative: trailing elements that
// no window touches).
struct Geo {
  Dims in, k, out, s, d, pb, pe;
  size_t sp = 0;
  int64_t ext(size_t i) const { return (k[i] - 1) * d[i] + 1; }
};

Dims spatialDims(GradCtx& c, Value* v, const char* what) {
  AICC_CHECK(v->type.shape && v->type.shape->size() >= 3,
             "{}: the gradient needs the rank of {} '{}'", c.node.describe(), what, v->name);
  Shape s(v->type.shape->begin() + 2, v->type.shape->end());
  auto d = toDims(s);
  AICC_CHECK(d, "{}: unsupported: the gradient needs static spatial dims of {} '{}', it is {}",
             c.node.describe(), what, v->name, formatType(v->type));
  return *d;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

// [1, 0, 2, 3, ...]: swaps the batch and channel axes.
std::vector<int64_t> swap01(size_t rank) {
  std::vector<int64_t> p = range(0, static_cast<int64_t>(rank));
  std::swap(p[0], p[1]);
  return p;
}

// [N, G*P, sp...] -> [P, G*N, sp...] with the group index major in the new channel axis.
Value* groupsToBatch(E& e, Value* v, int64_t G, int64_t P, const Dims& sp) {
  if (G == 1) return e.transpose(v, swap01(sp.size() + 2));
  Value* r = e.reshape(v, {0, G, P, -1});
  r = e.transpose(r, {2, 1, 0, 3});
  std::vector<int64_t> s{P, -1};
  s.insert(s.end(), sp.begin(), sp.end());
  return e.reshape(r, s);
}

AttrMap convAttrs(const Dims& strides, const Dims& dilations, const Dims& pb, const Dims& pe,
                  int64_t G) {
  Dims pads = pb;
  for (int64_t p : pe) pads.push_back(std::max<int64_t>(p, 0));
  for (auto& p : pads) p = std::max<int64_t>(p, 0);
  return {{"strides", Attribute{strides}},
          {"dilations", Attribute{dilations}},
          {"pads", Attribute{pads}},
          {"group", Attribute{G}}};
}

// Crops v's spatial dims by the negative entries of pb / pe (a Pad with negative amounts).
Value* cropNegative(E& e, Value* v, const Dims& pb, const Dims& pe) {
  bool any = false;
  Dims pads(2, 0);
  for (int64_t p : pb) pads.push_back(std::min<int64_t>(p, 0)), any |= p < 0;
  pads.push_back(0), pads.push_back(0);
  for (int64_t p : pe) pads.push_back(std::min<int64_t>(p, 0)), any |= p < 0;
  return any ? e.op("Pad", {v, e.ints(pads)}) : v;
}

Value* reduceBias(E& e, Value* dy, size_t rank) {
  std::vector<int64_t> axes{0};
  for (size_t i = 2; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  return e.reduceSum(dy, axes, false);
}

void convGrad(GradCtx& c) {
  E e{c};
  Value *X = c.in(0), *W = c.in(1), *dy = c.doutOrZeros(0);
  Dims wd = staticDims(c, W, "weights W");
  AICC_CHECK(wd.size() >= 3, "{}: weights W have rank {}", c.node.describe(), wd.size());
  Geo g;
  g.sp = wd.size() - 2;
  g.in = spatialDims(c, X, "input X");
  g.k.assign(wd.begin() + 2, wd.end());
  const int64_t G = c.node.attrInt("group"), Cg = wd[1];
  WindowAttrs a = readWindowAttrs(c.node, g.sp);
  auto ws = slideDims(a, g.in, g.k, false);
  for (size_t i = 0; i < g.sp; ++i) {
    const Window& w = ws[i];
    g.out.push_back(w.out), g.s.push_back(w.stride), g.d.push_back(w.dilation);
    g.pb.push_back(w.padBegin);
    g.pe.push_back(w.stride * (w.out - 1) + w.extent() - w.padBegin - w.in);
  }
  const size_t rank = g.sp + 2;
  if (c.needs(0)) {
    // ConvTranspose output size: s*(o-1) + output_padding + extent - pb - pe == in.
    Dims outPad;
    for (int64_t p : g.pe) outPad.push_back(p < 0 ? -p : 0);
    AttrMap at = convAttrs(g.s, g.d, g.pb, g.pe, G);
    at["output_padding"] = Attribute{outPad};
    c.give(0, e.op("ConvTranspose", {dy, W}, std::move(at)));
  }
  if (c.needs(1)) {
    Value* xr = groupsToBatch(e, X, G, Cg, g.in);                            // [Cg, G*N, in...]
    Value* dyT = e.transpose(dy, swap01(rank));                              // [M, N, out...]
    Value* dw = e.op("Conv", {xr, dyT}, convAttrs(g.d, g.s, g.pb, g.pe, G)); // [Cg, M, k'...]
    // With a negative end padding the correlation has extra trailing taps: drop them.
    bool crop = false;
    for (int64_t p : g.pe) crop |= p < 0;
    if (crop) dw = e.slice(dw, Dims(g.sp, 0), g.k, range(2, static_cast<int64_t>(rank)));
    c.give(1, e.transpose(dw, swap01(rank)));
  }
  if (c.needs(2)) c.give(2, reduceBias(e, dy, rank));
}

void convTransposeGrad(GradCtx& c) {
  E e{c};
  const Node& n = c.node;
  Value *X = c.in(0), *W = c.in(1), *dy = c.doutOrZeros(0);
  Dims wd = staticDims(c, W, "weights W");
  AICC_CHECK(wd.size() >= 3, "{}: weights W have rank {}", n.describe(), wd.size());
  Geo g;
  g.sp = wd.size() - 2;
  g.in = spatialDims(c, X, "input X");
  g.out = spatialDims(c, c.out(0), "output Y");
  g.k.assign(wd.begin() + 2, wd.end());
  const int64_t G = n.attrInt("group"), Mg = wd[1];
  WindowAttrs a = readWindowAttrs(n, g.sp);
  Dims outPad = n.attrInts("output_padding", Dims(g.sp, 0));
  if (outPad.empty()) outPad.assign(g.sp, 0);
  const bool same = a.autoPad == "SAME_UPPER" || a.autoPad == "SAME_LOWER";
  const bool hasOutShape = !n.attrInts("output_shape", {}).empty();
  for (size_t i = 0; i < g.sp; ++i) {
    g.s.push_back(a.strides[i]), g.d.push_back(a.dilations[i]);
    const int64_t span = g.s[i] * (g.in[i] - 1) + g.ext(i); // output size without any padding
    int64_t pb = 0;
    if (hasOutShape || same) {
      int64_t total = span + outPad[i] - g.out[i], half = floorDiv(total, 2);
      pb = a.autoPad == "SAME_UPPER" ? half : total - half;
    } else if (a.autoPad == "NOTSET") {
      pb = a.pads[i];
    }
    g.pb.push_back(pb);
    g.pe.push_back(span - pb - g.out[i]);
  }
  const size_t rank = g.sp + 2;
  // dY with the negative paddings applied (cropped): its spatial size is span - max(pb,0) -
  // max(pe,0).
  Value* dyc = cropNegative(e, dy, g.pb, g.pe);
  if (c.needs(0)) c.give(0, e.op("Conv", {dyc, W}, convAttrs(g.s, g.d, g.pb, g.pe, G)));
  if (c.needs(1)) {
    Dims cropped;
    for (size_t i = 0; i < g.sp; ++i)
      cropped.push_back(g.out[i] + std::min<int64_t>(g.pb[i], 0) + std::min<int64_t>(g.pe[i], 0));
    Value* dyr = groupsToBatch(e, dyc, G, Mg, cropped);                      // [Mg, G*N, out...]
    Value* xT = e.transpose(X, swap01(rank));                                // [C, N, in...]
    Value* dw = e.op("Conv", {dyr, xT}, convAttrs(g.d, g.s, g.pb, g.pe, G)); // [Mg, C, k...]
    c.give(1, e.transpose(dw, swap01(rank)));
  }
  if (c.needs(2)) c.give(2, reduceBias(e, dy, rank));
}

} // namespace

void registerConvGrads(OpRegistry& r) {
  r.at("Conv").grad = convGrad;
  r.at("ConvTranspose").grad = convTransposeGrad;
}

} // namespace aicc::nngrad
