// Vision helpers: NonMaxSuppression, AffineGrid, DeformConv.
#include "ops/misc.h"
#include "ops/shape_ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace aicc {
namespace {

// ---- NonMaxSuppression -------------------------------------------------------------------------

struct Box {
  double x0, y0, x1, y1; // x0 <= x1, y0 <= y1
};

Box readBox(const Tensor& boxes, int64_t at, bool centerPoint) {
  double a = boxes.getF64(at), b = boxes.getF64(at + 1), c = boxes.getF64(at + 2),
         d = boxes.getF64(at + 3);
  if (centerPoint) // [x_center, y_center, width, height]
    return {a - c / 2, b - d / 2, a + c / 2, b + d / 2};
  // [y1, x1, y2, x2] with either diagonal pair of corners.
  return {std::min(b, d), std::min(a, c), std::max(b, d), std::max(a, c)};
}

// True when IOU(a, b) > threshold (boxes of non-positive area never suppress).
bool suppresses(const Box& a, const Box& b, double iouThreshold) {
  double ix = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  double iy = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (ix <= 0 || iy <= 0) return false;
  double inter = ix * iy;
  double areaA = (a.x1 - a.x0) * (a.y1 - a.y0), areaB = (b.x1 - b.x0) * (b.y1 - b.y0);
  double uni = areaA + areaB - inter;
  if (areaA <= 0 || areaB <= 0 || uni <= 0) return false;
  return inter / uni > iouThreshold;
}

// A scalar optional input (0-D or one element), or `dflt` when absent or empty.
double optionalScalar(const KernelCtx& c, size_t i, double dflt) {
  if (!c.has(i) || c.in(i).numel() == 0) return dflt;
  AICC_CHECK(c.in(i).numel() == 1, "input {} must hold one value, has shape {}", i,
             formatDims(c.in(i).shape()));
  return c.in(i).getF64(0);
}

std::vector<RValue> nmsKernel(KernelCtx& c) {
  const Tensor& boxes = c.in(0);
  const Tensor& scores = c.in(1);
  requireDType(c, 0, {DType::F32});
  requireDType(c, 1, {DType::F32});
  AICC_CHECK(boxes.rank() == 3 && boxes.dim(2) == 4,
             "boxes must have shape [batches, boxes, 4], got {}", formatDims(boxes.shape()));
  AICC_CHECK(scores.rank() == 3 && scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1),
             "scores {} must have shape [batches, classes, boxes] matching boxes {}",
             formatDims(scores.shape()), formatDims(boxes.shape()));
  int64_t maxOut = 0;
  if (c.has(2) && c.in(2).numel() > 0) {
    AICC_CHECK(c.in(2).numel() == 1, "max_output_boxes_per_class must hold one value");
    maxOut = std::max<int64_t>(c.in(2).getI64(0), 0);
  }
  const double iouThr = optionalScalar(c, 3, 0);
  const bool hasScoreThr = c.has(4) && c.in(4).numel() > 0;
  const double scoreThr = optionalScalar(c, 4, 0);
  const bool center = c.node.attrInt("center_point_box") != 0;
  const int64_t B = boxes.dim(0), N = boxes.dim(1), C = scores.dim(1);

  std::vector<int64_t> sel; // triples (batch, class, box)
  std::vector<Box> bx(static_cast<size_t>(N));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < N; ++i)
      bx[static_cast<size_t>(i)] = readBox(boxes, (b * N + i) * 4, center);
    for (int64_t k = 0; k < C; ++k) {
      const int64_t base = (b * C + k) * N;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i) { // NaN scores are never selected
        double sc = scores.getF64(base + i);
        if (!std::isnan(sc) && (!hasScoreThr || sc > scoreThr)) cand.push_back(i);
      }
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
        return scores.getF64(base + p) > scores.getF64(base + q);
      });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= maxOut) break;
        bool ok = std::none_of(kept.begin(), kept.end(), [&](int64_t j) {
          return suppresses(bx[static_cast<size_t>(i)], bx[static_cast<size_t>(j)], iouThr);
        });
        if (!ok) continue;
        kept.push_back(i);
        sel.insert(sel.end(), {b, k, i});
      }
    }
  }
  Tensor out(DType::I64, {static_cast<int64_t>(sel.size() / 3), 3});
  std::copy(sel.begin(), sel.end(), out.data<int64_t>());
  return {RValue::of(out)};
}

void inferNms(InferCtx& c) {
  const auto& b = c.inShape(0);
  const auto& s = c.inShape(1);
  AICC_CHECK(!b || b->size() == 3, "boxes must have rank 3, got {}", formatShape(*b));
  AICC_CHECK(!s || s->size() == 3, "scores must have rank 3, got {}", formatShape(*s));
  c.setTensor(0, DType::I64, Shape{Dim{}, Dim::known(3)});
}

