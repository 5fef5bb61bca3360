// Concat, Split, Slice, Gather, GatherElements, GatherND, Compress, NonZero.
#include "ops/shape_ops.h"

#include <algorithm>
#include <climits>

namespace aicc {
namespace {

// ---- Concat ----------------------------------------------------------------------------------

void inferConcat(InferCtx& c) {
  DType dt = DType::Undefined;
  std::optional<Shape> out;
  bool rankKnown = false;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    if (dt == DType::Undefined) dt = c.inDType(i);
    const auto& s = c.inShape(i);
    if (!s) continue;
    if (!rankKnown) {
      rankKnown = true;
      out = *s;
      continue;
    }
    AICC_CHECK(s->size() == out->size(), "input {} has rank {}, input 0 rank {}", i, s->size(),
               out->size());
  }
  if (!rankKnown) return c.setTensor(0, dt, std::nullopt);
  auto rank = static_cast<int64_t>(out->size());
  auto axis = axisAttr(c.node, rank);
  Dim sum = Dim::known(0);
  std::vector<bool> unequal(out->size(), false);
  for (size_t i = 0; i < c.numInputs(); ++i) {
    const auto& s = c.inShape(i);
    if (!s) {
      sum = Dim{};
      continue;
    }
    for (size_t d = 0; d < s->size(); ++d) {
      const Dim& a = (*s)[d];
      if (d == axis) {
        sum = dimAdd(sum, a); // (static, or a symbolic sum: ir/dim_expr.h)
        continue;
      }
      Dim& o = (*out)[d];
      if (a.isStatic() && o.isStatic())
        AICC_CHECK(a.value == o.value, "input {} has shape {}, incompatible on axis {} with {}", i,
                   formatShape(*s), d, formatShape(*out));
      else if (a.isStatic() || (o.symbol.empty() && !a.symbol.empty() && !unequal[d]))
        o = a;
      else if (!o.isStatic() && !a.symbol.empty() && a.symbol != o.symbol)
        // Two expressions the algebra cannot equate (YOLOv8's 2*((H+31)/32) upsampled beside its
        // (H+15)/16 map: equal only for multiples of 32): unknown, for passes/dim_steps.h.
        o = Dim{}, unequal[d] = true;
    }
  }
  (*out)[axis] = sum;
  c.setTensor(0, dt, out);
  // Data propagation: concatenation of 1-D shape values.
  if (rank == 1) {
    std::vector<Dim> v;
    for (size_t i = 0; i < c.numInputs(); ++i) {
      const auto* sv = c.shapeValue(i);
      if (!sv) return;
      v.insert(v.end(), sv->begin(), sv->end());
    }
    c.setShapeValue(0, v);
  }
}

std::vector<RValue> kernelConcat(KernelCtx& c) {
  AICC_CHECK(c.numInputs() >= 1, "needs at least one input");
  const Tensor& x0 = c.in(0);
  auto axis = axisAttr(c.node, x0.rank());
  Dims shape = x0.shape();
  shape[axis] = 0;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    const Tensor& x = c.in(i);
    AICC_CHECK(x.rank() == x0.rank() && x.dtype() == x0.dtype(), "input {} is {}{}, input 0 {}{}",
               i, dtypeName(x.dtype()), formatDims(x.shape()), dtypeName(x0.dtype()),
               formatDims(x0.shape()));
    for (size_t d = 0; d < shape.size(); ++d)
      AICC_CHECK(d == axis || x.shape()[d] == x0.shape()[d], "input {} has shape {}, input 0 {}", i,
                 formatDims(x.shape()), formatDims(x0.shape()));
    shape[axis] += x.shape()[axis];
  }
  Tensor out(x0.dtype(), shape);
  int64_t outer = prodDims(shape, 0, axis), inner = prodDims(shape, axis + 1, shape.size());
  int64_t pos = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < c.numInputs(); ++i) {
      const Tensor& x = c.in(i);
      int64_t block = x.shape()[axis] * inner;
      copyElems(x, o * block, out, pos, block);
      pos += block;
    }
  return {RValue::of(out)};
}

