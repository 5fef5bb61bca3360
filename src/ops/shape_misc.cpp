// Pad, CenterCropPad, OneHot, Unique, Trilu, ReverseSequence, DepthToSpace, SpaceToDepth, EyeLike.
#include "ops/shape_ops.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace aicc {
namespace {

// out[o_0..o_k] = x[t_0[o_0], .., t_k[o_k]], or `fill` when any table entry is -1. Runs of
// consecutive source indices along the last dim are copied at once.
Tensor tableGather(const Tensor& x, const Dims& outShape,
                   const std::vector<std::vector<int64_t>>& tables, const Tensor& fill) {
  Tensor out(x.dtype(), outShape);
  if (out.numel() == 0) return out;
  if (outShape.empty()) {
    copyElems(x, 0, out, 0, 1);
    return out;
  }
  size_t r = outShape.size();
  Dims st = stridesOf(x.shape());
  const auto& last = tables[r - 1];
  int64_t inner = outShape[r - 1];
  Dims idx(r, 0);
  for (int64_t o = 0; o < out.numel(); o += inner) {
    int64_t base = 0;
    bool filled = false;
    for (size_t d = 0; d + 1 < r; ++d) {
      int64_t s = tables[d][static_cast<size_t>(idx[d])];
      if (s < 0) filled = true;
      base += s * st[d];
    }
    for (int64_t j = 0; j < inner;) {
      int64_t s = last[static_cast<size_t>(j)];
      if (filled || s < 0) {
        copyElems(fill, 0, out, o + j, 1);
        ++j;
        continue;
      }
      int64_t n = 1;
      while (j + n < inner && last[static_cast<size_t>(j + n)] == s + n) ++n;
      copyElems(x, base + s, out, o + j, n);
      j += n;
    }
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d) {
      auto du = static_cast<size_t>(d);
      if (++idx[du] < outShape[du]) break;
      idx[du] = 0;
    }
  }
  return out;
}

// A one-element tensor of type `dt` holding input `i`'s first value (0 when absent).
Tensor fillOf(KernelCtx& c, size_t i, DType dt) {
  if (dt == DType::String) {
    Tensor t(dt, {});
    if (c.has(i) && c.in(i).numel() > 0 && c.in(i).dtype() == DType::String)
      t.strings()[0] = c.in(i).strings()[0];
    return t;
  }
  if (!c.has(i) || c.in(i).numel() == 0) return Tensor(dt, {});
  const Tensor& v = c.in(i);
  if (v.dtype() == dt) return v.reshaped({});
  return Tensor::scalar(dt, v.getF64(0));
}

// ---- Pad -------------------------------------------------------------------------------------

// Per-axis (begin, end) pads for a rank-`rank` input from the pads and optional axes inputs.
std::vector<std::pair<int64_t, int64_t>> padPairs(const std::vector<int64_t>& pads,
                                                  const std::optional<std::vector<int64_t>>& axesIn,
                                                  int64_t rank) {
  std::vector<int64_t> axes;
  if (axesIn)
    axes = normAxes(*axesIn, rank);
  else
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  AICC_CHECK(pads.size() == 2 * axes.size(), "pads has {} entries, expected {}", pads.size(),
             2 * axes.size());
  std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(rank), {0, 0});
  for (size_t i = 0; i < axes.size(); ++i)
    p[static_cast<size_t>(axes[i])] = {pads[i], pads[i + axes.size()]};
  return p;
}

void inferPad(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, dt, std::nullopt);
  auto pads = knownInts(c, 1);
  std::optional<std::vector<int64_t>> axes;
  if (c.has(3) && !(axes = knownInts(c, 3))) pads.reset();
  if (!pads) return c.setTensor(0, dt, Shape(in->size()));
  auto p = padPairs(*pads, axes, static_cast<int64_t>(in->size()));
  Shape out = *in;
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t add = p[d].first + p[d].second;
    if (out[d].isStatic()) {
      AICC_CHECK(out[d].value + add >= 0, "pads {} make dim {} of {} negative", formatDims(*pads),
                 d, formatShape(*in));
      out[d] = Dim::known(out[d].value + add);
    } else if (add != 0) {
      out[d] = dimAdd(out[d], Dim::known(add)); // (unknown when it could be negative)
    }
  }
  c.setTensor(0, dt, out);
}

