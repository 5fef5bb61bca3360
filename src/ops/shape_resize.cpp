// Resize (and Upsample, upgraded to Resize at import).
//
// The reference kernel is separable: each resized axis is resampled in turn (in double) with a
// per-output-position list of (source index, weight) taps. Nearest is one tap; linear and cubic use
// their kernels (widened by 1/scale when antialiasing a downsample). Indices outside the input are
// clamped to the edge, or dropped with the weights renormalized when exclude_outside is set.
#include "ops/shape_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace aicc {
namespace {

struct ResizeAttrs {
  std::string mode, coord, nearest, policy;
  double cubicA, extrapolation;
  bool excludeOutside, antialias;
};

ResizeAttrs resizeAttrs(const Node& n) {
  ResizeAttrs a{n.attrString("mode"),
                n.attrString("coordinate_transformation_mode"),
                n.attrString("nearest_mode"),
                n.attrString("keep_aspect_ratio_policy"),
                n.attrFloat("cubic_coeff_a"),
                n.attrFloat("extrapolation_value"),
                n.attrInt("exclude_outside") != 0,
                n.attrInt("antialias") != 0};
  if (a.mode == "bilinear" || a.mode == "trilinear") a.mode = "linear";
  AICC_CHECK(a.mode == "nearest" || a.mode == "linear" || a.mode == "cubic", "unknown mode '{}'",
             a.mode);
  AICC_CHECK(a.policy == "stretch" || a.policy == "not_larger" || a.policy == "not_smaller",
             "unknown keep_aspect_ratio_policy '{}'", a.policy);
  return a;
}

// Per-axis output sizes and scales of a resize, from the scales or sizes inputs.
struct ResizePlan {
  Dims outShape;
  std::vector<double> scales;
  std::vector<double> roiStart, roiEnd;
};

std::vector<int64_t> resizeAxes(const Node& n, int64_t rank) {
  std::vector<int64_t> axes = n.attrInts("axes", {});
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  return normAxes(axes, rank);
}

// `sizes` / `scales` have one entry per axis in `axes` (either may be empty = absent).
ResizePlan resizePlan(const Dims& in, const std::vector<int64_t>& axes,
                      const std::vector<double>& scales, const std::vector<int64_t>& sizes,
                      const std::vector<double>& roi, const std::string& policy) {
  size_t r = in.size();
  ResizePlan p{in, std::vector<double>(r, 1.0), std::vector<double>(r, 0.0),
               std::vector<double>(r, 1.0)};
  if (!roi.empty()) {
    AICC_CHECK(roi.size() == 2 * axes.size(), "roi has {} entries, expected {}", roi.size(),
               2 * axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      p.roiStart[static_cast<size_t>(axes[i])] = roi[i];
      p.roiEnd[static_cast<size_t>(axes[i])] = roi[i + axes.size()];
    }
  }
  if (!sizes.empty()) {
    AICC_CHECK(scales.empty(), "only one of scales and sizes may be given");
    AICC_CHECK(sizes.size() == axes.size(), "sizes has {} entries for {} axes", sizes.size(),
               axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      auto a = static_cast<size_t>(axes[i]);
      AICC_CHECK(sizes[i] >= 0, "sizes {} has a negative entry", formatDims(sizes));
      AICC_CHECK(in[a] > 0, "cannot resize an empty dim {} to size {}", a, sizes[i]);
      p.scales[a] = static_cast<double>(sizes[i]) / static_cast<double>(in[a]);
      p.outShape[a] = sizes[i];
    }
    if (policy != "stretch") {
      double s = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t a : axes)
        s = policy == "not_larger" ? std::min(s, p.scales[static_cast<size_t>(a)])
                                   : std::max(s, p.scales[static_cast<size_t>(a)]);
      for (int64_t a : axes) {
        auto au = static_cast<size_t>(a);
        p.scales[au] = s;
        p.outShape[au] = static_cast<int64_t>(std::floor(s * static_cast<double>(in[au]) + 0.5));
      }
    }
    return p;
  }
  AICC_CHECK(scales.size() == axes.size(), "scales has {} entries for {} axes", scales.size(),
             axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = static_cast<size_t>(axes[i]);
    double o = std::floor(static_cast<double>(in[a]) * scales[i]);
    AICC_CHECK(scales[i] > 0 && o < 1e15, "scale {} is invalid for dim {}", scales[i], in[a]);
    p.scales[a] = scales[i];
    p.outShape[a] = static_cast<int64_t>(o);
  }
  return p;
}

