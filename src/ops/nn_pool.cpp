// Pooling: MaxPool (with Indices), AveragePool, LpPool, their Global* forms, MaxUnpool, RoiAlign,
// MaxRoiPool. Windows are 1-D to 3-D (see Window in ops/nn.h); padding never contributes to a max,
// and contributes zeros to AveragePool (count_include_pad) and LpPool.
#include "ops/nn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace aicc {
namespace {

enum class PoolKind { Max, Avg, Lp };

// Taps [lo, hi) of one window dim whose positions start + t*d lie in [from, to).
void tapRange(int64_t start, int64_t k, int64_t d, int64_t from, int64_t to, int64_t& lo,
              int64_t& hi) {
  lo = start >= from ? 0 : ceilDiv(from - start, d);
  hi = to <= start ? 0 : std::min(k, ceilDiv(to - start, d));
  if (hi < lo) hi = lo;
}

struct PoolParams {
  PoolKind kind = PoolKind::Max;
  bool includePad = false;
  int64_t p = 2;
  bool colMajorIndices = false;
};

// Pools every (n, c) plane. T is the compute type (the element type itself for MaxPool).
template <typename T>
void poolImpl(const T* x, T* y, int64_t* indices, int64_t NC, const std::array<Window, 3>& g,
              const PoolParams& pp) {
  const auto &w0 = g[0], &w1 = g[1], &w2 = g[2];
  const int64_t inSize = w0.in * w1.in * w2.in;
  for (int64_t nc = 0; nc < NC; ++nc) {
    const T* xc = x + nc * inSize;
    for (int64_t oz = 0; oz < w0.out; ++oz) {
      int64_t z0 = oz * w0.stride - w0.padBegin, a0, a1, pa0, pa1;
      tapRange(z0, w0.kernel, w0.dilation, 0, w0.in, a0, a1);
      tapRange(z0, w0.kernel, w0.dilation, -w0.padBegin, w0.in + w0.padEnd, pa0, pa1);
      for (int64_t oy = 0; oy < w1.out; ++oy) {
        int64_t y0 = oy * w1.stride - w1.padBegin, b0, b1, pb0, pb1;
        tapRange(y0, w1.kernel, w1.dilation, 0, w1.in, b0, b1);
        tapRange(y0, w1.kernel, w1.dilation, -w1.padBegin, w1.in + w1.padEnd, pb0, pb1);
        for (int64_t ox = 0; ox < w2.out; ++ox, ++y) {
          int64_t x0 = ox * w2.stride - w2.padBegin, e0, e1, pe0, pe1;
          tapRange(x0, w2.kernel, w2.dilation, 0, w2.in, e0, e1);
          tapRange(x0, w2.kernel, w2.dilation, -w2.padBegin, w2.in + w2.padEnd, pe0, pe1);
          if (pp.kind == PoolKind::Max) {
            T best = std::numeric_limits<T>::lowest();
            int64_t bz = -1, by = 0, bx = 0;
            for (int64_t a = a0; a < a1; ++a)
              for (int64_t b = b0; b < b1; ++b) {
                int64_t iz = z0 + a * w0.dilation, iy = y0 + b * w1.dilation;
                const T* row = xc + (iz * w1.in + iy) * w2.in;
                for (int64_t e = e0; e < e1; ++e) {
                  int64_t ix = x0 + e * w2.dilation;
                  if (bz < 0 || row[ix] > best) best = row[ix], bz = iz, by = iy, bx = ix;
                }
              }
            *y = best;
            if (indices) {
              int64_t sp = pp.colMajorIndices ? bz + w0.in * (by + w1.in * bx)
                                              : (bz * w1.in + by) * w2.in + bx;
              *indices++ = bz < 0 ? -1 : nc * inSize + sp;
            }
            continue;
          }
          if constexpr (std::is_floating_point_v<T>) {
            T acc = 0;
            for (int64_t a = a0; a < a1; ++a)
              for (int64_t b = b0; b < b1; ++b) {
                const T* row = xc + ((z0 + a * w0.dilation) * w1.in + y0 + b * w1.dilation) * w2.in;
                for (int64_t e = e0; e < e1; ++e) {
                  T v = row[x0 + e * w2.dilation];
                  if (pp.kind == PoolKind::Avg)
                    acc += v;
                  else
                    acc += pp.p == 2 ? v * v
                                     : static_cast<T>(std::pow(std::abs(v), static_cast<T>(pp.p)));
                }
              }
            if (pp.kind == PoolKind::Avg) {
              int64_t count = pp.includePad ? (pa1 - pa0) * (pb1 - pb0) * (pe1 - pe0)
                                            : (a1 - a0) * (b1 - b0) * (e1 - e0);
              *y = count > 0 ? acc / static_cast<T>(count) : T(0);
            } else {
              *y = pp.p == 2 ? std::sqrt(acc)
                             : static_cast<T>(std::pow(acc, T(1) / static_cast<T>(pp.p)));
            }
          }
        }
      }
    }
  }
}

// Runs a pooling op over input 0 with the given windows.
std::vector<RValue> runPool(KernelCtx& c, const std::vector<Window>& ws, const PoolParams& pp) {
  const Tensor& X = c.in(0);
  auto g = windows3(ws);
  Dims outShape{X.dim(0), X.dim(1)};
  for (const auto& w : ws) outShape.push_back(w.out);
  const int64_t NC = X.dim(0) * X.dim(1);
  bool wantIdx = pp.kind == PoolKind::Max && c.wantOutput(1);
  Tensor idx(DType::I64, wantIdx ? outShape : Dims{0});
  int64_t* ip = wantIdx ? idx.data<int64_t>() : nullptr;
  Tensor y;
  bool native = pp.kind == PoolKind::Max && (X.dtype() == DType::I8 || X.dtype() == DType::U8 ||
                                             X.dtype() == DType::F32 || X.dtype() == DType::F64);
  if (native) {
    y = Tensor(X.dtype(), outShape);
    visitNative(X.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) poolImpl<T>(X.data<T>(), y.data<T>(), ip, NC, g, pp);
    });
  } else {
    AICC_CHECK(isFloat(X.dtype()), "input X has element type {}, expected a floating-point type",
               dtypeName(X.dtype()));
    Tensor x = toCompute(X);
    y = Tensor(x.dtype(), outShape);
    withComputeType(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      poolImpl<T>(x.data<T>(), y.data<T>(), ip, NC, g, pp);
    });
    y = fromCompute(y, X.dtype());
  }
  std::vector<RValue> outs{RValue::of(y)};
  if (wantIdx) outs.push_back(RValue::of(idx));
  return outs;
}