// ---- Split -----------------------------------------------------------------------------------

// Sizes of the parts when no `split` input is given (opset 18: the last part may be smaller).
std::vector<int64_t> equalSplit(int64_t dim, int64_t n) {
  AICC_CHECK(n >= 1, "cannot split into {} parts", n);
  int64_t part = (dim + n - 1) / n;
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::clamp<int64_t>(dim - i * part, 0, part));
  return v;
}

int64_t splitParts(const Node& n) {
  return n.attrInt("num_outputs", static_cast<int64_t>(n.outputs.size()));
}

void inferSplit(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& in = c.inShape(0);
  size_t n = c.node.outputs.size();
  if (!in) {
    for (size_t i = 0; i < n; ++i) c.setTensor(i, dt, std::nullopt);
    return;
  }
  auto axis = axisAttr(c.node, static_cast<int64_t>(in->size()));
  std::optional<std::vector<int64_t>> sizes;
  if (c.has(1))
    sizes = knownInts(c, 1);
  else if ((*in)[axis].isStatic())
    sizes = equalSplit((*in)[axis].value, splitParts(c.node));
  if (sizes) {
    AICC_CHECK(sizes->size() == n, "split into {} parts but the node has {} outputs", sizes->size(),
               n);
    if ((*in)[axis].isStatic()) {
      int64_t sum = 0;
      for (int64_t s : *sizes) sum += s;
      AICC_CHECK(sum == (*in)[axis].value, "split sizes {} do not add up to dim {} of {}",
                 formatDims(*sizes), axis, formatShape(*in));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    Shape s = *in;
    s[axis] = sizes ? Dim::known((*sizes)[i]) : (n == 1 ? (*in)[axis] : Dim{});
    c.setTensor(i, dt, s);
  }
}

std::vector<RValue> kernelSplit(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto axis = axisAttr(c.node, x.rank());
  int64_t dim = x.shape()[axis];
  std::vector<int64_t> sizes =
      c.has(1) ? c.in(1).toI64Vector() : equalSplit(dim, splitParts(c.node));
  AICC_CHECK(sizes.size() == c.numOutputs(), "split into {} parts but the node has {} outputs",
             sizes.size(), c.numOutputs());
  int64_t sum = 0;
  for (int64_t s : sizes) {
    AICC_CHECK(s >= 0, "split sizes {} has a negative entry", formatDims(sizes));
    sum += s;
  }
  AICC_CHECK(sum == dim, "split sizes {} do not add up to dim {} ({})", formatDims(sizes), axis,
             dim);
  Dims st = stridesOf(x.shape());
  std::vector<RValue> outs;
  int64_t start = 0;
  for (int64_t s : sizes) {
    Dims shape = x.shape();
    shape[axis] = s;
    outs.push_back(RValue::of(stridedCopy(x, start * st[axis], shape, st)));
    start += s;
  }
  return outs;
}

// ---- Slice -----------------------------------------------------------------------------------

struct SliceDim {
  int64_t start = 0, count = 0;
};

SliceDim sliceDim(int64_t dim, int64_t start, int64_t end, int64_t step) {
  AICC_CHECK(step != 0, "slice step must not be 0");
  if (dim == 0) return {0, 0};
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, end > start ? (end - start + step - 1) / step : 0};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return {start, start > end ? (start - end - step - 1) / -step : 0};
}

struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};