int64_t padSource(int64_t c, int64_t n, const std::string& mode) {
  if (c >= 0 && c < n) return c;
  if (mode == "constant") return -1;
  AICC_CHECK(n > 0, "cannot pad an empty dim in '{}' mode", mode);
  if (mode == "edge") return std::clamp<int64_t>(c, 0, n - 1);
  if (mode == "wrap") return ((c % n) + n) % n;
  if (n == 1) return 0; // reflect
  int64_t period = 2 * (n - 1);
  c = ((c % period) + period) % period;
  return c < n ? c : period - c;
}

std::vector<RValue> kernelPad(KernelCtx& c) {
  const Tensor& x = c.in(0);
  std::string mode = c.node.attrString("mode");
  AICC_CHECK(mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap",
             "unknown mode '{}'", mode);
  std::optional<std::vector<int64_t>> axes;
  if (c.has(3)) axes = c.in(3).toI64Vector();
  auto p = padPairs(c.in(1).toI64Vector(), axes, x.rank());
  Dims shape = x.shape();
  std::vector<std::vector<int64_t>> tables(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    shape[d] += p[d].first + p[d].second;
    AICC_CHECK(shape[d] >= 0, "pads make dim {} of {} negative", d, formatDims(x.shape()));
    for (int64_t o = 0; o < shape[d]; ++o)
      tables[d].push_back(padSource(o - p[d].first, x.shape()[d], mode));
  }
  return {RValue::of(tableGather(x, shape, tables, fillOf(c, 2, x.dtype())))};
}

void upgradePad(ImportCtx& c) {
  if (c.node.attrs.count("paddings")) {
    c.node.attrs["pads"] = c.node.attrs["paddings"];
    c.node.attrs.erase("paddings");
  }
  c.attrToInput("pads", 1);
  if (c.node.attrs.count("value")) {
    float v = std::get<float>(c.node.attrs["value"].v);
    c.node.attrs.erase("value");
    DType dt = c.node.inputs[0]->type.isTensor() ? c.node.inputs[0]->type.dtype : DType::Undefined;
    if (dt == DType::Undefined || dt == DType::String) dt = DType::F32;
    if (c.node.inputs.size() < 3) c.node.inputs.resize(3, nullptr);
    c.node.inputs[2] = c.constant(Tensor::scalar(dt, v), "value");
  }
}

// ---- CenterCropPad ---------------------------------------------------------------------------

std::vector<int64_t> cropAxes(const Node& n, int64_t rank, size_t count) {
  std::vector<int64_t> axes = n.attrInts("axes", {});
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  AICC_CHECK(axes.size() == count, "shape has {} entries for {} axes", count, axes.size());
  return normAxes(axes, rank);
}

void inferCenterCropPad(InferCtx& c) {
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, c.inDType(0), std::nullopt);
  Shape out = *in;
  auto sizes = knownInts(c, 1);
  auto len = inLength1D(c, 1);
  if (!sizes && !len) return c.setTensor(0, c.inDType(0), Shape(in->size()));
  auto axes = cropAxes(c.node, static_cast<int64_t>(in->size()),
                       sizes ? sizes->size() : static_cast<size_t>(*len));
  for (size_t i = 0; i < axes.size(); ++i)
    out[static_cast<size_t>(axes[i])] = sizes ? Dim::known((*sizes)[i]) : Dim{};
  c.setTensor(0, c.inDType(0), out);
}