// Source coordinate of output position y along one axis.
double sourceCoord(const ResizeAttrs& at, double y, double scale, int64_t inW, int64_t outW,
                   double r0, double r1) {
  auto in = static_cast<double>(inW);
  const std::string& m = at.coord;
  if (m == "half_pixel") return (y + 0.5) / scale - 0.5;
  if (m == "asymmetric") return y / scale;
  if (m == "pytorch_half_pixel") return outW > 1 ? (y + 0.5) / scale - 0.5 : 0.0;
  if (m == "tf_half_pixel_for_nn") return (y + 0.5) / scale;
  // Like ONNX's reference and ONNX Runtime, align_corners uses the unrounded output length.
  if (m == "align_corners") return scale * in == 1 ? 0.0 : y * (in - 1) / (scale * in - 1);
  if (m == "half_pixel_symmetric") {
    double adj = static_cast<double>(outW) / (scale * in);
    return in / 2 * (1 - adj) + (y + 0.5) / scale - 0.5;
  }
  if (m == "tf_crop_and_resize") {
    double x = outW > 1 ? y * (r1 - r0) * (in - 1) / static_cast<double>(outW - 1)
                        : (r1 - r0) * (in - 1) / 2;
    return x + r0 * (in - 1);
  }
  fail("unknown coordinate_transformation_mode '{}'", m);
}

double cubicWeight(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

int64_t roundNearest(double x, const std::string& mode) {
  double f = std::floor(x);
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  double frac = x - f;
  if (frac == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1 : f);
  AICC_CHECK(mode == "round_prefer_floor" || mode == "round_prefer_ceil",
             "unknown nearest_mode '{}'", mode);
  return static_cast<int64_t>(frac < 0.5 ? f : f + 1);
}

struct Tap {
  int64_t index;
  double weight;
};

// The taps of every output position along one axis (an empty list = extrapolation value).
std::vector<std::vector<Tap>> axisTaps(const ResizeAttrs& at, int64_t inW, int64_t outW,
                                       double scale, double r0, double r1) {
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(outW));
  for (int64_t y = 0; y < outW; ++y) {
    double x = sourceCoord(at, static_cast<double>(y), scale, inW, outW, r0, r1);
    if (!(std::fabs(x) < 1e15)) x = x > 0 ? 1e15 : -1e15; // keeps index math defined (NaN too)
    auto& t = taps[static_cast<size_t>(y)];
    if (at.coord == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(inW - 1))) continue;
    if (at.mode == "nearest") {
      t.push_back({std::clamp<int64_t>(roundNearest(x, at.nearest), 0, inW - 1), 1.0});
      continue;
    }
    // Taps at base + i with distance i - ratio; an integral x uses base x - 1 and ratio 1.
    double fl = std::floor(x);
    double base = fl == x ? x - 1 : fl, ratio = x - base;
    double s = at.antialias ? std::min(scale, 1.0) : 1.0;
    bool cubic = at.mode == "cubic";
    // Footprint [lo, 2 - lo): {0, 1} for linear, {-1, .., 2} for cubic, wider when antialiasing.
    auto lo = static_cast<int64_t>(std::floor((cubic ? -2 : -1) / s) + 1);
    double sum = 0;
    for (int64_t i = lo; i < 2 - lo; ++i) {
      double d = (static_cast<double>(i) - ratio) * s;
      double w = cubic ? cubicWeight(d, at.cubicA) : std::max(0.0, 1 - std::fabs(d));
      auto idx = static_cast<int64_t>(base) + i;
      if (at.excludeOutside && (idx < 0 || idx >= inW)) w = 0;
      if (w == 0) continue;
      t.push_back({std::clamp<int64_t>(idx, 0, inW - 1), w});
      sum += w;
    }
    if ((at.antialias || at.excludeOutside) && sum != 0)
      for (Tap& tp : t) tp.weight /= sum;
  }
  return taps;
}

