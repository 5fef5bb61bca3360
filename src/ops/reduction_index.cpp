// ArgMax, ArgMin, TopK and CumSum: ops along one axis that select or scan.
// Values are compared in their own C++ type (exact for 64-bit integers); f16/bf16 go through float.
// NaN counts as larger than every number (as in numpy's sort order).
#include "ops/reduction.h"

#include "ops/helpers.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

namespace aicc {

namespace {

// a > b with NaN largest (a strict weak order).
template <typename T> bool greaterThan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

// Calls f(T{}) for a native dtype, or converts reduced floats to f32 first (`x` is replaced).
template <typename F> void visitValues(Tensor& x, F&& f) {
  if (isReducedFloat(x.dtype())) x = x.castTo(DType::F32);
  AICC_CHECK(x.dtype() != DType::Bool && visitNative(x.dtype(), f),
             "input 0 has unsupported element type {}", dtypeName(x.dtype()));
}

Shape reducedShape(const Shape& s, int64_t axis, bool keepdims) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d != axis)
      out.push_back(s[static_cast<size_t>(d)]);
    else if (keepdims)
      out.push_back(Dim::known(1));
  }
  return out;
}

// ---- ArgMax / ArgMin --------------------------------------------------------------------------

std::vector<RValue> argKernel(bool isMax, KernelCtx& c) {
  Tensor x = c.in(0);
  int64_t axis = normAxis(c.node.attrInt("axis"), x.rank());
  bool keepdims = c.node.attrInt("keepdims") != 0;
  bool last = c.node.attrInt("select_last_index") != 0;
  AxisSplit s = splitAt(x.shape(), axis);
  AICC_CHECK(x.rank() == 0 || s.n > 0, "cannot reduce axis {} of size 0 (shape {})", axis,
             formatDims(x.shape()));
  Dims outShape =
      *toDims(reducedShape(staticShape(x.shape()), x.rank() == 0 ? -1 : axis, keepdims));
  Tensor out(DType::I64, outShape);
  int64_t* op = out.data<int64_t>();
  visitValues(x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* lane = xp + o * s.n * s.inner + i;
        int64_t best = 0;
        for (int64_t j = 1; j < s.n; ++j) {
          T v = lane[j * s.inner], b = lane[best * s.inner];
          bool better = isMax ? greaterThan(v, b) : greaterThan(b, v);
          bool tie = !greaterThan(v, b) && !greaterThan(b, v);
          if (better || (last && tie)) best = j;
        }
        op[o * s.inner + i] = best;
      }
  });
  return {RValue::of(out)};
}

void inferArg(InferCtx& c) {
  const auto& s = c.inShape(0);
  if (!s) {
    c.setTensor(0, DType::I64, std::nullopt);
    return;
  }
  auto r = static_cast<int64_t>(s->size());
  int64_t axis = normAxis(c.node.attrInt("axis"), r);
  c.setTensor(0, DType::I64, reducedShape(*s, r == 0 ? -1 : axis, c.node.attrInt("keepdims") != 0));
}

// ---- TopK -------------------------------------------------------------------------------------

int64_t topkK(const Tensor& k) {
  AICC_CHECK(k.numel() == 1 && k.rank() <= 1 && isInteger(k.dtype()),
             "K must be a 1-element integer tensor, got {} {}", dtypeName(k.dtype()),
             formatDims(k.shape()));
  return k.getI64(0);
}

std::vector<RValue> topkKernel(KernelCtx& c) {
  AICC_CHECK(c.has(1), "input 1 (K) is required");
  Tensor x = c.in(0);
  const DType dt = x.dtype();
  AICC_CHECK(x.rank() > 0, "input must have rank >= 1");
  int64_t axis = normAxis(c.node.attrInt("axis"), x.rank());
  int64_t k = topkK(c.in(1));
  bool largest = c.node.attrInt("largest") != 0;
  AxisSplit s = splitAt(x.shape(), axis);
  AICC_CHECK(k >= 0 && k <= s.n, "K = {} is out of range for axis {} of size {}", k, axis, s.n);
  Dims outShape = x.shape();
  outShape[static_cast<size_t>(axis)] = k;
  Tensor indices(DType::I64, outShape), values;
  int64_t* ip = indices.data<int64_t>();
  visitValues(x, [&](auto tag) {
    using T = decltype(tag);
    values = Tensor(x.dtype(), outShape);
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* lane = xp + o * s.n * s.inner + i;
        std::iota(order.begin(), order.end(), 0);
        // Ties keep the smaller index first.
        auto before = [&](int64_t a, int64_t b) {
          T va = lane[a * s.inner], vb = lane[b * s.inner];
          if (largest ? greaterThan(va, vb) : greaterThan(vb, va)) return true;
          if (largest ? greaterThan(vb, va) : greaterThan(va, vb)) return false;
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          int64_t dst = (o * k + j) * s.inner + i;
          ip[dst] = order[static_cast<size_t>(j)];
          vp[dst] = lane[order[static_cast<size_t>(j)] * s.inner];
        }
      }
  });
  if (values.dtype() != dt) values = values.castTo(dt);
  return {RValue::of(values), RValue::of(indices)};
}