std::vector<RValue> kernelCenterCropPad(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto sizes = c.in(1).toI64Vector();
  auto axes = cropAxes(c.node, x.rank(), sizes.size());
  Dims shape = x.shape();
  std::vector<std::vector<int64_t>> tables(shape.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    AICC_CHECK(sizes[i] >= 0, "shape {} has a negative entry", formatDims(sizes));
    shape[static_cast<size_t>(axes[i])] = sizes[i];
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t n = x.shape()[d], t = shape[d];
    int64_t off = t <= n ? (n - t) / 2 : -((t - n) / 2); // source = o + off
    for (int64_t o = 0; o < t; ++o) tables[d].push_back(o + off >= 0 && o + off < n ? o + off : -1);
  }
  return {RValue::of(tableGather(x, shape, tables, Tensor(x.dtype(), {})))};
}

// ---- OneHot ----------------------------------------------------------------------------------

void inferOneHot(InferCtx& c) {
  DType dt = c.inDType(2);
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, dt, std::nullopt);
  auto r = static_cast<int64_t>(in->size()) + 1;
  int64_t axis = c.node.attrInt("axis");
  if (axis < 0) axis += r;
  AICC_CHECK(axis >= 0 && axis < r, "axis {} is out of range for rank {}", c.node.attrInt("axis"),
             r);
  Shape out = *in;
  Dim depth{};
  if (const Tensor* d = c.constInput(1);
      d && d->numel() == 1 && d->getF64(0) >= 1 && d->getF64(0) < 1e12)
    depth = Dim::known(static_cast<int64_t>(d->getF64(0)));
  out.insert(out.begin() + axis, depth);
  c.setTensor(0, dt, out);
}

std::vector<RValue> kernelOneHot(KernelCtx& c) {
  const Tensor& ind = c.in(0);
  const Tensor& vals = c.in(2);
  AICC_CHECK(c.in(1).numel() == 1, "depth must hold one value");
  AICC_CHECK(vals.numel() == 2, "values must hold 2 elements, has {}", vals.numel());
  double depthF = c.in(1).getF64(0);
  AICC_CHECK(std::isfinite(depthF) && depthF < 1e12, "depth {} is invalid", depthF);
  auto depth = static_cast<int64_t>(depthF);
  AICC_CHECK(depth >= 1, "depth {} must be positive", depth);
  int64_t r = ind.rank() + 1, axis = c.node.attrInt("axis");
  if (axis < 0) axis += r;
  AICC_CHECK(axis >= 0 && axis < r, "axis {} is out of range for rank {}", c.node.attrInt("axis"),
             r);
  Dims shape = ind.shape();
  shape.insert(shape.begin() + axis, depth);
  Tensor out(vals.dtype(), shape);
  int64_t outer = prodDims(ind.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = prodDims(ind.shape(), static_cast<size_t>(axis), ind.shape().size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < depth; ++k)
      for (int64_t i = 0; i < inner; ++i) {
        double f = ind.getF64(o * inner + i);
        int64_t v = std::isfinite(f) && std::fabs(f) < 1e15 ? static_cast<int64_t>(f) : -depth - 1;
        if (v < 0) v += depth;
        copyElems(vals, v == k ? 1 : 0, out, (o * depth + k) * inner + i, 1);
      }
  return {RValue::of(out)};
}

// ---- Unique ----------------------------------------------------------------------------------

std::vector<RValue> kernelUnique(KernelCtx& c) {
  Tensor x = c.in(0);
  const Attribute* axAttr = c.node.attr("axis");
  if (!axAttr) x = x.reshaped({x.numel()});
  auto axis = axAttr ? axisAttr(c.node, x.rank()) : 0;
  int64_t n = x.shape()[axis], outer = prodDims(x.shape(), 0, axis),
          inner = prodDims(x.shape(), axis + 1, x.shape().size());
  bool str = x.dtype() == DType::String;
  // Lexicographic comparison of slices a and b along the axis.
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t ia = (o * n + a) * inner + i, ib = (o * n + b) * inner + i;
        if (str) {
          int cmp = x.strings()[ia].compare(x.strings()[ib]);
          if (cmp != 0) return cmp < 0;
        } else {
          double va = x.getF64(ia), vb = x.getF64(ib);
          if (va != vb) return va < vb;
        }
      }
    return false;
  };
  std::map<int64_t, int64_t, decltype(less)> firstOf(less); // slice -> first occurrence
  std::vector<int64_t> order, inverseFirst(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto [it, inserted] = firstOf.emplace(i, i);
    if (inserted) order.push_back(i);
    inverseFirst[static_cast<size_t>(i)] = it->second;
  }
  if (c.node.attrInt("sorted")) {
    order.clear();
    for (const auto& [k, first] : firstOf) order.push_back(first);
  }
  auto u = static_cast<int64_t>(order.size());
  std::map<int64_t, int64_t> pos; // first occurrence -> output position
  for (int64_t j = 0; j < u; ++j) pos[order[static_cast<size_t>(j)]] = j;
  Dims shape = x.shape();
  shape[axis] = u;
  Tensor y(x.dtype(), shape), indices(DType::I64, {u}), inverse(DType::I64, {n}),
      counts(DType::I64, {u});
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < u; ++j)
      copyElems(x, (o * n + order[static_cast<size_t>(j)]) * inner, y, (o * u + j) * inner, inner);
  for (int64_t j = 0; j < u; ++j) indices.data<int64_t>()[j] = order[static_cast<size_t>(j)];
  for (int64_t i = 0; i < n; ++i) {
    int64_t p = pos[inverseFirst[static_cast<size_t>(i)]];
    inverse.data<int64_t>()[i] = p;
    counts.data<int64_t>()[p] += 1;
  }
  return {RValue::of(y), RValue::of(indices), RValue::of(inverse), RValue::of(counts)};
}

