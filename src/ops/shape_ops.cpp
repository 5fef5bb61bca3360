// Shape ops: Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Shape, Size, Identity, Constant,
// ConstantOfShape, Expand, Tile, Range. See shape_ops.h for the rest of the family.
#include "ops/shape_ops.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace aicc {
namespace {

// ---- Reshape ---------------------------------------------------------------------------------

// Solves the single unknown output dim of a reshape from the element count, symbolically:
// symbols on both sides cancel; the rest must be static (or one leftover symbol).
Dim solveReshapeDim(const Shape& in, const Shape& out, size_t unknownAt) {
  // The input's element count over the other output dims': static, or an exact quotient of two
  // symbolic products (ir/dim_expr.h: [N,128,768] into [N,-1,64] gives 1536).
  std::optional<DimExpr> num = DimExpr::constant(1), den = DimExpr::constant(1);
  bool allStatic = true;
  try {
    for (const Dim& d : in) {
      auto e = dimExpr(d);
      if (!e) return Dim{};
      allStatic &= d.isStatic();
      num = *num * *e;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      if (i == unknownAt) continue;
      auto e = dimExpr(out[i]);
      if (!e) return Dim{};
      allStatic &= out[i].isStatic();
      den = *den * *e;
    }
  } catch (const std::exception&) { // (overflow: no such tensor)
    return Dim{};
  }
  if (den->constantValue() == 0) return Dim{};
  if (allStatic) {
    const int64_t pin = *num->constantValue(), pout = *den->constantValue();
    AICC_CHECK(pin % pout == 0, "cannot reshape {} into {}: element counts do not divide",
               formatShape(in), formatShape(out));
    return Dim::known(pin / pout);
  }
  auto q = num->exactDiv(*den);
  return q ? dimOf(*q) : Dim{};
}

void inferReshape(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& in = c.inShape(0);
  bool allowzero = c.node.attrInt("allowzero") != 0;
  if (const Tensor* t = c.constInput(1)) {
    auto v = t->toI64Vector();
    AICC_CHECK(std::count(v.begin(), v.end(), -1) <= 1, "shape {} has more than one -1",
               formatDims(v));
    for (int64_t x : v) AICC_CHECK(x >= -1, "shape {} has an invalid dim {}", formatDims(v), x);
  }
  const std::vector<Dim>* sv = c.shapeValue(1);
  if (!sv) {
    auto len = inLength1D(c, 1);
    c.setTensor(0, dt, len ? std::optional<Shape>(Shape(static_cast<size_t>(*len))) : std::nullopt);
    return;
  }
  Shape out;
  std::vector<size_t> unknown;
  for (size_t i = 0; i < sv->size(); ++i) {
    const Dim& d = (*sv)[i];
    if (d.isStatic() && d.value == 0 && !allowzero) {
      if (in) {
        AICC_CHECK(i < in->size(), "shape entry {} is 0 (copy) but the input {} has rank {}", i,
                   formatShape(*in), in->size());
        out.push_back((*in)[i]);
      } else
        out.push_back(Dim{});
      continue;
    }
    if (!d.isStatic() && d.symbol.empty()) unknown.push_back(i); // -1 or not known
    out.push_back(d.isStatic() || !d.symbol.empty() ? d : Dim{});
  }
  if (in && unknown.size() == 1) out[unknown[0]] = solveReshapeDim(*in, out, unknown[0]);
  if (in && unknown.empty()) {
    auto a = toDims(*in), b = toDims(out);
    if (a && b)
      AICC_CHECK(prodDims(*a, 0, a->size()) == prodDims(*b, 0, b->size()),
                 "cannot reshape {} into {}", formatShape(*in), formatShape(out));
  }
  c.setTensor(0, dt, out);
  if (const auto* v0 = c.shapeValue(0); v0 && out.size() <= 1 && !out.empty() && out[0].isStatic())
    c.setShapeValue(0, *v0);
}

std::vector<RValue> kernelReshape(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto shape = c.in(1).toI64Vector();
  bool allowzero = c.node.attrInt("allowzero") != 0;
  Dims out;
  int64_t neg = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t v = shape[i];
    if (v == -1) {
      AICC_CHECK(neg < 0, "shape {} has more than one -1", formatDims(shape));
      neg = static_cast<int64_t>(i);
      out.push_back(1);
    } else if (v == 0 && !allowzero) {
      AICC_CHECK(static_cast<int64_t>(i) < x.rank(),
                 "shape entry {} is 0 (copy) but the input has rank {}", i, x.rank());
      out.push_back(x.dim(static_cast<int64_t>(i)));
    } else {
      AICC_CHECK(v >= 0, "shape {} has an invalid dim {}", formatDims(shape), v);
      out.push_back(v);
    }
  }
  if (neg >= 0) {
    int64_t p = prodDims(out, 0, out.size());
    AICC_CHECK(p != 0 && x.numel() % p == 0, "cannot reshape {} into {}", formatDims(x.shape()),
               formatDims(shape));
    out[static_cast<size_t>(neg)] = x.numel() / p;
  }
  AICC_CHECK(checkedNumel(out) == x.numel(), "cannot reshape {} into {}", formatDims(x.shape()),
             formatDims(shape));
  return {RValue::of(x.reshaped(out))};
}

