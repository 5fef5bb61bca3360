// Region-of-interest pooling: RoiAlign (bilinear samples averaged or maxed per bin) and MaxRoiPool
// (max over the integer cells of each bin).
#include "ops/nn.h"

#include <algorithm>
#include <cmath>

namespace aicc {
namespace {

// One bilinear sample: four positions in an H x W plane and their weights.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

Sample bilinear(double y, double x, int64_t H, int64_t W) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(H) || x < -1.0 || x > static_cast<double>(W)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(x), yh = yl + 1, xh = xl + 1;
  if (yl >= H - 1) yh = yl = H - 1, y = static_cast<double>(yl);
  if (xl >= W - 1) xh = xl = W - 1, x = static_cast<double>(xl);
  double ly = y - static_cast<double>(yl), lx = x - static_cast<double>(xl), hy = 1 - ly,
         hx = 1 - lx;
  s.pos[0] = yl * W + xl, s.pos[1] = yl * W + xh, s.pos[2] = yh * W + xl, s.pos[3] = yh * W + xh;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

std::vector<RValue> roiAlignKernel(KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  const Tensor& rois = c.in(1);
  const Tensor& bidx = c.in(2);
  AICC_CHECK(X.rank() == 4, "input X has shape {}, expected [N, C, H, W]", formatDims(X.shape()));
  AICC_CHECK(rois.rank() == 2 && rois.dim(1) == 4, "rois have shape {}, expected [num_rois, 4]",
             formatDims(rois.shape()));
  AICC_CHECK(bidx.rank() == 1 && bidx.dim(0) == rois.dim(0),
             "batch_indices have shape {}, expected [{}]", formatDims(bidx.shape()), rois.dim(0));
  const Node& n = c.node;
  const int64_t OH = n.attrInt("output_height"), OW = n.attrInt("output_width");
  const int64_t ratio = n.attrInt("sampling_ratio");
  const double scale = n.attrFloat("spatial_scale");
  const std::string mode = n.attrString("mode"),
                    ctm = n.attrString("coordinate_transformation_mode");
  AICC_CHECK(OH >= 1 && OW >= 1, "output_height/output_width must be positive, got {}x{}", OH, OW);
  AICC_CHECK(mode == "avg" || mode == "max", "attribute 'mode' has unknown value '{}'", mode);
  AICC_CHECK(ctm == "half_pixel" || ctm == "output_half_pixel",
             "attribute 'coordinate_transformation_mode' has unknown value '{}'", ctm);
  const bool halfPixel = ctm == "half_pixel";
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = rois.dim(0);
  std::vector<double> x = X.toF64Vector(), rv = rois.toF64Vector();
  Tensor y(X.dtype(), {R, C, OH, OW});
  for (int64_t r = 0; r < R; ++r) {
    int64_t b = bidx.getI64(r);
    AICC_CHECK(b >= 0 && b < N, "batch index {} of roi {} is out of range [0, {})", b, r, N);
    double off = halfPixel ? 0.5 : 0.0;
    double x0 = rv[static_cast<size_t>(r * 4)] * scale - off,
           y0 = rv[static_cast<size_t>(r * 4 + 1)] * scale - off;
    double x1 = rv[static_cast<size_t>(r * 4 + 2)] * scale - off,
           y1 = rv[static_cast<size_t>(r * 4 + 3)] * scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!halfPixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    double bh = rh / static_cast<double>(OH), bw = rw / static_cast<double>(OW);
    int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(OH)));
    int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(OW)));
    gh = std::max<int64_t>(gh, 0), gw = std::max<int64_t>(gw, 0);
    double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    std::vector<Sample> samples;
    for (int64_t ph = 0; ph < OH; ++ph)
      for (int64_t pw = 0; pw < OW; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix)
            samples.push_back(
                bilinear(y0 + static_cast<double>(ph) * bh +
                             (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh),
                         x0 + static_cast<double>(pw) * bw +
                             (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw),
                         H, W));
    for (int64_t ch = 0; ch < C; ++ch) {
      const double* plane = x.data() + (b * C + ch) * H * W;
      const Sample* s = samples.data();
      for (int64_t p = 0; p < OH * OW; ++p) {
        double acc = 0;
        for (int64_t k = 0; k < gh * gw; ++k, ++s) {
          if (mode == "avg") {
            for (int q = 0; q < 4; ++q) acc += s->w[q] * plane[s->pos[q]];
          } else {
            double v = s->w[0] * plane[s->pos[0]];
            for (int q = 1; q < 4; ++q) v = std::max(v, s->w[q] * plane[s->pos[q]]);
            acc = k == 0 ? v : std::max(acc, v);
          }
        }
        y.setF64((r * C + ch) * OH * OW + p, mode == "avg" ? acc / count : acc);
      }
    }
  }
  return {RValue::of(y)};
}