void inferUnique(InferCtx& c) {
  const auto& in = c.inShape(0);
  DType dt = c.inDType(0);
  Dim n{};
  if (!c.node.attr("axis")) {
    c.setTensor(0, dt, Shape{Dim{}});
    if (in) {
      n = Dim::known(1);
      for (const Dim& d : *in) n = mulDim(n, d);
    }
  } else if (in) {
    auto axis = axisAttr(c.node, static_cast<int64_t>(in->size()));
    Shape s = *in;
    s[axis] = Dim{};
    n = (*in)[axis];
    c.setTensor(0, dt, s);
  } else
    c.setTensor(0, dt, std::nullopt);
  c.setTensor(1, DType::I64, Shape{Dim{}});
  c.setTensor(2, DType::I64, Shape{n});
  c.setTensor(3, DType::I64, Shape{Dim{}});
}

// ---- Trilu / ReverseSequence / EyeLike -------------------------------------------------------

std::vector<RValue> kernelTrilu(KernelCtx& c) {
  const Tensor& x = c.in(0);
  AICC_CHECK(x.rank() >= 2, "input must have rank >= 2, has {}", x.rank());
  AICC_CHECK(!c.has(1) || c.in(1).numel() == 1, "k must hold one value");
  int64_t k = c.has(1) ? c.in(1).getI64(0) : 0;
  bool upper = c.node.attrInt("upper") != 0;
  int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  Tensor out(x.dtype(), x.shape());
  for (int64_t b = 0; b < x.numel() / std::max<int64_t>(rows * cols, 1); ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        int64_t off = (b * rows + i) * cols + j;
        if (keep) copyElems(x, off, out, off, 1);
      }
  return {RValue::of(out)};
}

std::vector<RValue> kernelReverseSequence(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto lens = c.in(1).toI64Vector();
  AICC_CHECK(x.rank() >= 2, "input must have rank >= 2");
  auto ta = static_cast<size_t>(normAxis(c.node.attrInt("time_axis"), x.rank()));
  auto ba = static_cast<size_t>(normAxis(c.node.attrInt("batch_axis"), x.rank()));
  AICC_CHECK(ta != ba && ta <= 1 && ba <= 1, "time_axis and batch_axis must be 0 and 1");
  AICC_CHECK(static_cast<int64_t>(lens.size()) == x.shape()[ba],
             "sequence_lens has {} entries for batch {}", lens.size(), x.shape()[ba]);
  int64_t T = x.shape()[ta];
  for (int64_t l : lens)
    AICC_CHECK(l >= 0 && l <= T, "sequence length {} is out of range [0, {}]", l, T);
  Tensor out = x.clone();
  Dims st = stridesOf(x.shape());
  int64_t inner = prodDims(x.shape(), 2, x.shape().size());
  for (size_t b = 0; b < lens.size(); ++b)
    for (int64_t t = 0; t < lens[b]; ++t) {
      int64_t src = static_cast<int64_t>(b) * st[ba] + (lens[b] - 1 - t) * st[ta];
      int64_t dst = static_cast<int64_t>(b) * st[ba] + t * st[ta];
      copyElems(x, src, out, dst, inner);
    }
  return {RValue::of(out)};
}