std::vector<RValue> kernelResize(KernelCtx& c) {
  const Tensor& x = c.in(0);
  ResizeAttrs at = resizeAttrs(c.node);
  auto axes = resizeAxes(c.node, x.rank());
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (c.has(2) && c.in(2).numel() > 0) scales = c.in(2).toF64Vector();
  if (c.has(3) && c.in(3).numel() > 0) sizes = c.in(3).toI64Vector();
  if (c.has(1) && c.in(1).numel() > 0 && at.coord == "tf_crop_and_resize")
    roi = c.in(1).toF64Vector();
  AICC_CHECK(!scales.empty() || !sizes.empty(), "one of scales and sizes must be given");
  AICC_CHECK(!(at.mode == "nearest" && at.antialias),
             "antialias is not supported for nearest mode");
  ResizePlan p = resizePlan(x.shape(), axes, scales, sizes, roi, at.policy);
  std::vector<double> buf = x.toF64Vector();
  Dims cur = x.shape();
  for (size_t a = 0; a < cur.size(); ++a) {
    int64_t inW = cur[a], outW = p.outShape[a];
    bool identity = inW == outW && p.scales[a] == 1.0 && p.roiStart[a] == 0.0 && p.roiEnd[a] == 1.0;
    if (identity) continue;
    auto taps = axisTaps(at, inW, outW, p.scales[a], p.roiStart[a], p.roiEnd[a]);
    int64_t outer = prodDims(cur, 0, a), inner = prodDims(cur, a + 1, cur.size());
    std::vector<double> next(static_cast<size_t>(outer * outW * inner));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t y = 0; y < outW; ++y) {
        double* dst = next.data() + (o * outW + y) * inner;
        const auto& t = taps[static_cast<size_t>(y)];
        if (t.empty()) {
          std::fill(dst, dst + inner, at.extrapolation);
          continue;
        }
        for (const Tap& tp : t) {
          const double* src = buf.data() + (o * inW + tp.index) * inner;
          for (int64_t i = 0; i < inner; ++i) dst[i] += tp.weight * src[i];
        }
      }
    buf = std::move(next);
    cur[a] = outW;
  }
  Tensor out(x.dtype(), cur);
  bool isInt = isInteger(x.dtype());
  double lo = -std::numeric_limits<double>::infinity(), hi = -lo;
  switch (x.dtype()) {
  case DType::U8:
    lo = 0, hi = 255;
    break;
  case DType::I8:
    lo = -128, hi = 127;
    break;
  case DType::U16:
    lo = 0, hi = 65535;
    break;
  case DType::I16:
    lo = -32768, hi = 32767;
    break;
  default:
    break;
  }
  for (int64_t i = 0; i < out.numel(); ++i) {
    double v = buf[static_cast<size_t>(i)];
    out.setF64(i, isInt ? std::clamp(std::nearbyint(v), lo, hi) : v);
  }
  return {RValue::of(out)};
}

