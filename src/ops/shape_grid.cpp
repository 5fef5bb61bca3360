// GridSample and Col2Im.
#include "ops/shape_ops.h"

#include <cmath>

namespace aicc {
namespace {

// ---- GridSample ------------------------------------------------------------------------------

// Reflects x into [lo, hi] by bouncing off the nearer border until inside.
double reflectInto(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    auto n = static_cast<int64_t>(dx / rng);
    double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    auto n = static_cast<int64_t>(dx / rng);
    double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

struct GridTap {
  int64_t index; // -1 = outside (zero padding)
  double weight;
};

std::vector<RValue> kernelGridSample(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& grid = c.in(1);
  std::string mode = c.node.attrString("mode"), pad = c.node.attrString("padding_mode");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  AICC_CHECK(mode == "linear" || mode == "nearest" || mode == "cubic", "unknown mode '{}'", mode);
  AICC_CHECK(pad == "zeros" || pad == "border" || pad == "reflection", "unknown padding_mode '{}'",
             pad);
  bool align = c.node.attrInt("align_corners") != 0;
  int64_t r = x.rank() - 2;
  AICC_CHECK(r >= 1, "input must have rank >= 3, is {}", formatDims(x.shape()));
  AICC_CHECK(grid.rank() == r + 2 && grid.shape().back() == r && grid.dim(0) == x.dim(0),
             "grid shape {} does not match input {}", formatDims(grid.shape()),
             formatDims(x.shape()));
  int64_t N = x.dim(0), C = x.dim(1);
  Dims outShape{N, C};
  outShape.insert(outShape.end(), grid.shape().begin() + 1, grid.shape().end() - 1);
  Dims spatial(x.shape().begin() + 2, x.shape().end());
  int64_t inPlane = prodDims(spatial, 0, spatial.size());
  int64_t P = prodDims(outShape, 2, outShape.size());
  Dims st = stridesOf(spatial);
  Tensor out(x.dtype(), outShape);
  auto ru = static_cast<size_t>(r);
  std::vector<std::vector<GridTap>> taps(ru);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p) {
      for (size_t d = 0; d < ru; ++d) {
        // grid's last dim lists (x, y, z): the innermost spatial dim first.
        double g = grid.getF64((n * P + p) * r + (r - 1 - static_cast<int64_t>(d)));
        auto len = static_cast<double>(spatial[d]);
        double v = align ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2;
        if (!(std::fabs(v) < 1e9)) v = v > 0 ? 1e9 : -1e9; // keeps index math defined (NaN too)
        if (mode == "nearest") v = std::nearbyint(v);
        double lo = align ? 0 : -0.5, hi = align ? len - 1 : len - 0.5;
        if (v < lo || v > hi) {
          if (pad == "border")
            v = std::clamp(v, 0.0, len - 1);
          else if (pad == "reflection")
            v = reflectInto(v, lo, hi);
        }
        auto& t = taps[d];
        t.clear();
        if (mode == "nearest")
          t.push_back({static_cast<int64_t>(v), 1.0});
        else {
          double f0 = std::floor(v), f = v - f0;
          auto i0 = static_cast<int64_t>(f0);
          if (mode == "linear")
            t = {{i0, 1 - f}, {i0 + 1, f}};
          else {
            const double A = -0.75;
            auto w = [&](double s) {
              s = std::fabs(s);
              return s <= 1 ? ((A + 2) * s - (A + 3)) * s * s + 1
                            : ((A * s - 5 * A) * s + 8 * A) * s - 4 * A;
            };
            t = {{i0 - 1, w(f + 1)}, {i0, w(f)}, {i0 + 1, w(1 - f)}, {i0 + 2, w(2 - f)}};
          }
        }
        for (GridTap& tp : t) {
          int64_t dim = spatial[d];
          if (tp.index >= 0 && tp.index < dim) continue;
          if (pad == "zeros")
            tp.index = -1;
          else if (pad == "border")
            tp.index = std::clamp<int64_t>(tp.index, 0, dim - 1);
          else
            tp.index = std::clamp<int64_t>(
                static_cast<int64_t>(reflectInto(static_cast<double>(tp.index), lo, hi)), 0,
                dim - 1);
        }
      }
      // All tap combinations as (offset, weight).
      std::vector<std::pair<int64_t, double>> combos{{0, 1.0}};
      for (size_t d = 0; d < ru; ++d) {
        std::vector<std::pair<int64_t, double>> next;
        for (const auto& [off, w] : combos)
          for (const GridTap& tp : taps[d])
            if (tp.index >= 0) next.push_back({off + tp.index * st[d], w * tp.weight});
        combos = std::move(next);
      }
      for (int64_t ch = 0; ch < C; ++ch) {
        int64_t base = (n * C + ch) * inPlane;
        double acc = 0;
        for (const auto& [off, w] : combos) acc += w * x.getF64(base + off);
        out.setF64((n * C + ch) * P + p, acc);
      }
    }
  return {RValue::of(out)};
}

void inferGridSample(InferCtx& c) {
  const auto& x = c.inShape(0);
  const auto& g = c.inShape(1);
  if (!x || !g || g->size() < 2) return c.setTensor(0, c.inDType(0), std::nullopt);
  Shape out{(*x)[0], (*x)[1]};
  out.insert(out.end(), g->begin() + 1, g->end() - 1);
  c.setTensor(0, c.inDType(0), out);
}

// ---- Col2Im ----------------------------------------------------------------------------------

std::vector<RValue> kernelCol2Im(KernelCtx& c) {
  const Tensor& x = c.in(0);
  Dims img = c.in(1).toI64Vector(), blk = c.in(2).toI64Vector();
  size_t r = img.size();
  AICC_CHECK(blk.size() == r && r >= 1,
             "image_shape {} and block_shape {} must have the same length", formatDims(img),
             formatDims(blk));
  AICC_CHECK(x.rank() == 3, "input must be 3-D [N, C*prod(block), L], is {}",
             formatDims(x.shape()));
  Dims dil = c.node.attrInts("dilations", Dims(r, 1)), str = c.node.attrInts("strides", Dims(r, 1)),
       pads = c.node.attrInts("pads", Dims(2 * r, 0));
  AICC_CHECK(dil.size() == r && str.size() == r && pads.size() == 2 * r,
             "dilations, strides and pads must match {} spatial dims", r);
  for (size_t d = 0; d < r; ++d)
    AICC_CHECK(blk[d] > 0 && img[d] >= 0, "image_shape {} / block_shape {} are invalid",
               formatDims(img), formatDims(blk));
  int64_t kprod = prodDims(blk, 0, r);
  AICC_CHECK(kprod > 0 && x.dim(1) % kprod == 0,
             "input dim 1 ({}) is not a multiple of prod(block_shape) {}", x.dim(1), kprod);
  int64_t N = x.dim(0), C = x.dim(1) / kprod;
  Dims blocks(r);
  for (size_t d = 0; d < r; ++d) {
    AICC_CHECK(str[d] > 0 && dil[d] > 0, "strides and dilations must be positive");
    blocks[d] = (img[d] + pads[d] + pads[d + r] - dil[d] * (blk[d] - 1) - 1) / str[d] + 1;
    AICC_CHECK(blocks[d] >= 0, "block_shape does not fit the image");
  }
  int64_t L = prodDims(blocks, 0, r);
  AICC_CHECK(x.dim(2) == L, "input has {} blocks, image and block shapes give {}", x.dim(2), L);
  Dims outShape{N, C};
  outShape.insert(outShape.end(), img.begin(), img.end());
  Tensor out(x.dtype(), outShape);
  std::vector<double> acc(static_cast<size_t>(out.numel()), 0.0);
  Dims ist = stridesOf(img), kst = stridesOf(blk), lst = stridesOf(blocks);
  int64_t plane = prodDims(img, 0, r);
  for (int64_t k = 0; k < kprod; ++k)
    for (int64_t l = 0; l < L; ++l) {
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < r && inside; ++d) {
        int64_t kd = (k / kst[d]) % blk[d], ld = (l / lst[d]) % blocks[d];
        int64_t pos = ld * str[d] - pads[d] + kd * dil[d];
        inside = pos >= 0 && pos < img[d];
        off += pos * ist[d];
      }
      if (!inside) continue;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t ch = 0; ch < C; ++ch)
          acc[static_cast<size_t>((n * C + ch) * plane + off)] +=
              x.getF64((n * x.dim(1) + ch * kprod + k) * L + l);
    }
  for (int64_t i = 0; i < out.numel(); ++i) out.setF64(i, acc[static_cast<size_t>(i)]);
  return {RValue::of(out)};
}