std::vector<Window> poolWindows(const KernelCtx& c, int64_t ceilMode) {
  const Tensor& X = c.in(0);
  AICC_CHECK(X.rank() >= 3, "input X has shape {}, expected [N, C, spatial...]",
             formatDims(X.shape()));
  Dims in(X.shape().begin() + 2, X.shape().end());
  Dims kernel = c.node.attrInts("kernel_shape");
  WindowAttrs a = readWindowAttrs(c.node, in.size());
  return slideDims(a, in, kernel, ceilMode != 0);
}

void poolInfer(InferCtx& c) {
  const auto& xs = c.inShape(0);
  Dim channels = xs && xs->size() >= 2 ? (*xs)[1] : Dim{};
  bool ceil = c.node.def->findAttr("ceil_mode") && c.node.attrInt("ceil_mode") != 0;
  inferSliding(c, channels, c.node.attrInts("kernel_shape"), ceil, c.inDType(0));
  if (c.node.outputs.size() > 1)
    c.setOutput(1, Type::tensor(DType::I64,
                                c.node.outputs[0] ? c.node.outputs[0]->type.shape : std::nullopt));
}

OpBuilder poolAttrs(OpBuilder b) {
  b.attrString("auto_pad", "NOTSET")
      .attr("kernel_shape", Attribute::Kind::Ints, true)
      .attr("pads", Attribute::Kind::Ints)
      .attr("strides", Attribute::Kind::Ints)
      .attr("dilations", Attribute::Kind::Ints)
      .attrInt("ceil_mode", 0)
      .inputs(1, 1)
      .infer(poolInfer);
  return b;
}

// ---- Global pooling -----------------------------------------------------------------------------

