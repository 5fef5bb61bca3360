// Variadic elementwise ops (Max Min Sum Mean, broadcasting all inputs), Where and Clip.
#include "ops/elementwise.h"

#include <cmath>
#include <limits>

namespace aicc {

namespace {

void dropConsumedInputs(ImportCtx& c) { c.node.attrs.erase("consumed_inputs"); }

void inferVariadic(InferCtx& c) {
  requireSameInDTypes(c);
  inferBroadcast(c);
}

// Max/Min on propagated shape values (static values only; equal symbols stay).
void propagateMinMax(InferCtx& c, bool isMax) {
  std::vector<Dim> acc;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    const auto* v = c.shapeValue(i);
    if (!v) return;
    if (i == 0) {
      acc = *v;
      continue;
    }
    std::vector<Dim> b = *v;
    if (acc.size() != b.size() && acc.size() != 1 && b.size() != 1) return;
    size_t n = std::max(acc.size(), b.size());
    std::vector<Dim> out(n);
    for (size_t k = 0; k < n; ++k) {
      const Dim& x = acc[acc.size() == 1 ? 0 : k];
      const Dim& y = b[b.size() == 1 ? 0 : k];
      if (x.isStatic() && y.isStatic())
        out[k] = Dim::known(isMax ? std::max(x.value, y.value) : std::min(x.value, y.value));
      else if (x == y && !x.symbol.empty())
        out[k] = x;
    }
    acc = std::move(out);
  }
  c.setShapeValue(0, std::move(acc));
}

template <typename Op> std::vector<RValue> foldInputs(KernelCtx& c, Op op) {
  Tensor acc = c.in(0);
  for (size_t i = 1; i < c.numInputs(); ++i) acc = arith(acc, c.in(i), op);
  if (c.numInputs() == 1) acc = acc.clone();
  return {RValue::of(acc)};
}

template <typename T> T maxOf(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x)) return x;
    if (std::isnan(y)) return y;
  }
  return x < y ? y : x;
}

template <typename T> T minOf(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x)) return x;
    if (std::isnan(y)) return y;
  }
  return y < x ? y : x;
}

// ---- Where -----------------------------------------------------------------------------------

template <typename T>
void whereLoop(const Tensor& cond, const T* x, const T* y, T* out, const Dims& cs, const Dims& xs,
               const Dims& ys, const Dims& os) {
  const uint8_t* pc = cond.data<uint8_t>();
  forEachBroadcastRow<3>(os, {&cs, &xs, &ys},
                         [&](int64_t o, const std::array<int64_t, 3>& off,
                             const std::array<int64_t, 3>& inc, int64_t n) {
                           for (int64_t i = 0; i < n; ++i)
                             out[o + i] = pc[off[0] + i * inc[0]] ? x[off[1] + i * inc[1]]
                                                                  : y[off[2] + i * inc[2]];
                         });
}

std::vector<RValue> whereKernel(KernelCtx& c) {
  requireDType(c, 0, {DType::Bool});
  const Tensor& cond = c.in(0);
  const Tensor& x = c.in(1);
  const Tensor& y = c.in(2);
  requireSameDType(x, y);
  Dims shape = broadcastDims(broadcastDims(cond.shape(), x.shape()), y.shape());
  Tensor out(x.dtype(), shape);
  const Dims &cs = cond.shape(), &xs = x.shape(), &ys = y.shape();
  switch (x.dtype() == DType::String ? 0 : dtypeSize(x.dtype())) {
  case 0: {
    BroadcastIndexer ic(cs, shape), ix(xs, shape), iy(ys, shape);
    for (int64_t i = 0; i < out.numel(); ++i)
      out.strings()[i] = cond.data<uint8_t>()[ic(i)] ? x.strings()[ix(i)] : y.strings()[iy(i)];
    break;
  }
  case 1:
    whereLoop(cond, x.data<uint8_t>(), y.data<uint8_t>(), out.data<uint8_t>(), cs, xs, ys, shape);
    break;
  case 2:
    whereLoop(cond, x.data<uint16_t>(), y.data<uint16_t>(), out.data<uint16_t>(), cs, xs, ys,
              shape);
    break;
  case 4:
    whereLoop(cond, x.data<uint32_t>(), y.data<uint32_t>(), out.data<uint32_t>(), cs, xs, ys,
              shape);
    break;
  case 8:
    whereLoop(cond, x.data<uint64_t>(), y.data<uint64_t>(), out.data<uint64_t>(), cs, xs, ys,
              shape);
    break;
  case 16: { // complex128: two doubles per element
    BroadcastIndexer ic(cs, shape), ix(xs, shape), iy(ys, shape);
    for (int64_t i = 0; i < out.numel(); ++i)
      out.setC(i, cond.data<uint8_t>()[ic(i)] ? x.getC(ix(i)) : y.getC(iy(i)));
    break;
  }
  default:
    fail("unsupported element type {}", dtypeName(x.dtype()));
  }
  return {RValue::of(out)};
}