SliceParams normSlice(std::vector<int64_t> starts, std::vector<int64_t> ends,
                      std::optional<std::vector<int64_t>> axes,
                      std::optional<std::vector<int64_t>> steps, int64_t rank) {
  AICC_CHECK(starts.size() == ends.size(), "starts has {} entries, ends {}", starts.size(),
             ends.size());
  SliceParams p{starts, ends, {}, {}};
  if (axes)
    p.axes = normAxes(*axes, rank);
  else
    for (size_t i = 0; i < starts.size(); ++i) p.axes.push_back(static_cast<int64_t>(i));
  for (int64_t a : p.axes)
    AICC_CHECK(a >= 0 && a < rank, "slice axis {} is out of range for rank {}", a, rank);
  p.steps = steps ? *steps : std::vector<int64_t>(starts.size(), 1);
  AICC_CHECK(p.axes.size() == starts.size() && p.steps.size() == starts.size(),
             "starts, ends, axes and steps must have the same length");
  std::vector<int64_t> sorted = p.axes;
  std::sort(sorted.begin(), sorted.end());
  AICC_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
             "axes {} has duplicates", formatDims(p.axes));
  return p;
}

void inferSlice(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, dt, std::nullopt);
  auto rank = static_cast<int64_t>(in->size());
  auto starts = knownInts(c, 1), ends = knownInts(c, 2);
  std::optional<std::vector<int64_t>> axes, steps;
  if (c.has(3) && !(axes = knownInts(c, 3))) return c.setTensor(0, dt, Shape(in->size()));
  if (c.has(4) && !(steps = knownInts(c, 4))) starts.reset(); // unknown steps: sliced dims unknown
  if (!starts || !ends) {
    Shape s = *in;
    if (axes)
      for (int64_t a : normAxes(*axes, rank)) s[static_cast<size_t>(a)] = Dim{};
    else
      s = Shape(in->size());
    return c.setTensor(0, dt, s);
  }
  SliceParams p = normSlice(*starts, *ends, axes, steps, rank);
  Shape out = *in;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    const Dim& d = (*in)[static_cast<size_t>(p.axes[i])];
    Dim& o = out[static_cast<size_t>(p.axes[i])];
    if (d.isStatic())
      o = Dim::known(sliceDim(d.value, p.starts[i], p.ends[i], p.steps[i]).count);
    else if (!(p.starts[i] == 0 && p.steps[i] == 1 && p.ends[i] >= INT_MAX))
      o = Dim{};
  }
  c.setTensor(0, dt, out);
  // Data propagation: slicing a 1-D shape value.
  if (rank == 1 && out[0].isStatic())
    if (const auto* sv = c.shapeValue(0)) {
      SliceDim sd = sliceDim(static_cast<int64_t>(sv->size()), p.starts[0], p.ends[0], p.steps[0]);
      std::vector<Dim> v;
      for (int64_t i = 0; i < sd.count; ++i)
        v.push_back((*sv)[static_cast<size_t>(sd.start + i * p.steps[0])]);
      c.setShapeValue(0, v);
    }
}

std::vector<RValue> kernelSlice(KernelCtx& c) {
  const Tensor& x = c.in(0);
  std::optional<std::vector<int64_t>> axes, steps;
  if (c.has(3)) axes = c.in(3).toI64Vector();
  if (c.has(4)) steps = c.in(4).toI64Vector();
  SliceParams p = normSlice(c.in(1).toI64Vector(), c.in(2).toI64Vector(), axes, steps, x.rank());
  Dims st = stridesOf(x.shape()), shape = x.shape(), strides = st;
  int64_t base = 0;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    auto a = static_cast<size_t>(p.axes[i]);
    SliceDim sd = sliceDim(x.shape()[a], p.starts[i], p.ends[i], p.steps[i]);
    shape[a] = sd.count;
    base += sd.start * st[a];
    strides[a] = st[a] * p.steps[i];
  }
  return {RValue::of(stridedCopy(x, base, shape, strides))};
}

// ---- Gather ----------------------------------------------------------------------------------