// ---- Transpose -------------------------------------------------------------------------------

std::vector<int64_t> transposePerm(const Node& n, int64_t rank) {
  std::vector<int64_t> perm = n.attrInts("perm", {});
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  AICC_CHECK(static_cast<int64_t>(perm.size()) == rank,
             "perm {} has {} entries for a rank-{} input", formatDims(perm), perm.size(), rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (auto& p : perm) {
    p = normAxis(p, rank);
    AICC_CHECK(!seen[static_cast<size_t>(p)], "perm {} is not a permutation", formatDims(perm));
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

void inferTranspose(InferCtx& c) {
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, c.inDType(0), std::nullopt);
  auto perm = transposePerm(c.node, static_cast<int64_t>(in->size()));
  Shape out;
  for (int64_t p : perm) out.push_back((*in)[static_cast<size_t>(p)]);
  c.setTensor(0, c.inDType(0), out);
}

std::vector<RValue> kernelTranspose(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto perm = transposePerm(c.node, x.rank());
  Dims st = stridesOf(x.shape()), shape, strides;
  for (int64_t p : perm) {
    shape.push_back(x.dim(p));
    strides.push_back(st[static_cast<size_t>(p)]);
  }
  return {RValue::of(stridedCopy(x, 0, shape, strides))};
}

// ---- Squeeze / Unsqueeze / Flatten -----------------------------------------------------------

void inferSqueeze(InferCtx& c) {
  const auto& in = c.inShape(0);
  DType dt = c.inDType(0);
  if (!in) return c.setTensor(0, dt, std::nullopt);
  auto r = static_cast<int64_t>(in->size());
  Shape out;
  if (c.has(1)) {
    auto axes = knownInts(c, 1);
    if (!axes) return c.setTensor(0, dt, std::nullopt);
    auto ax = normAxes(*axes, r);
    for (int64_t i = 0; i < r; ++i) {
      const Dim& d = (*in)[static_cast<size_t>(i)];
      if (std::find(ax.begin(), ax.end(), i) == ax.end())
        out.push_back(d);
      else
        AICC_CHECK(!d.isStatic() || d.value == 1, "cannot squeeze axis {} of {}", i,
                   formatShape(*in));
    }
  } else {
    for (const Dim& d : *in) {
      if (!d.isStatic()) return c.setTensor(0, dt, std::nullopt);
      if (d.value != 1) out.push_back(d);
    }
  }
  c.setTensor(0, dt, out);
  if (const auto* v = c.shapeValue(0); v && out.size() <= 1) c.setShapeValue(0, *v);
}

std::vector<RValue> kernelSqueeze(KernelCtx& c) {
  const Tensor& x = c.in(0);
  Dims out;
  if (c.has(1)) {
    auto ax = normAxes(c.in(1).toI64Vector(), x.rank());
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (std::find(ax.begin(), ax.end(), i) == ax.end())
        out.push_back(x.dim(i));
      else
        AICC_CHECK(x.dim(i) == 1, "cannot squeeze axis {} of {}", i, formatDims(x.shape()));
    }
  } else {
    for (int64_t d : x.shape())
      if (d != 1) out.push_back(d);
  }
  return {RValue::of(x.reshaped(out))};
}

// Output axes of an Unsqueeze, normalized and checked for duplicates.
std::vector<int64_t> unsqueezeAxes(std::vector<int64_t> axes, int64_t outRank) {
  axes = normAxes(axes, outRank);
  std::sort(axes.begin(), axes.end());
  AICC_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), "axes {} has duplicates",
             formatDims(axes));
  return axes;
}

