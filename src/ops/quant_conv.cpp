// Quantized convolutions: QLinearConv and ConvInteger. Integer im2col + int32 accumulation over
// raw pointers (mobilenetv2-12-int8 runs through here), 1 to 3 spatial dims.
#include "ops/helpers.h"
#include "ops/nn.h"
#include "ops/quant_util.h"

#include <algorithm>

namespace aicc {
namespace {

struct ConvGeom {
  int64_t N = 0, C = 0, M = 0, group = 1, spatial = 0;
  // Spatial geometry padded to 3 dims (leading dims of size 1).
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1}, stride[3] = {1, 1, 1},
          dil[3] = {1, 1, 1}, padBegin[3] = {0, 0, 0};
  Dims outShape;
};

// Output size along one spatial dim, with the begin pad it uses (auto_pad resolved).
std::pair<int64_t, int64_t> convOutDim(const std::string& autoPad, int64_t in, int64_t k,
                                       int64_t stride, int64_t dil, int64_t pb, int64_t pe) {
  AICC_CHECK(stride > 0 && dil > 0, "strides and dilations must be positive");
  int64_t ext = (k - 1) * dil + 1;
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    int64_t out = (in + stride - 1) / stride;
    int64_t total = std::max<int64_t>(0, (out - 1) * stride + ext - in);
    int64_t begin = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    return {out, begin};
  }
  if (autoPad == "VALID")
    pb = pe = 0;
  else
    AICC_CHECK(autoPad == "NOTSET", "attribute 'auto_pad' has unknown value '{}'", autoPad);
  AICC_CHECK(pb >= 0 && pe >= 0, "pads must be non-negative");
  int64_t span = in + pb + pe - ext;
  AICC_CHECK(span >= 0, "the kernel (extent {}) is larger than the padded input ({})", ext,
             in + pb + pe);
  return {span / stride + 1, pb};
}

ConvGeom convGeometry(const Node& n, const Dims& x, const Dims& w) {
  ConvGeom g;
  AICC_CHECK(x.size() >= 3 && x.size() <= 5, "x must have rank 3 to 5, got {}", formatDims(x));
  AICC_CHECK(w.size() == x.size(), "w has shape {}, x has {}", formatDims(w), formatDims(x));
  g.spatial = static_cast<int64_t>(x.size()) - 2;
  auto sp = static_cast<size_t>(g.spatial);
  g.N = x[0];
  g.C = x[1];
  g.M = w[0];
  g.group = n.attrInt("group");
  AICC_CHECK(g.group > 0 && g.C % g.group == 0 && g.M % g.group == 0,
             "group {} does not divide channels {} / {}", g.group, g.C, g.M);
  AICC_CHECK(w[1] * g.group == g.C,
             "w has {} input channels per group, x has {} channels in {} groups", w[1], g.C,
             g.group);
  std::vector<int64_t> ks = n.attrInts("kernel_shape", Dims(w.begin() + 2, w.end()));
  std::vector<int64_t> strides = n.attrInts("strides", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> dil = n.attrInts("dilations", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * sp, 0));
  AICC_CHECK(ks.size() == sp && strides.size() == sp && dil.size() == sp && pads.size() == 2 * sp,
             "kernel_shape/strides/dilations/pads do not match {} spatial dims", sp);
  std::string autoPad = n.attrString("auto_pad");
  g.outShape = {g.N, g.M};
  size_t off = 3 - sp;
  for (size_t i = 0; i < sp; ++i) {
    AICC_CHECK(ks[i] == w[2 + i], "kernel_shape {} does not match w's shape {}", fmt::join(ks, ","),
               formatDims(w));
    auto [o, pb] = convOutDim(autoPad, x[2 + i], ks[i], strides[i], dil[i], pads[i], pads[sp + i]);
    g.in[off + i] = x[2 + i];
    g.k[off + i] = ks[i];
    g.out[off + i] = o;
    g.stride[off + i] = strides[i];
    g.dil[off + i] = dil[i];
    g.padBegin[off + i] = pb;
    g.outShape.push_back(o);
  }
  return g;
}