void inferGather(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& data = c.inShape(0);
  const auto& idx = c.inShape(1);
  if (!data || !idx) return c.setTensor(0, dt, std::nullopt);
  auto axis = axisAttr(c.node, static_cast<int64_t>(data->size()));
  Shape out(data->begin(), data->begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(axis) + 1, data->end());
  c.setTensor(0, dt, out);
  // Data propagation: picking entries of a 1-D shape value.
  if (data->size() == 1 && idx->size() <= 1)
    if (const auto* sv = c.shapeValue(0))
      if (auto ii = knownInts(c, 1)) {
        std::vector<Dim> v;
        for (int64_t i : *ii)
          v.push_back(
              (*sv)[static_cast<size_t>(wrapIndex(i, static_cast<int64_t>(sv->size()), "index"))]);
        c.setShapeValue(0, v);
      }
}

std::vector<RValue> kernelGather(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  AICC_CHECK(ind.dtype() == DType::I32 || ind.dtype() == DType::I64,
             "indices must be int32 or int64, got {}", dtypeName(ind.dtype()));
  auto axis = axisAttr(c.node, x.rank());
  Dims shape(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(axis));
  shape.insert(shape.end(), ind.shape().begin(), ind.shape().end());
  shape.insert(shape.end(), x.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1,
               x.shape().end());
  Tensor out(x.dtype(), shape);
  int64_t dim = x.shape()[axis], outer = prodDims(x.shape(), 0, axis),
          inner = prodDims(x.shape(), axis + 1, x.shape().size()), n = ind.numel();
  std::vector<int64_t> idx = ind.toI64Vector();
  for (auto& i : idx) i = wrapIndex(i, dim, "index");
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      copyElems(x, (o * dim + idx[static_cast<size_t>(j)]) * inner, out, (o * n + j) * inner,
                inner);
  return {RValue::of(out)};
}

// Shared by GatherElements and ScatterElements: for each element of `ind` (same rank as data),
// the flat index into data where coordinate `axis` is replaced by the (wrapped) index value.
std::vector<int64_t> elementOffsets(const Dims& data, const Tensor& ind, size_t axis) {
  AICC_CHECK(ind.shape().size() == data.size(), "indices has rank {}, data rank {}", ind.rank(),
             data.size());
  for (size_t d = 0; d < data.size(); ++d)
    AICC_CHECK(d == axis || ind.shape()[d] <= data[d],
               "indices shape {} exceeds data shape {} on axis {}", formatDims(ind.shape()),
               formatDims(data), d);
  Dims st = stridesOf(data);
  std::vector<int64_t> offs(static_cast<size_t>(ind.numel()));
  Dims coord(data.size(), 0);
  for (int64_t i = 0; i < ind.numel(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < data.size(); ++d)
      off += (d == axis ? wrapIndex(ind.getI64(i), data[d], "index") : coord[d]) * st[d];
    offs[static_cast<size_t>(i)] = off;
    for (int64_t d = static_cast<int64_t>(data.size()) - 1; d >= 0; --d) {
      auto du = static_cast<size_t>(d);
      if (++coord[du] < ind.shape()[du]) break;
      coord[du] = 0;
    }
  }
  return offs;
}

std::vector<RValue> kernelGatherElements(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  auto axis = axisAttr(c.node, x.rank());
  auto offs = elementOffsets(x.shape(), ind, axis);
  Tensor out(x.dtype(), ind.shape());
  for (size_t i = 0; i < offs.size(); ++i) copyElems(x, offs[i], out, static_cast<int64_t>(i), 1);
  return {RValue::of(out)};
}

// ---- GatherND --------------------------------------------------------------------------------

// Offsets into `data` (in units of the inner slice) for every index tuple of `ind`, with
// `batch` leading batch dims. Returns {offsets, slice size, index tuples per batch}.
struct NdIndex {
  std::vector<int64_t> offsets; // element offset of each selected slice
  int64_t slice = 1;
  Dims outShape;
};