void inferCol2Im(InferCtx& c) {
  const auto& x = c.inShape(0);
  auto img = knownInts(c, 1), blk = knownInts(c, 2);
  auto len = inLength1D(c, 1);
  if (!x || x->size() != 3 || (!img && !len)) return c.setTensor(0, c.inDType(0), std::nullopt);
  Dim C{};
  if (blk && (*x)[1].isStatic()) {
    int64_t k = prodDims(*blk, 0, blk->size());
    if (k > 0) C = Dim::known((*x)[1].value / k);
  }
  Shape out{(*x)[0], C};
  if (img)
    for (int64_t v : *img) out.push_back(Dim::known(v));
  else
    out.resize(2 + static_cast<size_t>(*len));
  c.setTensor(0, c.inDType(0), out);
}

} // namespace

void registerShapeGridOps(OpRegistry& r) {
  r.op("GridSample")
      .since(16)
      .inputs(2, 2)
      .attrInt("align_corners", 0)
      .attrString("mode", "linear")
      .attrString("padding_mode", "zeros")
      .infer(inferGridSample)
      .kernel(kernelGridSample);
  r.op("Col2Im")
      .since(18)
      .inputs(3, 3)
      .attr("dilations", Attribute::Kind::Ints)
      .attr("pads", Attribute::Kind::Ints)
      .attr("strides", Attribute::Kind::Ints)
      .infer(inferCol2Im)
      .kernel(kernelCol2Im);
}

} // namespace aicc