void roiInfer(InferCtx& c, Dim h, Dim w) {
  const auto& xs = c.inShape(0);
  const auto& rs = c.inShape(1);
  Dim rois = rs && !rs->empty() ? (*rs)[0] : Dim{};
  Dim ch = xs && xs->size() >= 2 ? (*xs)[1] : Dim{};
  c.setTensor(0, c.inDType(0), Shape{rois, ch, h, w});
}

std::vector<RValue> maxRoiPoolKernel(KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  const Tensor& rois = c.in(1);
  AICC_CHECK(X.rank() == 4, "input X has shape {}, expected [N, C, H, W]", formatDims(X.shape()));
  AICC_CHECK(rois.rank() == 2 && rois.dim(1) == 5, "rois have shape {}, expected [num_rois, 5]",
             formatDims(rois.shape()));
  Dims ps = c.node.attrInts("pooled_shape");
  AICC_CHECK(ps.size() == 2 && ps[0] >= 1 && ps[1] >= 1,
             "attribute 'pooled_shape' must be 2 positive ints");
  const double scale = c.node.attrFloat("spatial_scale");
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = rois.dim(0);
  const int64_t PH = ps[0], PW = ps[1];
  std::vector<double> x = X.toF64Vector(), rv = rois.toF64Vector();
  Tensor y(X.dtype(), {R, C, PH, PW});
  for (int64_t r = 0; r < R; ++r) {
    const double* roi = rv.data() + r * 5;
    auto b = static_cast<int64_t>(roi[0]);
    AICC_CHECK(b >= 0 && b < N, "batch index {} of roi {} is out of range [0, {})", b, r, N);
    auto x0 = static_cast<int64_t>(std::round(roi[1] * scale)),
         y0 = static_cast<int64_t>(std::round(roi[2] * scale));
    auto x1 = static_cast<int64_t>(std::round(roi[3] * scale)),
         y1 = static_cast<int64_t>(std::round(roi[4] * scale));
    double bh = static_cast<double>(std::max<int64_t>(y1 - y0 + 1, 1)) / static_cast<double>(PH);
    double bw = static_cast<double>(std::max<int64_t>(x1 - x0 + 1, 1)) / static_cast<double>(PW);
    for (int64_t ch = 0; ch < C; ++ch) {
      const double* plane = x.data() + (b * C + ch) * H * W;
      for (int64_t ph = 0; ph < PH; ++ph)
        for (int64_t pw = 0; pw < PW; ++pw) {
          auto hs = std::clamp<int64_t>(
              static_cast<int64_t>(std::floor(static_cast<double>(ph) * bh)) + y0, 0, H);
          auto he = std::clamp<int64_t>(
              static_cast<int64_t>(std::ceil(static_cast<double>(ph + 1) * bh)) + y0, 0, H);
          auto ws = std::clamp<int64_t>(
              static_cast<int64_t>(std::floor(static_cast<double>(pw) * bw)) + x0, 0, W);
          auto we = std::clamp<int64_t>(
              static_cast<int64_t>(std::ceil(static_cast<double>(pw + 1) * bw)) + x0, 0, W);
          double m = 0;
          bool any = false;
          for (int64_t i = hs; i < he; ++i)
            for (int64_t j = ws; j < we; ++j) {
              double v = plane[i * W + j];
              if (!any || v > m) m = v, any = true;
            }
          y.setF64(((r * C + ch) * PH + ph) * PW + pw, m);
        }
    }
  }
  return {RValue::of(y)};
}

} // namespace

void registerNnRoiOps(OpRegistry& r) {
  r.op("RoiAlign")
      .since(10)
      .attrString("coordinate_transformation_mode", "half_pixel")
      .attrString("mode", "avg")
      .attrInt("output_height", 1)
      .attrInt("output_width", 1)
      .attrInt("sampling_ratio", 0)
      .attrFloat("spatial_scale", 1.0f)
      .inputs(3, 3)
      .infer([](InferCtx& c) {
        roiInfer(c, Dim::known(c.node.attrInt("output_height")),
                 Dim::known(c.node.attrInt("output_width")));
      })
      .kernel(roiAlignKernel)
      // RoiAlign-10 had no coordinate_transformation_mode and behaved as output_half_pixel.
      .upgrade(10, 15, [](ImportCtx& c) {
        c.node.attrs["coordinate_transformation_mode"] =
            Attribute{std::string("output_half_pixel")};
      });
  r.op("MaxRoiPool")
      .attr("pooled_shape", Attribute::Kind::Ints, true)
      .attrFloat("spatial_scale", 1.0f)
      .inputs(2, 2)
      .infer([](InferCtx& c) {
        Dims ps = c.node.attrInts("pooled_shape");
        AICC_CHECK(ps.size() == 2, "attribute 'pooled_shape' has {} values, expected 2", ps.size());
        roiInfer(c, Dim::known(ps[0]), Dim::known(ps[1]));
      })
      .kernel(maxRoiPoolKernel);
}

} // namespace aicc