NdIndex ndIndex(const Dims& data, const Tensor& ind, int64_t batch) {
  auto r = static_cast<int64_t>(data.size()), q = ind.rank();
  AICC_CHECK(q >= 1, "indices must have rank >= 1");
  AICC_CHECK(batch >= 0 && batch < std::min(r, q), "batch_dims {} is out of range", batch);
  int64_t k = ind.shape().back();
  AICC_CHECK(k >= 1 && k <= r - batch, "indices last dim {} is out of range for data {}", k,
             formatDims(data));
  for (int64_t b = 0; b < batch; ++b)
    AICC_CHECK(ind.shape()[static_cast<size_t>(b)] == data[static_cast<size_t>(b)],
               "batch dim {} differs: indices {}, data {}", b, formatDims(ind.shape()),
               formatDims(data));
  auto bu = static_cast<size_t>(batch), ku = static_cast<size_t>(k);
  NdIndex res;
  res.slice = prodDims(data, bu + ku, data.size());
  res.outShape.assign(ind.shape().begin(), ind.shape().end() - 1);
  res.outShape.insert(res.outShape.end(), data.begin() + static_cast<std::ptrdiff_t>(bu + ku),
                      data.end());
  int64_t nb = prodDims(data, 0, bu);
  int64_t batchStride = prodDims(data, bu, data.size());
  int64_t tuples = ind.numel() / k, perBatch = nb ? tuples / nb : 0;
  Dims st = stridesOf(data);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (perBatch ? t / perBatch : 0) * batchStride;
    for (size_t j = 0; j < ku; ++j)
      off += wrapIndex(ind.getI64(t * k + static_cast<int64_t>(j)), data[bu + j], "index") *
             st[bu + j];
    res.offsets.push_back(off);
  }
  return res;
}

void inferGatherND(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& data = c.inShape(0);
  const auto& ind = c.inShape(1);
  if (!data || !ind || ind->empty() || !ind->back().isStatic())
    return c.setTensor(0, dt, std::nullopt);
  auto b = static_cast<size_t>(c.node.attrInt("batch_dims"));
  auto k = static_cast<size_t>(ind->back().value);
  AICC_CHECK(b + k <= data->size(), "indices last dim {} is out of range for data {}", k,
             formatShape(*data));
  Shape out(ind->begin(), ind->end() - 1);
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(b + k), data->end());
  c.setTensor(0, dt, out);
}

std::vector<RValue> kernelGatherND(KernelCtx& c) {
  const Tensor& x = c.in(0);
  NdIndex ix = ndIndex(x.shape(), c.in(1), c.node.attrInt("batch_dims"));
  Tensor out(x.dtype(), ix.outShape);
  for (size_t t = 0; t < ix.offsets.size(); ++t)
    copyElems(x, ix.offsets[t], out, static_cast<int64_t>(t) * ix.slice, ix.slice);
  return {RValue::of(out)};
}

// ---- Scatter ---------------------------------------------------------------------------------

// out[o] = reduce(out[o], upd[u]) with ONNX's reduction names.
void scatterOne(Tensor& out, int64_t o, const Tensor& upd, int64_t u, const std::string& red) {
  if (red == "none") return copyElems(upd, u, out, o, 1);
  if (isInteger(out.dtype())) {
    int64_t a = out.getI64(o), b = upd.getI64(u);
    out.setI64(o, red == "add"   ? a + b
                  : red == "mul" ? a * b
                  : red == "max" ? std::max(a, b)
                                 : std::min(a, b));
    return;
  }
  double a = out.getF64(o), b = upd.getF64(u);
  out.setF64(o, red == "add"   ? a + b
                : red == "mul" ? a * b
                : red == "max" ? std::max(a, b)
                               : std::min(a, b));
}

void checkReduction(const std::string& red) {
  AICC_CHECK(red == "none" || red == "add" || red == "mul" || red == "max" || red == "min",
             "unknown reduction '{}'", red);
}