void inferConv(InferCtx& c, size_t xi, size_t wi, DType dt) {
  const auto& x = c.inShape(xi);
  const auto& w = c.inShape(wi);
  if (!x || !w) {
    c.setTensor(0, dt, std::nullopt);
    return;
  }
  Shape out{(*x)[0], (*w)[0]};
  Shape one = *x; // the geometry does not depend on the batch
  one[0] = Dim::known(1);
  auto xs = toDims(one), ws = toDims(*w);
  if (xs && ws) {
    ConvGeom g = convGeometry(c.node, *xs, *ws);
    for (size_t i = 2; i < g.outShape.size(); ++i) out.push_back(Dim::known(g.outShape[i]));
  } else if (auto k = ws ? std::optional<Dims>(Dims(ws->begin() + 2, ws->end())) : std::nullopt;
             k && k->size() + 2 == x->size()) { // symbolic spatial sizes (ir/dim_expr.h)
    const WindowAttrs a = readWindowAttrs(c.node, k->size());
    for (size_t i = 0; i < k->size(); ++i) out.push_back(slideSymbolic(a, i, (*x)[i + 2], (*k)[i]));
  } else {
    for (size_t i = 2; i < x->size(); ++i) out.push_back(Dim{});
  }
  c.setTensor(0, dt, out);
}

// int32 accumulators [N, M, outSpatial] of sum((x - xzp) * (w - wzp[m])) (+ bias[m]).
std::vector<int32_t> intConv(const ConvGeom& g, const Tensor& x, int32_t xzp, const Tensor& w,
                             const QuantParam& wzp, const Tensor* bias) {
  int64_t cg = g.C / g.group, mg = g.M / g.group;
  int64_t kvol = g.k[0] * g.k[1] * g.k[2], inVol = g.in[0] * g.in[1] * g.in[2];
  int64_t P = g.out[0] * g.out[1] * g.out[2], Kc = cg * kvol;
  std::vector<int32_t> xv(static_cast<size_t>(x.numel())), wv(static_cast<size_t>(w.numel()));
  auto load = [](const Tensor& t, std::vector<int32_t>& v) {
    if (t.dtype() == DType::U8)
      for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<uint8_t>()[i];
    else if (t.dtype() == DType::I8)
      for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<int8_t>()[i];
    else
      fail("expected a u8 or i8 tensor, got {}", dtypeName(t.dtype()));
  };
  load(x, xv);
  load(w, wv);
  for (auto& v : xv) v -= xzp;
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t i = 0; i < Kc; ++i)
      wv[static_cast<size_t>(m * Kc + i)] -= static_cast<int32_t>(wzp(m));
  std::vector<int32_t> out(static_cast<size_t>(g.N * g.M * P), 0), col(static_cast<size_t>(Kc * P));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gr = 0; gr < g.group; ++gr) {
      // im2col: col[(c, kz, ky, kx)][(oz, oy, ox)]; padding reads as 0 (= the zero point).
      int32_t* cp = col.data();
      for (int64_t ci = 0; ci < cg; ++ci) {
        const int32_t* xc = xv.data() + (n * g.C + gr * cg + ci) * inVol;
        for (int64_t kz = 0; kz < g.k[0]; ++kz)
          for (int64_t ky = 0; ky < g.k[1]; ++ky)
            for (int64_t kx = 0; kx < g.k[2]; ++kx)
              for (int64_t oz = 0; oz < g.out[0]; ++oz) {
                int64_t iz = oz * g.stride[0] - g.padBegin[0] + kz * g.dil[0];
                for (int64_t oy = 0; oy < g.out[1]; ++oy) {
                  int64_t iy = oy * g.stride[1] - g.padBegin[1] + ky * g.dil[1];
                  bool rowOk = iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1];
                  const int32_t* xrow = rowOk ? xc + (iz * g.in[1] + iy) * g.in[2] : nullptr;
                  for (int64_t ox = 0; ox < g.out[2]; ++ox) {
                    int64_t ix = ox * g.stride[2] - g.padBegin[2] + kx * g.dil[2];
                    *cp++ = rowOk && ix >= 0 && ix < g.in[2] ? xrow[ix] : 0;
                  }
                }
              }
      }
      for (int64_t mi = 0; mi < mg; ++mi) {
        int64_t m = gr * mg + mi;
        int32_t* o = out.data() + (n * g.M + m) * P;
        int32_t b0 = bias ? bias->data<int32_t>()[m] : 0;
        std::fill(o, o + P, b0);
        const int32_t* wr = wv.data() + m * Kc;
        for (int64_t kk = 0; kk < Kc; ++kk) {
          int32_t wk = wr[kk];
          if (wk == 0) continue;
          const int32_t* cr = col.data() + kk * P;
          for (int64_t p = 0; p < P; ++p) o[p] += wk * cr[p];
        }
      }
    }
  return out;
}