// ---- AffineGrid --------------------------------------------------------------------------------

// Evenly spaced positions in [-1, 1] for `n` samples (pixel centers or corners).
std::vector<double> basePositions(int64_t n, bool alignCorners) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto fi = static_cast<double>(i);
    if (alignCorners)
      v[static_cast<size_t>(i)] = n == 1 ? -1.0 : -1.0 + fi * (2.0 / static_cast<double>(n - 1));
    else
      v[static_cast<size_t>(i)] =
          -1.0 + 1.0 / static_cast<double>(n) + fi * (2.0 / static_cast<double>(n));
  }
  return v;
}

std::vector<RValue> affineGridKernel(KernelCtx& c) {
  const Tensor& theta = c.in(0);
  requireDType(c, 0, {DType::F16, DType::F32, DType::F64, DType::BF16});
  std::vector<int64_t> size = c.in(1).toI64Vector();
  AICC_CHECK(size.size() == 4 || size.size() == 5,
             "size must have 4 ([N,C,H,W]) or 5 ([N,C,D,H,W]) entries, got {}", size.size());
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  const int64_t N = size[0];
  AICC_CHECK(theta.rank() == 3 && theta.dim(0) == N && theta.dim(1) == r && theta.dim(2) == r + 1,
             "theta must have shape [{}, {}, {}], got {}", N, r, r + 1, formatDims(theta.shape()));
  Dims spatial(size.begin() + 2, size.end()); // (D,) H, W
  for (int64_t d : spatial) AICC_CHECK(d >= 0, "size has a negative dim: {}", formatDims(size));
  Dims outShape{N};
  outShape.insert(outShape.end(), spatial.begin(), spatial.end());
  outShape.push_back(r);
  Tensor out(theta.dtype(), outShape);
  const bool align = c.node.attrInt("align_corners") != 0;
  // Coordinates listed innermost first: (x, y[, z]) with x along W.
  std::vector<std::vector<double>> pos;
  for (int64_t d = r - 1; d >= 0; --d)
    pos.push_back(basePositions(spatial[static_cast<size_t>(d)], align));
  const int64_t P = checkedNumel(spatial);
  Dims st = stridesOf(spatial);
  std::vector<double> h(static_cast<size_t>(r + 1));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t k = 0; k < r; ++k) { // k-th coordinate is spatial dim r-1-k
        int64_t sd = r - 1 - k;
        int64_t idx = (p / st[static_cast<size_t>(sd)]) % spatial[static_cast<size_t>(sd)];
        h[static_cast<size_t>(k)] = pos[static_cast<size_t>(k)][static_cast<size_t>(idx)];
      }
      h[static_cast<size_t>(r)] = 1;
      for (int64_t i = 0; i < r; ++i) {
        double acc = 0;
        for (int64_t j = 0; j <= r; ++j)
          acc += theta.getF64((n * r + i) * (r + 1) + j) * h[static_cast<size_t>(j)];
        out.setF64((n * P + p) * r + i, acc);
      }
    }
  return {RValue::of(out)};
}

void inferAffineGrid(InferCtx& c) {
  const DType dt = c.inDType(0);
  std::optional<int64_t> len = inLength1D(c, 1);
  auto size = knownInts(c, 1);
  if (size) len = static_cast<int64_t>(size->size());
  if (!len) return c.setTensor(0, dt, std::nullopt);
  AICC_CHECK(*len == 4 || *len == 5, "size must have 4 or 5 entries, has {}", *len);
  const auto& ts = c.inShape(0);
  Shape out{ts && !ts->empty() ? (*ts)[0] : Dim{}};
  for (int64_t i = 2; i < *len; ++i) {
    int64_t v = size ? (*size)[static_cast<size_t>(i)] : -1;
    AICC_CHECK(!size || v >= 0, "size has a negative dim {}", v);
    out.push_back(size ? Dim::known(v) : Dim{});
  }
  out.push_back(Dim::known(*len - 2));
  c.setTensor(0, dt, out);
}

// ---- DeformConv --------------------------------------------------------------------------------

struct DeformGeom {
  int64_t r = 0; // spatial rank
  Dims in, kernel, out, strides, dilations, padBegin;
};