void inferTopK(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& s = c.inShape(0);
  if (!s) {
    c.setTensor(0, dt, std::nullopt);
    c.setTensor(1, DType::I64, std::nullopt);
    return;
  }
  auto r = static_cast<int64_t>(s->size());
  AICC_CHECK(r > 0, "input must have rank >= 1");
  int64_t axis = normAxis(c.node.attrInt("axis"), r);
  Shape out = *s;
  Dim kd;
  if (const auto* kv = c.shapeValue(1); kv && kv->size() == 1) kd = (*kv)[0];
  const Dim& ad = out[static_cast<size_t>(axis)];
  if (kd.isStatic() && ad.isStatic())
    AICC_CHECK(kd.value <= ad.value, "K = {} is larger than axis {} of size {}", kd.value, axis,
               ad.value);
  out[static_cast<size_t>(axis)] = kd;
  c.setTensor(0, dt, out);
  c.setTensor(1, DType::I64, out);
}

// ---- CumSum -----------------------------------------------------------------------------------

std::vector<RValue> cumsumKernel(KernelCtx& c) {
  Tensor x = c.in(0);
  const DType dt = x.dtype();
  const Tensor& a = c.in(1);
  AICC_CHECK(a.numel() == 1 && a.rank() <= 1 &&
                 (a.dtype() == DType::I32 || a.dtype() == DType::I64),
             "axis must be a 0-D int32/int64 tensor, got {} {}", dtypeName(a.dtype()),
             formatDims(a.shape()));
  AICC_CHECK(x.rank() > 0, "input must have rank >= 1");
  int64_t axis = normAxis(a.getI64(0), x.rank());
  bool exclusive = c.node.attrInt("exclusive") != 0, reverse = c.node.attrInt("reverse") != 0;
  AxisSplit s = splitAt(x.shape(), axis);
  Tensor y;
  visitValues(x, [&](auto tag) {
    using T = decltype(tag);
    // Floats accumulate in double; integers exactly, with 64-bit wrap-around.
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    auto acc = [](T v) {
      if constexpr (std::is_floating_point_v<T>)
        return static_cast<double>(v);
      else if constexpr (std::is_signed_v<T>)
        return static_cast<uint64_t>(static_cast<int64_t>(v));
      else
        return static_cast<uint64_t>(v);
    };
    y = Tensor(x.dtype(), x.shape());
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t base = o * s.n * s.inner + i;
        Acc sum{};
        for (int64_t t = 0; t < s.n; ++t) {
          int64_t j = reverse ? s.n - 1 - t : t;
          int64_t at = base + j * s.inner;
          if (exclusive) {
            yp[at] = static_cast<T>(sum);
            sum += acc(xp[at]);
          } else {
            sum += acc(xp[at]);
            yp[at] = static_cast<T>(sum);
          }
        }
      }
  });
  if (y.dtype() != dt) y = y.castTo(dt);
  return {RValue::of(y)};
}

} // namespace

void registerIndexReductionOps(OpRegistry& r) {
  for (bool isMax : {true, false})
    r.op(isMax ? "ArgMax" : "ArgMin")
        .perSampleDims(perSampleOutsideAxis(0))
        .inputs(1, 1)
        .attrInt("axis", 0)
        .attrInt("keepdims", 1)
        .attrInt("select_last_index", 0)
        .props(kReduction)
        .infer(inferArg)
        .kernel([isMax](KernelCtx& c) { return argKernel(isMax, c); });

  // TopK-1 had `k` as an attribute; K is input 1 since opset 10.
  r.op("TopK")
      .inputs(1, 2)
      .outputs(2, 2)
      .attrInt("axis", -1)
      .attrInt("largest", 1)
      .attrInt("sorted", 1)
      .infer(inferTopK)
      .dataDim(dataDimAlongAxis(-1))
      .kernel(topkKernel)
      .upgrade(1, 9, [](ImportCtx& c) { c.attrToInput("k", 1); },
               {AttrSpec{"k", Attribute::Kind::Int, std::nullopt, true}});

  r.op("CumSum")
      .since(11)
      .inputs(2, 2)
      .attrInt("exclusive", 0)
      .attrInt("reverse", 0)
      .infer(inferSameAsInput0)
      .kernel(cumsumKernel);
}

} // namespace aicc