DType eyeDType(const Node& n, DType in) {
  const Attribute* a = n.attr("dtype");
  if (!a) return in;
  auto dt = dtypeFromOnnx(static_cast<int32_t>(std::get<int64_t>(a->v)));
  AICC_CHECK(dt, "attribute 'dtype' has unknown element type {}", std::get<int64_t>(a->v));
  return *dt;
}

std::vector<RValue> kernelEyeLike(KernelCtx& c) {
  const Tensor& x = c.in(0);
  AICC_CHECK(x.rank() == 2, "input must be 2-D, is {}", formatDims(x.shape()));
  Tensor out(eyeDType(c.node, x.dtype()), x.shape());
  int64_t k = c.node.attrInt("k");
  for (int64_t i = 0; i < x.dim(0); ++i)
    if (i + k >= 0 && i + k < x.dim(1)) out.setF64(i * x.dim(1) + i + k, 1.0);
  return {RValue::of(out)};
}

// ---- DepthToSpace / SpaceToDepth -------------------------------------------------------------

// Copies x viewed as `view` (a reshape of x), transposed by `perm`, reshaped to `outShape`.
Tensor permuteView(const Tensor& x, const Dims& view, const std::vector<size_t>& perm,
                   const Dims& outShape) {
  Dims st = stridesOf(view), shape, strides;
  for (size_t p : perm) {
    shape.push_back(view[p]);
    strides.push_back(st[p]);
  }
  return stridedCopy(x, 0, shape, strides).reshaped(outShape);
}

std::vector<RValue> kernelDepthToSpace(KernelCtx& c) {
  const Tensor& x = c.in(0);
  AICC_CHECK(x.rank() == 4, "input must be 4-D, is {}", formatDims(x.shape()));
  int64_t b = c.node.attrInt("blocksize"), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  AICC_CHECK(b > 0 && C % (b * b) == 0, "channels {} not divisible by blocksize^2 ({})", C, b * b);
  Dims out{N, C / (b * b), H * b, W * b};
  if (c.node.attrString("mode") == "CRD")
    return {RValue::of(permuteView(x, {N, C / (b * b), b, b, H, W}, {0, 1, 4, 2, 5, 3}, out))};
  AICC_CHECK(c.node.attrString("mode") == "DCR", "unknown mode '{}'", c.node.attrString("mode"));
  return {RValue::of(permuteView(x, {N, b, b, C / (b * b), H, W}, {0, 3, 4, 1, 5, 2}, out))};
}

std::vector<RValue> kernelSpaceToDepth(KernelCtx& c) {
  const Tensor& x = c.in(0);
  AICC_CHECK(x.rank() == 4, "input must be 4-D, is {}", formatDims(x.shape()));
  int64_t b = c.node.attrInt("blocksize"), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  AICC_CHECK(b > 0 && H % b == 0 && W % b == 0, "spatial dims {} not divisible by blocksize {}",
             formatDims(x.shape()), b);
  return {RValue::of(permuteView(x, {N, C, H / b, b, W / b, b}, {0, 3, 5, 1, 2, 4},
                                 {N, C * b * b, H / b, W / b}))};
}