std::vector<RValue> globalPool(KernelCtx& c, PoolKind kind, int64_t p) {
  const Tensor& X = c.in(0);
  AICC_CHECK(X.rank() >= 2, "input X has shape {}, expected [N, C, spatial...]",
             formatDims(X.shape()));
  requireFloatInput(c, 0);
  Dims outShape{X.dim(0), X.dim(1)};
  outShape.resize(static_cast<size_t>(X.rank()), 1);
  const int64_t NC = X.dim(0) * X.dim(1), S = NC ? X.numel() / NC : 0;
  Tensor x = toCompute(X);
  Tensor y(x.dtype(), outShape);
  withComputeType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t nc = 0; nc < NC; ++nc, xp += S) {
      T acc = kind == PoolKind::Max ? (S ? xp[0] : T(0)) : T(0);
      for (int64_t i = 0; i < S; ++i) {
        if (kind == PoolKind::Max)
          acc = std::max(acc, xp[i]);
        else if (kind == PoolKind::Avg)
          acc += xp[i];
        else
          acc += static_cast<T>(std::pow(std::abs(xp[i]), static_cast<T>(p)));
      }
      if (kind == PoolKind::Avg) acc = S ? acc / static_cast<T>(S) : T(0);
      if (kind == PoolKind::Lp) acc = static_cast<T>(std::pow(acc, T(1) / static_cast<T>(p)));
      yp[nc] = acc;
    }
  });
  return {RValue::of(fromCompute(y, X.dtype()))};
}

void globalPoolInfer(InferCtx& c) {
  const auto& xs = c.inShape(0);
  if (!xs) return c.setTensor(0, c.inDType(0), std::nullopt);
  AICC_CHECK(xs->size() >= 2, "input X has rank {}, expected at least 2", xs->size());
  Shape out{(*xs)[0], (*xs)[1]};
  out.resize(xs->size(), Dim::known(1));
  c.setTensor(0, c.inDType(0), out);
}

// ---- MaxUnpool ----------------------------------------------------------------------------------

Dims unpoolShape(const Node& n, const Dims& xShape) {
  AICC_CHECK(xShape.size() >= 3, "input X has shape {}, expected [N, C, spatial...]",
             formatDims(xShape));
  size_t sp = xShape.size() - 2;
  Dims kernel = n.attrInts("kernel_shape");
  AICC_CHECK(kernel.size() == sp, "kernel_shape has {} values, expected {}", kernel.size(), sp);
  WindowAttrs a = readWindowAttrs(n, sp);
  Dims out{xShape[0], xShape[1]};
  for (size_t i = 0; i < sp; ++i) {
    int64_t d = (xShape[i + 2] - 1) * a.strides[i] - a.pads[i] - a.pads[i + sp] + kernel[i];
    AICC_CHECK(d >= 0, "output size {} in spatial dim {} is negative", d, i);
    out.push_back(d);
  }
  return out;
}

std::vector<RValue> maxUnpoolKernel(KernelCtx& c) {
  const Tensor& X = c.in(0);
  const Tensor& I = c.in(1);
  AICC_CHECK(I.shape() == X.shape(), "indices I have shape {}, expected X's shape {}",
             formatDims(I.shape()), formatDims(X.shape()));
  Dims inferred = unpoolShape(c.node, X.shape());
  Tensor y(X.dtype(), inferred);
  const size_t es = dtypeSize(X.dtype());
  AICC_CHECK(es > 0, "input X has unsupported element type {}", dtypeName(X.dtype()));
  auto* dst = static_cast<std::byte*>(y.raw());
  const auto* src = static_cast<const std::byte*>(X.raw());
  for (int64_t i = 0; i < X.numel(); ++i) {
    int64_t k = I.getI64(i);
    AICC_CHECK(k >= 0 && k < y.numel(), "index {} at position {} is out of range [0, {})", k, i,
               y.numel());
    std::memcpy(dst + static_cast<size_t>(k) * es, src + static_cast<size_t>(i) * es, es);
  }
  if (!c.has(2)) return {RValue::of(y)};
  Dims want = c.in(2).toI64Vector();
  if (want == inferred) return {RValue::of(y)};
  AICC_CHECK(want.size() == inferred.size(), "output_shape {} has rank {}, expected {}",
             formatDims(want), want.size(), inferred.size());
  for (size_t i = 0; i < want.size(); ++i)
    AICC_CHECK(want[i] >= inferred[i], "output_shape {} is smaller than the unpooled shape {}",
               formatDims(want), formatDims(inferred));
  // The unpooled values keep their positions; the extra area is zero.
  Tensor out(X.dtype(), want);
  Dims st = stridesOf(want), ist = stridesOf(inferred);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t rem = i, o = 0;
    for (size_t d = 0; d < inferred.size(); ++d) o += (rem / ist[d]) * st[d], rem %= ist[d];
    std::memcpy(static_cast<std::byte*>(out.raw()) + static_cast<size_t>(o) * es,
                dst + static_cast<size_t>(i) * es, es);
  }
  return {RValue::of(out)};
}