OpBuilder convAttrs(OpBuilder b) {
  return b.attrString("auto_pad", "NOTSET")
      .attr("dilations", Attribute::Kind::Ints)
      .attrInt("group", 1)
      .attr("kernel_shape", Attribute::Kind::Ints)
      .attr("pads", Attribute::Kind::Ints)
      .attr("strides", Attribute::Kind::Ints);
}

int32_t scalarZeroPoint(KernelCtx& c, size_t i, const char* what) {
  if (!c.has(i)) return 0;
  AICC_CHECK(c.in(i).numel() == 1, "{} must be a scalar (per-tensor), got shape {}", what,
             formatDims(c.in(i).shape()));
  return static_cast<int32_t>(c.in(i).getI64(0));
}

} // namespace

void registerQuantConvOps(OpRegistry& r) {
  convAttrs(r.op("ConvInteger").perSample().since(10).inputs(2, 4))
      .infer([](InferCtx& c) { inferConv(c, 0, 1, DType::I32); })
      .kernel([](KernelCtx& c) {
        const Tensor& x = c.in(0);
        const Tensor& w = c.in(1);
        ConvGeom g = convGeometry(c.node, x.shape(), w.shape());
        QuantParam wzp(c.has(3) ? &c.in(3) : nullptr, g.M, "w_zero_point");
        std::vector<int32_t> acc =
            intConv(g, x, scalarZeroPoint(c, 2, "x_zero_point"), w, wzp, nullptr);
        Tensor y(DType::I32, g.outShape);
        std::copy(acc.begin(), acc.end(), y.data<int32_t>());
        return std::vector<RValue>{RValue::of(y)};
      });

  convAttrs(r.op("QLinearConv").perSample().since(10).inputs(8, 9))
      .infer([](InferCtx& c) { inferConv(c, 0, 3, c.has(7) ? c.inDType(7) : c.inDType(0)); })
      .kernel([](KernelCtx& c) {
        const Tensor& x = c.in(0);
        const Tensor& w = c.in(3);
        ConvGeom g = convGeometry(c.node, x.shape(), w.shape());
        QuantParam xs(&c.in(1), 1, "x_scale"), ws(&c.in(4), g.M, "w_scale"),
            ys(&c.in(6), 1, "y_scale");
        QuantParam wzp(c.has(5) ? &c.in(5) : nullptr, g.M, "w_zero_point");
        const Tensor* bias = nullptr;
        if (c.has(8)) {
          bias = &c.in(8);
          AICC_CHECK(bias->dtype() == DType::I32 && bias->numel() == g.M,
                     "B must be i32 with {} elements", g.M);
        }
        std::vector<int32_t> acc =
            intConv(g, x, scalarZeroPoint(c, 2, "x_zero_point"), w, wzp, bias);
        DType out = c.has(7) ? c.in(7).dtype() : x.dtype();
        AICC_CHECK(out == DType::U8 || out == DType::I8, "y_zero_point must be u8 or i8, got {}",
                   dtypeName(out));
        auto [lo, hi] = quantRange(out);
        double yzp = c.has(7) ? static_cast<double>(scalarZeroPoint(c, 7, "y_zero_point")) : 0.0;
        DType st = c.in(1).dtype();
        std::vector<double> factor(static_cast<size_t>(g.M));
        for (int64_t m = 0; m < g.M; ++m)
          factor[static_cast<size_t>(m)] = roundToType(st, roundToType(st, xs(0) * ws(m)) / ys(0));
        Tensor y(out, g.outShape);
        int64_t P = checkedNumel(g.outShape) / std::max<int64_t>(1, g.N * g.M);
        for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
          // float32 product, rounded, then shifted by the zero point (as ONNX Runtime requantizes).
          float v = static_cast<float>(acc[static_cast<size_t>(i)]) *
                    static_cast<float>(factor[static_cast<size_t>((i / P) % g.M)]);
          int64_t q = roundSat(std::nearbyint(v) + yzp, lo, hi);
          if (out == DType::U8)
            y.data<uint8_t>()[i] = static_cast<uint8_t>(q);
          else
            y.data<int8_t>()[i] = static_cast<int8_t>(q);
        }
        return std::vector<RValue>{RValue::of(y)};
      });
}

} // namespace aicc