void inferResize(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, dt, std::nullopt);
  auto r = static_cast<int64_t>(in->size());
  auto axes = resizeAxes(c.node, r);
  Shape out = *in;
  auto sizes = knownInts(c, 3);
  const Tensor* sc = c.constInput(2);
  if (sizes && !sizes->empty()) {
    AICC_CHECK(sizes->size() == axes.size(), "sizes has {} entries for {} axes", sizes->size(),
               axes.size());
    if (c.node.attrString("keep_aspect_ratio_policy") != "stretch") {
      auto d = toDims(*in);
      if (!d) {
        for (int64_t a : axes) out[static_cast<size_t>(a)] = Dim{};
        return c.setTensor(0, dt, out);
      }
      ResizePlan p =
          resizePlan(*d, axes, {}, *sizes, {}, c.node.attrString("keep_aspect_ratio_policy"));
      return c.setTensor(0, dt, staticShape(p.outShape));
    }
    for (size_t i = 0; i < axes.size(); ++i)
      out[static_cast<size_t>(axes[i])] = Dim::known((*sizes)[i]);
    return c.setTensor(0, dt, out);
  }
  // Sizes known symbolically (data propagation: an FPN's or U-Net's upsampling to the skip
  // connection's size, sizes = Shape(skip)[2:]): those dims, when the policy is stretch.
  if (const std::vector<Dim>* sv = c.has(3) ? c.shapeValue(3) : nullptr;
      sv && sv->size() == axes.size() &&
      c.node.attrString("keep_aspect_ratio_policy") == "stretch" &&
      std::all_of(sv->begin(), sv->end(),
                  [](const Dim& d) { return d.isStatic() || !d.symbol.empty(); })) {
    for (size_t i = 0; i < axes.size(); ++i) out[static_cast<size_t>(axes[i])] = (*sv)[i];
    return c.setTensor(0, dt, out);
  }
  if (sc && sc->numel() > 0) {
    auto s = sc->toF64Vector();
    AICC_CHECK(s.size() == axes.size(), "scales has {} entries for {} axes", s.size(), axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      Dim& d = out[static_cast<size_t>(axes[i])];
      double o = std::floor(static_cast<double>(d.value) * s[i]);
      if (d.isStatic())
        d = o >= 0 && o < 1e15 ? Dim::known(static_cast<int64_t>(o)) : Dim{};
      else if (s[i] >= 1 && s[i] == std::floor(s[i]) && s[i] < 1e6) // floor(d * k) = k d
        d = dimMul(d, Dim::known(static_cast<int64_t>(s[i])));
      else if (s[i] > 0 && s[i] < 1 && 1 / s[i] == std::floor(1 / s[i]) &&
               s[i] * std::floor(1 / s[i]) == 1)
        d = dimFloorDiv(d, static_cast<int64_t>(1 / s[i])); // floor(d / k), s = 1/k exactly
      else
        d = Dim{};
    }
    return c.setTensor(0, dt, out);
  }
  c.setTensor(0, dt, Shape(in->size()));
}

// Moves `scales` to input 2 of a Resize built from an Upsample / Resize-10 node, with the
// coordinate mapping those ops used (asymmetric; nearest = floor).
void toResize(ImportCtx& c) {
  c.attrToInput("scales", 1, DType::F32);
  Node& n = c.node;
  Value* x = n.inputs.at(0);
  Value* scales = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  AICC_CHECK(scales, "{}: scales is missing", n.describe());
  n.inputs = {x, nullptr, scales};
  n.op = "Resize";
  n.def = OpRegistry::instance().find("", "Resize");
  n.attrs["coordinate_transformation_mode"] = Attribute{std::string("asymmetric")};
  n.attrs["nearest_mode"] = Attribute{std::string("floor")};
  if (const Attribute* m = n.attr("mode")) {
    std::string mode = std::get<std::string>(m->v);
    if (mode == "bilinear" || mode == "trilinear")
      n.attrs["mode"] = Attribute{std::string("linear")};
  }
}

} // namespace

void registerShapeResizeOps(OpRegistry& r) {
  r.op("Resize")
      .perSample([](const Node& n) { // a crop's box may span samples
        return n.attrString("coordinate_transformation_mode") != "tf_crop_and_resize";
      })
      .since(10)
      .inputs(1, 4)
      .attrInt("antialias", 0)
      .attr("axes", Attribute::Kind::Ints)
      .attrString("coordinate_transformation_mode", "half_pixel")
      .attrFloat("cubic_coeff_a", -0.75f)
      .attrInt("exclude_outside", 0)
      .attrFloat("extrapolation_value", 0.0f)
      .attrString("keep_aspect_ratio_policy", "stretch")
      .attrString("mode", "nearest")
      .attrString("nearest_mode", "round_prefer_floor")
      .infer(inferResize)
      .kernel(kernelResize)
      .upgrade(10, 10, toResize);
  r.op("Upsample")
      .since(7)
      .inputs(1, 2)
      .attrString("mode", "nearest")
      .infer(inferResize)
      .kernel(kernelResize)
      .upgrade(7, 8, toResize, {{"scales", Attribute::Kind::Floats, std::nullopt, true}})
      .upgrade(9, 1 << 30, toResize);
}

} // namespace aicc