void maxUnpoolInfer(InferCtx& c) {
  const auto& xs = c.inShape(0);
  DType dt = c.inDType(0);
  if (c.has(2)) {
    if (const auto* v = c.shapeValue(2)) return c.setTensor(0, dt, Shape(v->begin(), v->end()));
    if (xs) return c.setTensor(0, dt, Shape(xs->size(), Dim{}));
    return c.setTensor(0, dt, std::nullopt);
  }
  if (!xs) return c.setTensor(0, dt, std::nullopt);
  Shape out{(*xs)[0], (*xs)[1]};
  auto sp = toDims(Shape(xs->begin() + 2, xs->end()));
  if (sp) {
    Dims probe{1, 1};
    probe.insert(probe.end(), sp->begin(), sp->end());
    Dims o = unpoolShape(c.node, probe);
    for (size_t i = 2; i < o.size(); ++i) out.push_back(Dim::known(o[i]));
  } else {
    out.resize(xs->size(), Dim{});
  }
  c.setTensor(0, dt, out);
}

} // namespace

void registerNnPoolOps(OpRegistry& r) {
  poolAttrs(r.op("MaxPool").perSample())
      .attrInt("storage_order", 0)
      .outputs(1, 2)
      .kernel([](KernelCtx& c) {
        PoolParams pp;
        pp.kind = PoolKind::Max;
        int64_t so = c.node.attrInt("storage_order");
        AICC_CHECK(so == 0 || so == 1, "attribute 'storage_order' is {}, expected 0 or 1", so);
        pp.colMajorIndices = so == 1;
        return runPool(c, poolWindows(c, c.node.attrInt("ceil_mode")), pp);
      });
  poolAttrs(r.op("AveragePool").perSample())
      .attrInt("count_include_pad", 0)
      .kernel([](KernelCtx& c) {
        PoolParams pp;
        pp.kind = PoolKind::Avg;
        pp.includePad = c.node.attrInt("count_include_pad") != 0;
        return runPool(c, poolWindows(c, c.node.attrInt("ceil_mode")), pp);
      });
  poolAttrs(r.op("LpPool").perSample()).attrInt("p", 2).kernel([](KernelCtx& c) {
    PoolParams pp;
    pp.kind = PoolKind::Lp;
    pp.p = c.node.attrInt("p");
    AICC_CHECK(pp.p >= 1, "attribute 'p' is {}, expected a positive integer", pp.p);
    return runPool(c, poolWindows(c, c.node.attrInt("ceil_mode")), pp);
  });
  r.op("GlobalMaxPool").perSample().inputs(1, 1).infer(globalPoolInfer).kernel([](KernelCtx& c) {
    return globalPool(c, PoolKind::Max, 1);
  });
  r.op("GlobalAveragePool")
      .perSample()
      .inputs(1, 1)
      .infer(globalPoolInfer)
      .kernel([](KernelCtx& c) { return globalPool(c, PoolKind::Avg, 1); });
  r.op("GlobalLpPool")
      .perSample()
      .attrInt("p", 2)
      .inputs(1, 1)
      .infer(globalPoolInfer)
      .kernel([](KernelCtx& c) {
        int64_t p = c.node.attrInt("p");
        AICC_CHECK(p >= 1, "attribute 'p' is {}, expected a positive integer", p);
        return globalPool(c, PoolKind::Lp, p);
      });
  r.op("MaxUnpool")
      .attr("kernel_shape", Attribute::Kind::Ints, true)
      .attr("pads", Attribute::Kind::Ints)
      .attr("strides", Attribute::Kind::Ints)
      .inputs(2, 3)
      .infer(maxUnpoolInfer)
      .kernel(maxUnpoolKernel);
  registerNnRoiOps(r);
}

} // namespace aicc