void inferUnsqueeze(InferCtx& c) {
  const auto& in = c.inShape(0);
  DType dt = c.inDType(0);
  auto axes = knownInts(c, 1);
  if (!in || !axes) {
    auto len = inLength1D(c, 1);
    if (in && len)
      c.setTensor(0, dt, Shape(in->size() + static_cast<size_t>(*len)));
    else
      c.setTensor(0, dt, std::nullopt);
    return;
  }
  auto outRank = static_cast<int64_t>(in->size() + axes->size());
  auto ax = unsqueezeAxes(*axes, outRank);
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < outRank; ++i) {
    if (std::binary_search(ax.begin(), ax.end(), i))
      out.push_back(Dim::known(1));
    else
      out.push_back((*in)[j++]);
  }
  c.setTensor(0, dt, out);
  if (const auto* v = c.shapeValue(0); v && out.size() <= 1) c.setShapeValue(0, *v);
}

std::vector<RValue> kernelUnsqueeze(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto axesIn = c.in(1).toI64Vector();
  int64_t outRank = x.rank() + static_cast<int64_t>(axesIn.size());
  auto ax = unsqueezeAxes(axesIn, outRank);
  Dims out;
  int64_t j = 0;
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(std::binary_search(ax.begin(), ax.end(), i) ? 1 : x.dim(j++));
  return {RValue::of(x.reshaped(out))};
}

int64_t flattenAxis(const Node& n, int64_t rank) {
  int64_t a = n.attrInt("axis");
  if (a < 0) a += rank;
  AICC_CHECK(a >= 0 && a <= rank, "axis {} is out of range for rank {}", n.attrInt("axis"), rank);
  return a;
}

void inferFlatten(InferCtx& c) {
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, c.inDType(0), Shape(2));
  int64_t a = flattenAxis(c.node, static_cast<int64_t>(in->size()));
  Dim d0 = Dim::known(1), d1 = Dim::known(1);
  for (size_t i = 0; i < in->size(); ++i) {
    Dim& d = static_cast<int64_t>(i) < a ? d0 : d1;
    d = mulDim(d, (*in)[i]);
  }
  c.setTensor(0, c.inDType(0), Shape{d0, d1});
}

std::vector<RValue> kernelFlatten(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto a = static_cast<size_t>(flattenAxis(c.node, x.rank()));
  return {RValue::of(
      x.reshaped({prodDims(x.shape(), 0, a), prodDims(x.shape(), a, x.shape().size())}))};
}

// ---- Shape / Size / Identity / Constant ------------------------------------------------------

void inferShape(InferCtx& c) {
  const auto& in = c.inShape(0);
  if (!in) return c.setTensor(0, DType::I64, Shape{Dim{}});
  auto [s, e] = shapeRange(c.node, static_cast<int64_t>(in->size()));
  std::vector<Dim> v(in->begin() + s, in->begin() + e);
  c.setTensor(0, DType::I64, Shape{Dim::known(e - s)});
  c.setShapeValue(0, v);
}