DeformGeom deformGeom(const Node& n, const Dims& x, const Dims& w) {
  DeformGeom g;
  g.r = static_cast<int64_t>(x.size()) - 2;
  auto ru = static_cast<size_t>(g.r);
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = n.attrInts("kernel_shape", Dims(w.begin() + 2, w.end()));
  g.strides = n.attrInts("strides", Dims(ru, 1));
  g.dilations = n.attrInts("dilations", Dims(ru, 1));
  Dims pads = n.attrInts("pads", Dims(2 * ru, 0));
  AICC_CHECK(g.kernel.size() == ru && g.strides.size() == ru && g.dilations.size() == ru &&
                 pads.size() == 2 * ru,
             "kernel_shape/strides/dilations/pads do not match the {} spatial dims of X", g.r);
  for (size_t d = 0; d < ru; ++d) {
    AICC_CHECK(g.strides[d] > 0 && g.dilations[d] > 0 && g.kernel[d] > 0,
               "strides, dilations and kernel_shape must be positive");
    int64_t span = (g.kernel[d] - 1) * g.dilations[d] + 1;
    int64_t o = (g.in[d] + pads[d] + pads[d + ru] - span) / g.strides[d] + 1;
    AICC_CHECK(o >= 0 && g.in[d] + pads[d] + pads[d + ru] >= span,
               "kernel span {} is larger than padded input dim {}", span,
               g.in[d] + pads[d] + pads[d + ru]);
    g.out.push_back(o);
    g.padBegin.push_back(pads[d]);
  }
  return g;
}

// Value of one channel plane at fractional position p (linear interpolation; zero outside).
double sampleLinear(const double* plane, const Dims& in, const Dims& st, const double* p) {
  const size_t r = in.size();
  for (size_t d = 0; d < r; ++d) // far outside (or NaN): every tap is padding
    if (!(std::fabs(p[d]) < 1e9)) return 0;
  double total = 0;
  for (uint32_t corner = 0; corner < (1u << r); ++corner) {
    double w = 1;
    int64_t at = 0;
    bool inside = true;
    for (size_t d = 0; d < r && inside; ++d) {
      double f = std::floor(p[d]);
      auto i = static_cast<int64_t>(f) + ((corner >> d) & 1u);
      double frac = p[d] - f;
      w *= ((corner >> d) & 1u) ? frac : 1 - frac;
      inside = i >= 0 && i < in[d];
      at += i * st[d];
    }
    if (inside && w != 0) total += w * plane[at];
  }
  return total;
}

std::vector<RValue> deformConvKernel(KernelCtx& c) {
  const Tensor &X0 = c.in(0), &W0 = c.in(1), &O0 = c.in(2);
  for (size_t i = 0; i < 5; ++i)
    if (c.has(i)) requireDType(c, i, {DType::F16, DType::F32, DType::F64, DType::BF16});
  AICC_CHECK(X0.rank() >= 3 && W0.rank() == X0.rank(), "X {} and W {} must have equal rank >= 3",
             formatDims(X0.shape()), formatDims(W0.shape()));
  const DeformGeom g = deformGeom(c.node, X0.shape(), W0.shape());
  const auto ru = static_cast<size_t>(g.r);
  const int64_t N = X0.dim(0), C = X0.dim(1), OC = W0.dim(0);
  const int64_t group = c.node.attrInt("group"), og = c.node.attrInt("offset_group");
  AICC_CHECK(group > 0 && og > 0 && C % group == 0 && OC % group == 0 && W0.dim(1) == C / group,
             "X {} and W {} do not fit group = {}", formatDims(X0.shape()), formatDims(W0.shape()),
             group);
  AICC_CHECK(C % og == 0, "channels {} are not divisible by offset_group {}", C, og);
  AICC_CHECK(Dims(W0.shape().begin() + 2, W0.shape().end()) == g.kernel,
             "W {} does not match kernel_shape {}", formatDims(W0.shape()), formatDims(g.kernel));
  const int64_t K = checkedNumel(g.kernel), O = checkedNumel(g.out), I = checkedNumel(g.in);
  Dims offShape{N, og * K * g.r};
  offShape.insert(offShape.end(), g.out.begin(), g.out.end());
  AICC_CHECK(O0.shape() == offShape, "offset has shape {}, expected {}", formatDims(O0.shape()),
             formatDims(offShape));
  Dims maskShape{N, og * K};
  maskShape.insert(maskShape.end(), g.out.begin(), g.out.end());
  if (c.has(4))
    AICC_CHECK(c.in(4).shape() == maskShape, "mask has shape {}, expected {}",
               formatDims(c.in(4).shape()), formatDims(maskShape));
  if (c.has(3))
    AICC_CHECK(c.in(3).rank() == 1 && c.in(3).dim(0) == OC, "B has shape {}, expected [{}]",
               formatDims(c.in(3).shape()), OC);

  auto f64 = [](const Tensor& t) { return t.dtype() == DType::F64 ? t : t.castTo(DType::F64); };
  Tensor X = f64(X0), W = f64(W0), Off = f64(O0);
  Tensor M = c.has(4) ? f64(c.in(4)) : Tensor();
  Dims outShape{N, OC};
  outShape.insert(outShape.end(), g.out.begin(), g.out.end());
  Tensor Y(DType::F64, outShape);
  const Dims inSt = stridesOf(g.in), kSt = stridesOf(g.kernel), oSt = stridesOf(g.out);
  const int64_t icg = C / group, ocg = OC / group, icog = C / og;
  // col[ic][k][o]: the (masked) sampled input for each kernel tap and output position.
  std::vector<double> col(static_cast<size_t>(C * K * O));
  std::vector<double> p(ru);
  const double *xp = X.data<double>(), *wp = W.data<double>(), *offp = Off.data<double>();
  double* yp = Y.data<double>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t ic = 0; ic < C; ++ic) {
      const int64_t ogi = ic / icog;
      const double* plane = xp + (n * C + ic) * I;
      for (int64_t k = 0; k < K; ++k)
        for (int64_t o = 0; o < O; ++o) {
          for (size_t d = 0; d < ru; ++d) {
            int64_t od = (o / oSt[d]) % g.out[d], kd = (k / kSt[d]) % g.kernel[d];
            int64_t offAt = (((n * og + ogi) * K + k) * g.r + static_cast<int64_t>(d)) * O + o;
            p[d] = static_cast<double>(od * g.strides[d] - g.padBegin[d] + kd * g.dilations[d]) +
                   offp[offAt];
          }
          double m = M.defined() ? M.data<double>()[((n * og + ogi) * K + k) * O + o] : 1.0;
          col[static_cast<size_t>((ic * K + k) * O + o)] =
              m == 0 ? 0 : m * sampleLinear(plane, g.in, inSt, p.data());
        }
    }
    for (int64_t oc = 0; oc < OC; ++oc) {
      const int64_t gi = oc / ocg;
      double* yrow = yp + (n * OC + oc) * O;
      const double bias = c.has(3) ? c.in(3).getF64(oc) : 0.0;
      std::fill(yrow, yrow + O, bias);
      for (int64_t j = 0; j < icg * K; ++j) { // j = (input channel within group, tap)
        const double w = wp[oc * icg * K + j];
        const double* crow = col.data() + (gi * icg * K + j) * O;
        for (int64_t o = 0; o < O; ++o) yrow[o] += w * crow[o];
      }
    }
  }
  return {RValue::of(X0.dtype() == DType::F64 ? Y : Y.castTo(X0.dtype()))};
}