void inferWhere(InferCtx& c) {
  AICC_CHECK(c.inDType(0) == DType::Undefined || c.inDType(0) == DType::Bool,
             "condition must be bool, got {}", dtypeName(c.inDType(0)));
  requireSameInDTypes(c, 1);
  std::optional<Shape> s = Shape{};
  for (size_t i = 0; i < 3; ++i) {
    const auto& si = c.inShape(i);
    if (!si || !s)
      s = std::nullopt;
    else
      s = broadcastShape(*s, *si);
  }
  c.setTensor(0, c.inDType(1), s);
  // Data propagation: a constant condition selecting between two known shape values.
  const Tensor* cond = c.constInput(0);
  if (!cond || cond->rank() > 1) return;
  const auto* px = c.shapeValue(1);
  if (!px) return;
  std::vector<Dim> xv = *px;
  const auto* py = c.shapeValue(2);
  if (!py) return;
  std::vector<Dim> yv = *py;
  size_t n = std::max({static_cast<size_t>(cond->numel()), xv.size(), yv.size()});
  for (size_t len : {static_cast<size_t>(cond->numel()), xv.size(), yv.size()})
    if (len != n && len != 1) return;
  std::vector<Dim> out(n);
  for (size_t k = 0; k < n; ++k) {
    bool pick = cond->getF64(static_cast<int64_t>(cond->numel() == 1 ? 0 : k)) != 0;
    out[k] = pick ? xv[xv.size() == 1 ? 0 : k] : yv[yv.size() == 1 ? 0 : k];
  }
  c.setShapeValue(0, std::move(out));
}

// ---- Clip ------------------------------------------------------------------------------------

std::vector<RValue> clipKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  for (size_t i = 1; i < 3; ++i)
    if (c.has(i)) {
      AICC_CHECK(c.in(i).numel() == 1, "input {} ({}) must be a scalar, got shape {}", i,
                 i == 1 ? "min" : "max", formatDims(c.in(i).shape()));
      requireSameDType(x, c.in(i));
    }
  DType t = x.dtype();
  Tensor src = isReducedFloat(t) ? x.castTo(DType::F32) : x;
  Tensor out(src.dtype(), src.shape());
  bool ok = visitNumeric(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if constexpr (std::is_floating_point_v<T>) {
      lo = -std::numeric_limits<T>::infinity();
      hi = std::numeric_limits<T>::infinity();
    }
    auto bound = [&](size_t i, T dflt) {
      if (!c.has(i)) return dflt;
      const Tensor& b = c.in(i);
      if (b.dtype() == src.dtype()) return b.data<T>()[0];
      return static_cast<T>(b.getF64(0)); // reduced float bound
    };
    lo = bound(1, lo);
    hi = bound(2, hi);
    const T* a = src.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0; i < src.numel(); ++i) {
      T v = a[i] < lo ? lo : a[i];
      o[i] = v > hi ? hi : v;
    }
  });
  AICC_CHECK(ok, "unsupported element type {}", dtypeName(t));
  return {RValue::of(out.dtype() == t ? out : out.castTo(t))};
}