std::vector<RValue> kernelShape(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto [s, e] = shapeRange(c.node, x.rank());
  std::vector<int64_t> v(x.shape().begin() + s, x.shape().begin() + e);
  return {RValue::of(Tensor::fromI64(v, {e - s}))};
}

void inferSize(InferCtx& c) {
  c.setTensor(0, DType::I64, Shape{});
  if (const auto& in = c.inShape(0)) {
    Dim n = Dim::known(1);
    for (const Dim& d : *in) n = mulDim(n, d);
    c.setShapeValue(0, {n});
  }
}

void inferConstant(InferCtx& c) {
  Tensor t = constantValue(c.node);
  c.setTensor(0, t.dtype(), staticShape(t.shape()));
  if (isInteger(t.dtype()) && t.rank() <= 1 && t.numel() <= 64) {
    std::vector<Dim> v;
    for (int64_t x : t.toI64Vector()) v.push_back(Dim::known(x));
    c.setShapeValue(0, v);
  }
}

// ---- ConstantOfShape / Expand / Tile / Range -------------------------------------------------

Tensor fillValue(const Node& n) {
  const Attribute* a = n.attr("value");
  if (!a) return Tensor::scalar(DType::F32, 0.0);
  const Tensor& t = std::get<Tensor>(a->v);
  AICC_CHECK(t.numel() == 1, "attribute 'value' must hold one element, has {}", t.numel());
  return t;
}

// A shape-like input's known contents as a Shape (unknown entries stay unknown).
std::optional<Shape> shapeFromInput(InferCtx& c, size_t i) {
  if (const auto* sv = c.shapeValue(i)) {
    Shape s;
    for (const Dim& d : *sv) s.push_back(d.isStatic() || !d.symbol.empty() ? d : Dim{});
    return s;
  }
  if (auto len = inLength1D(c, i)) return Shape(static_cast<size_t>(*len));
  return std::nullopt;
}

void inferConstantOfShape(InferCtx& c) {
  Tensor v = fillValue(c.node);
  auto s = shapeFromInput(c, 0);
  c.setTensor(0, v.dtype(), s);
  if (s && s->size() == 1 && (*s)[0].isStatic() && (*s)[0].value <= 64 && isInteger(v.dtype()))
    c.setShapeValue(0,
                    std::vector<Dim>(static_cast<size_t>((*s)[0].value), Dim::known(v.getI64(0))));
}

std::vector<RValue> kernelConstantOfShape(KernelCtx& c) {
  Tensor v = fillValue(c.node);
  Dims shape = c.in(0).toI64Vector();
  for (int64_t d : shape) AICC_CHECK(d >= 0, "shape {} has a negative dim", formatDims(shape));
  Tensor out(v.dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) copyElems(v, 0, out, i, 1);
  return {RValue::of(out)};
}

void inferExpand(InferCtx& c) {
  auto target = shapeFromInput(c, 1);
  const auto& in = c.inShape(0);
  c.setTensor(0, c.inDType(0),
              in && target ? std::optional<Shape>(broadcastShape(*in, *target)) : std::nullopt);
}

// Broadcasts `x` to `shape` (which must already be the broadcast result).
Tensor broadcastTo(const Tensor& x, const Dims& shape) {
  Dims st = stridesOf(x.shape()), strides(shape.size(), 0);
  size_t off = shape.size() - x.shape().size();
  for (size_t i = 0; i < x.shape().size(); ++i) strides[off + i] = x.shape()[i] == 1 ? 0 : st[i];
  return stridedCopy(x, 0, shape, strides);
}

std::vector<RValue> kernelExpand(KernelCtx& c) {
  const Tensor& x = c.in(0);
  Dims shape = broadcastDims(x.shape(), c.in(1).toI64Vector());
  return {RValue::of(broadcastTo(x, shape))};
}