std::vector<RValue> kernelScatterND(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& upd = c.in(2);
  std::string red = c.node.attrString("reduction");
  checkReduction(red);
  NdIndex ix = ndIndex(x.shape(), c.in(1), 0);
  AICC_CHECK(upd.shape() == ix.outShape, "updates shape {} should be {}", formatDims(upd.shape()),
             formatDims(ix.outShape));
  Tensor out = x.clone();
  for (size_t t = 0; t < ix.offsets.size(); ++t)
    for (int64_t j = 0; j < ix.slice; ++j)
      scatterOne(out, ix.offsets[t] + j, upd, static_cast<int64_t>(t) * ix.slice + j, red);
  return {RValue::of(out)};
}

std::vector<RValue> kernelScatterElements(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  const Tensor& upd = c.in(2);
  std::string red = c.node.attrString("reduction");
  checkReduction(red);
  AICC_CHECK(upd.shape() == ind.shape(), "updates shape {} differs from indices shape {}",
             formatDims(upd.shape()), formatDims(ind.shape()));
  auto axis = axisAttr(c.node, x.rank());
  auto offs = elementOffsets(x.shape(), ind, axis);
  Tensor out = x.clone();
  for (size_t i = 0; i < offs.size(); ++i)
    scatterOne(out, offs[i], upd, static_cast<int64_t>(i), red);
  return {RValue::of(out)};
}

// ---- Compress / NonZero ----------------------------------------------------------------------

std::vector<RValue> kernelCompress(KernelCtx& c) {
  Tensor x = c.in(0);
  const Tensor& cond = c.in(1);
  const Attribute* axAttr = c.node.attr("axis");
  if (!axAttr) x = x.reshaped({x.numel()});
  auto axis = axAttr ? axisAttr(c.node, x.rank()) : 0;
  int64_t dim = x.shape()[axis];
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < std::min(dim, cond.numel()); ++i)
    if (cond.getI64(i)) keep.push_back(i);
  Dims shape = x.shape();
  shape[axis] = static_cast<int64_t>(keep.size());
  Tensor out(x.dtype(), shape);
  int64_t outer = prodDims(x.shape(), 0, axis),
          inner = prodDims(x.shape(), axis + 1, x.shape().size());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < keep.size(); ++j)
      copyElems(x, (o * dim + keep[j]) * inner, out,
                (o * static_cast<int64_t>(keep.size()) + static_cast<int64_t>(j)) * inner, inner);
  return {RValue::of(out)};
}

void inferCompress(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& in = c.inShape(0);
  if (!c.node.attr("axis")) return c.setTensor(0, dt, Shape{Dim{}});
  if (!in) return c.setTensor(0, dt, std::nullopt);
  Shape s = *in;
  s[axisAttr(c.node, static_cast<int64_t>(in->size()))] = Dim{};
  c.setTensor(0, dt, s);
}

std::vector<RValue> kernelNonZero(KernelCtx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> nz;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.getF64(i) != 0) nz.push_back(i);
  auto n = static_cast<int64_t>(nz.size());
  Tensor out(DType::I64, {x.rank(), n});
  Dims st = stridesOf(x.shape());
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < x.rank(); ++d)
      out.data<int64_t>()[d * n + j] =
          (nz[static_cast<size_t>(j)] / st[static_cast<size_t>(d)]) % x.dim(d);
  return {RValue::of(out)};
}

} // namespace