// Clip before opset 11: min/max attributes (defaults: the whole float range) -> inputs.
void upgradeClip(ImportCtx& c) {
  c.node.attrs.erase("consumed_inputs");
  DType t = c.node.hasInput(0) ? c.node.inputs[0]->type.dtype : DType::Undefined;
  if (t == DType::Undefined) t = DType::F32;
  c.attrToInput("min", 1, t);
  c.attrToInput("max", 2, t);
}

} // namespace

void registerElementwiseVariadicOps(OpRegistry& r) {
  r.op("Max")
      .since(1)
      .inputs(1, 1 << 30)
      .props(kElementwise | kCommutative)
      .infer([](InferCtx& c) {
        inferVariadic(c);
        propagateMinMax(c, true);
      })
      .kernel(
          [](KernelCtx& c) { return foldInputs(c, [](auto x, auto y) { return maxOf(x, y); }); })
      .upgrade(1, 5, dropConsumedInputs, legacyConsumedInputs());
  r.op("Min")
      .since(1)
      .inputs(1, 1 << 30)
      .props(kElementwise | kCommutative)
      .infer([](InferCtx& c) {
        inferVariadic(c);
        propagateMinMax(c, false);
      })
      .kernel(
          [](KernelCtx& c) { return foldInputs(c, [](auto x, auto y) { return minOf(x, y); }); })
      .upgrade(1, 5, dropConsumedInputs, legacyConsumedInputs());
  r.op("Sum")
      .since(1)
      .inputs(1, 1 << 30)
      .props(kElementwise | kCommutative)
      .infer(inferVariadic)
      .kernel(
          [](KernelCtx& c) { return foldInputs(c, [](auto x, auto y) { return wrapAdd(x, y); }); })
      .upgrade(1, 5, dropConsumedInputs, legacyConsumedInputs());
  r.op("Mean")
      .since(1)
      .inputs(1, 1 << 30)
      .props(kElementwise | kCommutative)
      .infer(inferVariadic)
      .kernel([](KernelCtx& c) {
        requireFloat(c, 0);
        // Sum in double, then divide: one rounding per element.
        Tensor acc = c.in(0).castTo(DType::F64);
        for (size_t i = 1; i < c.numInputs(); ++i)
          acc = arith(acc, c.in(i).castTo(DType::F64), [](auto x, auto y) { return x + y; });
        if (c.numInputs() == 1) acc = acc.clone();
        double n = static_cast<double>(c.numInputs());
        for (int64_t i = 0; i < acc.numel(); ++i) acc.data<double>()[i] /= n;
        return std::vector<RValue>{RValue::of(acc.castTo(c.in(0).dtype()))};
      })
      .upgrade(1, 5, dropConsumedInputs, legacyConsumedInputs());

  r.op("Where").since(9).inputs(3, 3).props(kElementwise).infer(inferWhere).kernel(whereKernel);

  r.op("Clip")
      .since(1)
      .inputs(1, 3)
      .props(kElementwise)
      .infer([](InferCtx& c) {
        for (size_t i = 1; i < 3; ++i)
          AICC_CHECK(c.inDType(i) == DType::Undefined || c.inDType(0) == DType::Undefined ||
                         c.inDType(i) == c.inDType(0),
                     "input {} has element type {} but input 0 has {}", i, dtypeName(c.inDType(i)),
                     dtypeName(c.inDType(0)));
        c.setOutput(0, c.inType(0));
      })
      .kernel(clipKernel)
      .upgrade(1, 10, upgradeClip,
               {{"min", Attribute::Kind::Float, std::nullopt, false},
                {"max", Attribute::Kind::Float, std::nullopt, false},
                legacyConsumedInputs()[0]});
}

} // namespace aicc