void inferTile(InferCtx& c) {
  const auto& in = c.inShape(0);
  auto reps = knownInts(c, 1);
  if (!in) return c.setTensor(0, c.inDType(0), std::nullopt);
  Shape out(in->size());
  if (reps) {
    AICC_CHECK(reps->size() == in->size(), "repeats has {} entries for a rank-{} input",
               reps->size(), in->size());
    for (size_t i = 0; i < in->size(); ++i) out[i] = mulDim((*in)[i], Dim::known((*reps)[i]));
  }
  c.setTensor(0, c.inDType(0), out);
}

std::vector<RValue> kernelTile(KernelCtx& c) {
  const Tensor& x = c.in(0);
  auto reps = c.in(1).toI64Vector();
  AICC_CHECK(static_cast<int64_t>(reps.size()) == x.rank(),
             "repeats has {} entries for a rank-{} input", reps.size(), x.rank());
  // out viewed as [r0, d0, r1, d1, ...] with stride 0 on the repeat dims.
  Dims st = stridesOf(x.shape()), shape, strides, outShape;
  for (size_t i = 0; i < reps.size(); ++i) {
    AICC_CHECK(reps[i] >= 0, "repeats {} has a negative entry", formatDims(reps));
    shape.insert(shape.end(), {reps[i], x.shape()[i]});
    strides.insert(strides.end(), {0, st[i]});
    outShape.push_back(reps[i] * x.shape()[i]);
  }
  return {RValue::of(stridedCopy(x, 0, shape, strides).reshaped(outShape))};
}

int64_t rangeCount(double start, double limit, double delta) {
  AICC_CHECK(delta != 0, "delta must not be 0");
  double n = std::ceil((limit - start) / delta);
  AICC_CHECK(std::isfinite(n) && n < 1e15, "range count {} is invalid", n);
  return std::max<int64_t>(0, static_cast<int64_t>(n));
}

void inferRange(InferCtx& c) {
  DType dt = c.inDType(0);
  const Tensor *s = c.constInput(0), *l = c.constInput(1), *d = c.constInput(2);
  if (s && l && d && s->numel() == 1 && l->numel() == 1 && d->numel() == 1) {
    int64_t n = rangeCount(s->getF64(0), l->getF64(0), d->getF64(0));
    return c.setTensor(0, dt, Shape{Dim::known(n)});
  }
  auto si = knownInts(c, 0), li = knownInts(c, 1), di = knownInts(c, 2);
  if (si && li && di && si->size() == 1 && li->size() == 1 && di->size() == 1 && isInteger(dt)) {
    int64_t n = rangeCount(static_cast<double>((*si)[0]), static_cast<double>((*li)[0]),
                           static_cast<double>((*di)[0]));
    c.setTensor(0, dt, Shape{Dim::known(n)});
    if (n <= 64) {
      std::vector<Dim> v;
      for (int64_t i = 0; i < n; ++i) v.push_back(Dim::known((*si)[0] + i * (*di)[0]));
      c.setShapeValue(0, v);
    }
    return;
  }
  // A symbolic limit (a dim, ir/dim_expr.h) from start <= 0 by delta > 0: ceil((limit - start) /
  // delta) values, exact as the limit is never negative (position ids: Range(0, S, 1) has S).
  int64_t start = 1; // (> 0: not taken)
  if (const auto* sv = c.shapeValue(0); sv && sv->size() == 1 && (*sv)[0].isStatic())
    start = (*sv)[0].value;
  if (const Tensor* t = c.constInput(0); t && t->numel() == 1 && isInteger(t->dtype()))
    start = t->getI64(0); // (a negative start is no dim)
  const auto* dv = c.shapeValue(2);
  const auto* lv = c.shapeValue(1);
  if (isInteger(dt) && start <= 0 && dv && dv->size() == 1 && (*dv)[0].isStatic() &&
      (*dv)[0].value > 0 && lv && lv->size() == 1)
    if (auto e = dimExpr((*lv)[0])) {
      try {
        return c.setTensor(0, dt,
                           Shape{dimOf((*e - DimExpr::constant(start)).ceilDiv((*dv)[0].value))});
      } catch (const std::exception&) { // (overflow)
      }
    }
  // A float Range over a size cast from an integer one (YOLOv8's anchor grid: Range(0.0,
  // Cast(w), 1.0)), from an integral start <= 0 by an integral delta > 0: as above (the values
  // are exact in f32 / f64 up to 2^24).
  const Tensor *fs = c.constInput(0), *fd = c.constInput(2);
  const Node* cast = c.has(1) ? c.node.inputs[1]->producer : nullptr;
  if (isFloat(dt) && fs && fd && fs->numel() == 1 && fd->numel() == 1 && cast &&
      cast->op == "Cast" && cast->domain.empty() && cast->inputs.size() == 1 && cast->inputs[0] &&
      isInteger(cast->inputs[0]->type.dtype)) {
    const double a = fs->getF64(0), step = fd->getF64(0);
    const auto it = c.shapeValues().find(cast->inputs[0]);
    if (a <= 0 && a == std::floor(a) && a > -(1 << 24) && step >= 1 && step == std::floor(step) &&
        step < (1 << 24) && it != c.shapeValues().end() && it->second.size() == 1)
      if (auto e = dimExpr(it->second[0])) {
        try {
          return c.setTensor(
              0, dt, Shape{dimOf((*e - DimExpr::constant(int64_t(a))).ceilDiv(int64_t(step)))});
        } catch (const std::exception&) { // (overflow)
        }
      }
  }
  c.setTensor(0, dt, Shape{Dim{}});
}