void registerShapeSliceOps(OpRegistry& r) {
  r.op("Concat")
      .perSampleDims(perSampleOutsideAxis(0))
      .inputs(1, 1 << 30)
      .attr("axis", Attribute::Kind::Int, true)
      .props(kInjective)
      .infer(inferConcat)
      .kernel(kernelConcat);
  r.op("Split")
      .perSampleDims(perSampleOutsideAxis(0))
      .dataDim(dataDimAtRunTime)
      .inputs(1, 2)
      .outputs(1, 1 << 30)
      .attrInt("axis", 0)
      .attr("num_outputs", Attribute::Kind::Int)
      .props(kInjective)
      .infer(inferSplit)
      .kernel(kernelSplit)
      .upgrade(1, 12, [](ImportCtx& c) { c.attrToInput("split", 1); },
               {{"split", Attribute::Kind::Ints, std::nullopt, false}});
  r.op("Slice")
      .perSampleDims([](const Node& n, size_t dims) { // no sample dim sliced (constant `axes`)
        const Value* axes = n.hasInput(3) ? n.inputs[3] : nullptr;
        if (!axes || !axes->constant || !n.inputs[0]->type.shape) return false;
        const int64_t r = int64_t(n.inputs[0]->type.shape->size());
        for (int64_t i = 0; i < axes->constant->numel(); ++i) {
          const int64_t a = axes->constant->getI64(i);
          if ((a < 0 ? a + r : a) < int64_t(dims)) return false;
        }
        return true;
      })
      .inputs(1, 5)
      .props(kInjective)
      .infer(inferSlice)
      .dataDim(dataDimOfInput0)
      .kernel(kernelSlice)
      .upgrade(1, 9,
               [](ImportCtx& c) {
                 c.attrToInput("starts", 1);
                 c.attrToInput("ends", 2);
                 c.attrToInput("axes", 3);
               },
               {{"starts", Attribute::Kind::Ints, std::nullopt, true},
                {"ends", Attribute::Kind::Ints, std::nullopt, true},
                {"axes", Attribute::Kind::Ints, std::nullopt, false}});
  r.op("Gather")
      .perSampleDims([](const Node& n, size_t dims) { // not across samples of the data
        const Value* d = n.inputs[0];
        return perSampleOutsideAxis(0)(n, dims) ||
               (d->type.shape && !d->type.shape->empty() && d->type.shape->front().isStatic());
      })
      .inputs(2, 2)
      .attrInt("axis", 0)
      .props(kInjective)
      .infer(inferGather)
      .kernel(kernelGather);
  r.op("GatherElements")
      .since(11)
      .inputs(2, 2)
      .attrInt("axis", 0)
      .props(kInjective)
      .infer([](InferCtx& c) { c.setTensor(0, c.inDType(0), c.inShape(1)); })
      .kernel(kernelGatherElements);
  r.op("GatherND")
      .since(11)
      .inputs(2, 2)
      .attrInt("batch_dims", 0)
      .props(kInjective)
      .infer(inferGatherND)
      .kernel(kernelGatherND);
  r.op("ScatterND")
      .since(11)
      .inputs(3, 3)
      .attrString("reduction", "none")
      .infer(inferSameAsInput0)
      .kernel(kernelScatterND);
  r.op("ScatterElements")
      .since(11)
      .inputs(3, 3)
      .attrInt("axis", 0)
      .attrString("reduction", "none")
      .infer(inferSameAsInput0)
      .kernel(kernelScatterElements);
  // Scatter (opsets 9-10) is ScatterElements under its old name.
  r.op("Scatter")
      .since(9)
      .inputs(3, 3)
      .attrInt("axis", 0)
      .infer(inferSameAsInput0)
      .kernel(kernelScatterElements)
      .upgrade(9, 1 << 30, [](ImportCtx& c) {
        c.node.op = "ScatterElements";
        c.node.def = OpRegistry::instance().find("", "ScatterElements");
      });
  r.op("Compress")
      .since(9)
      .inputs(2, 2)
      .attr("axis", Attribute::Kind::Int)
      .infer(inferCompress)
      .dataDim(dataDimAlongAxis(std::nullopt))
      .kernel(kernelCompress);
  r.op("NonZero")
      .since(9)
      .inputs(1, 1)
      .infer([](InferCtx& c) {
        auto rank = inRank(c, 0);
        c.setTensor(0, DType::I64, Shape{rank ? Dim::known(*rank) : Dim{}, Dim{}});
      })
      .dataDim(dataDimAlongAxis(std::nullopt))
      .kernel(kernelNonZero);
}

} // namespace aicc