void inferBlocks(InferCtx& c, bool toSpace) {
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, c.inDType(0), Shape(4));
  AICC_CHECK(in->size() == 4, "input must be 4-D, is {}", formatShape(*in));
  int64_t b = c.node.attrInt("blocksize");
  AICC_CHECK(b > 0, "blocksize {} must be positive", b);
  Shape out = *in;
  auto div = [&](const Dim& d) {
    if (!d.isStatic()) { // a symbolic dim that is a multiple of the block (2*H / 2 = H)
      const auto e = dimExpr(d);
      const auto q = e ? e->exactDiv(DimExpr::constant(toSpace ? b * b : b)) : std::nullopt;
      return q ? dimOf(*q) : Dim{};
    }
    AICC_CHECK(d.value % (toSpace ? b * b : b) == 0, "dim {} not divisible by the block", d.value);
    return Dim::known(d.value / (toSpace ? b * b : b));
  };
  if (toSpace) {
    out[1] = div((*in)[1]);
    out[2] = mulDim((*in)[2], Dim::known(b));
    out[3] = mulDim((*in)[3], Dim::known(b));
  } else {
    out[1] = mulDim((*in)[1], Dim::known(b * b));
    out[2] = div((*in)[2]);
    out[3] = div((*in)[3]);
  }
  c.setTensor(0, c.inDType(0), out);
}

} // namespace

void registerShapeMiscOps(OpRegistry& r) {
  r.op("Pad")
      .perSampleDims(perSampleAnyDims)
      .dataDim(dataDimAtRunTime)
      .inputs(1, 4)
      .attrString("mode", "constant")
      .props(kInjective)
      .infer(inferPad)
      .kernel(kernelPad)
      .upgrade(1, 10, upgradePad,
               {{"pads", Attribute::Kind::Ints, std::nullopt, false},
                {"paddings", Attribute::Kind::Ints, std::nullopt, false},
                {"value", Attribute::Kind::Float, std::nullopt, false}});
  r.op("CenterCropPad")
      .since(18)
      .inputs(2, 2)
      .attr("axes", Attribute::Kind::Ints)
      .infer(inferCenterCropPad)
      .kernel(kernelCenterCropPad);
  r.op("OneHot").since(9).inputs(3, 3).attrInt("axis", -1).infer(inferOneHot).kernel(kernelOneHot);
  r.op("Unique")
      .since(11)
      .inputs(1, 1)
      .outputs(1, 4)
      .attr("axis", Attribute::Kind::Int)
      .attrInt("sorted", 1)
      .infer(inferUnique)
      .dataDim(dataDimAlongAxis(std::nullopt))
      .kernel(kernelUnique);
  r.op("Trilu")
      .since(14)
      // (each matrix of the last two dims alone: the leading dims are samples)
      .perSampleDims([](const Node& n, size_t dims) {
        const Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
        return x && x->type.isTensor() && x->type.shape && x->type.shape->size() >= dims + 2;
      })
      .inputs(1, 2)
      .attrInt("upper", 1)
      .infer(inferSameAsInput0)
      .kernel(kernelTrilu);
  r.op("ReverseSequence")
      .since(10)
      .inputs(2, 2)
      .attrInt("time_axis", 0)
      .attrInt("batch_axis", 1)
      .infer(inferSameAsInput0)
      .kernel(kernelReverseSequence);
  r.op("EyeLike")
      .since(9)
      .inputs(1, 1)
      .attr("dtype", Attribute::Kind::Int)
      .attrInt("k", 0)
      .infer([](InferCtx& c) { c.setTensor(0, eyeDType(c.node, c.inDType(0)), c.inShape(0)); })
      .kernel(kernelEyeLike);
  r.op("DepthToSpace")
      .perSample()
      .inputs(1, 1)
      .attr("blocksize", Attribute::Kind::Int, true)
      .attrString("mode", "DCR")
      .props(kInjective)
      .infer([](InferCtx& c) { inferBlocks(c, true); })
      .kernel(kernelDepthToSpace);
  r.op("SpaceToDepth")
      .perSample()
      .inputs(1, 1)
      .attr("blocksize", Attribute::Kind::Int, true)
      .props(kInjective)
      .infer([](InferCtx& c) { inferBlocks(c, false); })
      .kernel(kernelSpaceToDepth);
}

} // namespace aicc