std::vector<RValue> kernelRange(KernelCtx& c) {
  const Tensor &s = c.in(0), &l = c.in(1), &d = c.in(2);
  AICC_CHECK(s.numel() == 1 && l.numel() == 1 && d.numel() == 1,
             "start, limit and delta must be scalars");
  DType dt = s.dtype();
  if (isInteger(dt)) {
    int64_t a = s.getI64(0), b = l.getI64(0), st = d.getI64(0);
    AICC_CHECK(st != 0, "delta must not be 0");
    int64_t n = std::max<int64_t>(0, (b - a + (st > 0 ? st - 1 : st + 1)) / st);
    Tensor out(dt, {n});
    for (int64_t i = 0; i < n; ++i) out.setI64(i, a + i * st);
    return {RValue::of(out)};
  }
  double a = s.getF64(0), st = d.getF64(0);
  int64_t n = rangeCount(a, l.getF64(0), st);
  Tensor out(dt, {n});
  for (int64_t i = 0; i < n; ++i) out.setF64(i, a + static_cast<double>(i) * st);
  return {RValue::of(out)};
}

} // namespace

void registerShapeOps(OpRegistry& r) {
  r.op("Reshape")
      .perSampleDims(perSampleAnyDims) // (the results keep the sample dims: per_sample's rule 1)
      .dataDim(dataDimAtRunTime)
      .inputs(1, 2)
      .attrInt("allowzero", 0)
      .props(kInjective)
      .infer(inferReshape)
      .kernel(kernelReshape)
      .upgrade(1, 4, [](ImportCtx& c) { c.attrToInput("shape", 1); },
               {{"shape", Attribute::Kind::Ints, std::nullopt, false},
                {"consumed_inputs", Attribute::Kind::Ints, std::nullopt, false}});
  r.op("Transpose")
      .perSampleDims(perSampleAnyDims) // (the results keep the sample dims: per_sample's rule 1)
      .inputs(1, 1)
      .attr("perm", Attribute::Kind::Ints)
      .props(kInjective)
      .infer(inferTranspose)
      .kernel(kernelTranspose);
  r.op("Squeeze")
      .perSampleDims(perSampleAnyDims)
      .inputs(1, 2)
      .props(kInjective)
      .infer(inferSqueeze)
      .kernel(kernelSqueeze)
      .upgrade(1, 12, [](ImportCtx& c) { c.attrToInput("axes", 1); },
               {{"axes", Attribute::Kind::Ints, std::nullopt, false}});
  r.op("Unsqueeze")
      .perSampleDims(perSampleAnyDims)
      .inputs(1, 2)
      .props(kInjective)
      .infer(inferUnsqueeze)
      .kernel(kernelUnsqueeze)
      .upgrade(1, 12, [](ImportCtx& c) { c.attrToInput("axes", 1); },
               {{"axes", Attribute::Kind::Ints, std::nullopt, true}});
  r.op("Flatten")
      .perSampleDims(perSampleAnyDims)
      .inputs(1, 1)
      .attrInt("axis", 1)
      .props(kInjective)
      .infer(inferFlatten)
      .kernel(kernelFlatten);
  r.op("Shape")
      .inputs(1, 1)
      .attrInt("start", 0)
      .attr("end", Attribute::Kind::Int)
      .props(kShapeOnly)
      .infer(inferShape)
      .kernel(kernelShape);
  r.op("Size").inputs(1, 1).props(kShapeOnly).infer(inferSize).kernel([](KernelCtx& c) {
    return std::vector<RValue>{RValue::of(Tensor::fromI64({c.in(0).numel()}).reshaped({}))};
  });
  r.op("Identity")
      .perSampleDims(perSampleAnyDims)
      .inputs(1, 1)
      .props(kInjective)
      .infer([](InferCtx& c) {
        c.setOutput(0, c.inType(0));
        if (const auto* v = c.shapeValue(0)) c.setShapeValue(0, *v);
      })
      .kernel([](KernelCtx& c) { return std::vector<RValue>{c.value(0)}; });
  r.op("Constant")
      .inputs(0, 0)
      .attr("value", Attribute::Kind::Tensor)
      .attr("value_float", Attribute::Kind::Float)
      .attr("value_floats", Attribute::Kind::Floats)
      .attr("value_int", Attribute::Kind::Int)
      .attr("value_ints", Attribute::Kind::Ints)
      .attr("value_string", Attribute::Kind::String)
      .attr("value_strings", Attribute::Kind::Strings)
      .infer(inferConstant)
      .kernel([](KernelCtx& c) { return std::vector<RValue>{RValue::of(constantValue(c.node))}; });
  r.op("ConstantOfShape")
      .since(9)
      .inputs(1, 1)
      .attr("value", Attribute::Kind::Tensor)
      .dataDim(dataDimAtRunTime)
      .infer(inferConstantOfShape)
      .kernel(kernelConstantOfShape);
  r.op("Expand")
      .perSampleDims(perSampleAnyDims)
      .since(8)
      .inputs(2, 2)
      .props(kInjective)
      .dataDim(dataDimAtRunTime)
      .infer(inferExpand)
      .kernel(kernelExpand);
  r.op("Tile")
      .perSampleDims(perSampleAnyDims)
      .dataDim(dataDimAtRunTime)
      .inputs(2, 2)
      .props(kInjective)
      .infer(inferTile)
      .kernel(kernelTile)
      .upgrade(1, 5, [](ImportCtx& c) {
        fail("{}: Tile-1 (tiles/axis inputs) is not supported", c.node.describe());
      });
  r.op("Range")
      .since(11)
      .inputs(3, 3)
      .dataDim(dataDimAtRunTime)
      .infer(inferRange)
      .kernel(kernelRange);

  registerShapeSliceOps(r);
  registerShapeMiscOps(r);
  registerShapeResizeOps(r);
  registerShapeGridOps(r);
}

} // namespace aicc