void inferDeformConv(InferCtx& c) {
  const DType dt = c.inDType(0);
  const auto &xs = c.inShape(0), &ws = c.inShape(1), &os = c.inShape(2);
  if (!xs) return c.setTensor(0, dt, std::nullopt);
  AICC_CHECK(xs->size() >= 3, "X must have rank >= 3, got {}", formatShape(*xs));
  Shape out{(*xs)[0], ws && !ws->empty() ? (*ws)[0] : Dim{}};
  auto xd = toDims(*xs);
  auto wd = ws ? toDims(*ws) : std::nullopt;
  if (xd && wd && wd->size() == xd->size()) {
    DeformGeom g = deformGeom(c.node, *xd, *wd);
    for (int64_t o : g.out) out.push_back(Dim::known(o));
  } else {
    for (size_t d = 2; d < xs->size(); ++d)
      out.push_back(os && os->size() == xs->size() ? (*os)[d] : Dim{});
  }
  c.setTensor(0, dt, out);
}

} // namespace

void registerMiscVisionOps(OpRegistry& r) {
  r.op("NonMaxSuppression")
      .since(10)
      .inputs(2, 5)
      .attrInt("center_point_box", 0)
      // The selected rows: at most every box of every class of every batch.
      .dataDim([](const Node& n, size_t out, size_t dim) -> std::optional<DataDim> {
        const Value* s = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
        if (out != 0 || dim != 0 || !s || !s->type.shape || s->type.shape->size() != 3)
          return std::nullopt;
        const Shape& d = *s->type.shape; // [batches, classes, boxes]
        return DataDim{dimMul(d[0], dimMul(d[1], d[2])), 0};
      })
      .infer(inferNms)
      .kernel(nmsKernel);
  r.op("AffineGrid")
      .since(20)
      .inputs(2, 2)
      .attrInt("align_corners", 0)
      .infer(inferAffineGrid)
      .kernel(affineGridKernel);
  r.op("DeformConv")
      .since(19)
      .inputs(3, 5)
      .attr("dilations", Attribute::Kind::Ints)
      .attrInt("group", 1)
      .attr("kernel_shape", Attribute::Kind::Ints)
      .attrInt("offset_group", 1)
      .attr("pads", Attribute::Kind::Ints)
      .attr("strides", Attribute::Kind::Ints)
      .infer(inferDeformConv)
      .kernel(deformConvKernel);
}

} // namespace aicc
