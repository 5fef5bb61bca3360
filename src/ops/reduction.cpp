// Reduce* ops. Canonical form (opset 18, ReduceSum opset 13): `axes` is optional input 1;
// attributes keepdims (1) and noop_with_empty_axes (0). Older opsets carry `axes` as an attribute,
// which the upgrade rule moves into input 1.
//
// Kernels reduce over a "plan": the input dims with size-1 dims dropped and neighbouring dims of
// the same kind (reduced / kept) merged, walked in memory order with the output offset kept up to
// date, so the inner loop runs over raw typed pointers. Floats accumulate in double; integers are
// exact (64-bit wrap-around arithmetic, never through double) except for L2/LogSum/LogSumExp, which
// are computed in double; f16/bf16 go through float.
#include "ops/reduction.h"

#include "ops/all_ops.h"
#include "ops/helpers.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace aicc {

namespace {

enum class RK { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

struct ReducePlan {
  Dims dims;      // merged input dims
  Dims outStride; // output stride of each merged dim; 0 for reduced dims
  Dims outShape;  // the op's output shape
  int64_t outNumel = 1;
  int64_t count = 1; // input elements per output element
  int64_t inNumel = 1;
};

ReducePlan makePlan(const Dims& shape, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan p;
  std::vector<bool> mergedRed;
  for (size_t d = 0; d < shape.size(); ++d) {
    p.inNumel *= shape[d];
    if (reduced[d])
      p.count *= shape[d];
    else
      p.outNumel *= shape[d];
    if (reduced[d]) {
      if (keepdims) p.outShape.push_back(1);
    } else {
      p.outShape.push_back(shape[d]);
    }
    if (shape[d] == 1) continue;
    if (!mergedRed.empty() && mergedRed.back() == reduced[d]) {
      p.dims.back() *= shape[d];
    } else {
      p.dims.push_back(shape[d]);
      mergedRed.push_back(reduced[d]);
    }
  }
  p.outStride.assign(p.dims.size(), 0);
  int64_t s = 1;
  for (size_t d = p.dims.size(); d-- > 0;) {
    if (mergedRed[d]) continue;
    p.outStride[d] = s;
    s *= p.dims[d];
  }
  return p;
}

// Calls f(outIndex, inIndex) for every input element, in memory order.
template <typename F> void forEachReduced(const ReducePlan& p, F&& f) {
  if (p.inNumel == 0) return;
  size_t nd = p.dims.size();
  if (nd == 0) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  const int64_t inner = p.dims.back(), innerStride = p.outStride.back();
  std::vector<int64_t> idx(nd - 1, 0);
  int64_t i = 0, o = 0;
  while (true) {
    if (innerStride == 0) {
      for (int64_t j = 0; j < inner; ++j) f(o, i + j);
    } else {
      for (int64_t j = 0; j < inner; ++j) f(o + j, i + j);
    }
    i += inner;
    size_t d = nd - 1;
    while (d-- > 0) {
      if (++idx[d] < p.dims[d]) {
        o += p.outStride[d];
        break;
      }
      o -= p.outStride[d] * (p.dims[d] - 1);
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) break;
  }
}

template <typename T> T storeDouble(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T{0};
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// acc[o] = step(acc[o], x[i]) over the plan, then out[o] = fin(acc[o]).
template <typename T, typename Acc, typename Step, typename Fin>
Tensor reduceWith(const Tensor& x, const ReducePlan& p, Acc init, Step step, Fin fin) {
  std::vector<Acc> acc(static_cast<size_t>(p.outNumel), init);
  const T* xp = x.data<T>();
  Acc* ap = acc.data();
  forEachReduced(p, [&](int64_t o, int64_t i) { step(ap[o], xp[i]); });
  Tensor out(x.dtype(), p.outShape);
  T* op = out.data<T>();
  for (int64_t o = 0; o < p.outNumel; ++o) op[o] = fin(ap[o]);
  return out;
}

template <typename T> Tensor reduceFloat(RK k, const Tensor& x, const ReducePlan& p) {
  using D = double;
  const D n = static_cast<D>(p.count);
  auto id = [](D a) { return static_cast<T>(a); };
  constexpr D inf = std::numeric_limits<D>::infinity();
  switch (k) {
  case RK::Sum:
    return reduceWith<T, D>(
        x, p, 0.0, [](D& a, T v) { a += v; }, id);
  case RK::Mean:
    return reduceWith<T, D>(
        x, p, 0.0, [](D& a, T v) { a += v; }, [n](D a) { return static_cast<T>(a / n); });
  case RK::L1:
    return reduceWith<T, D>(
        x, p, 0.0, [](D& a, T v) { a += std::fabs(D(v)); }, id);
  case RK::SumSquare:
    return reduceWith<T, D>(
        x, p, 0.0, [](D& a, T v) { a += D(v) * D(v); }, id);
  case RK::L2:
    return reduceWith<T, D>(
        x, p, 0.0, [](D& a, T v) { a += D(v) * D(v); },
        [](D a) { return static_cast<T>(std::sqrt(a)); });
  case RK::LogSum:
    return reduceWith<T, D>(
        x, p, 0.0, [](D& a, T v) { a += v; }, [](D a) { return static_cast<T>(std::log(a)); });
  case RK::Prod:
    return reduceWith<T, D>(
        x, p, 1.0, [](D& a, T v) { a *= v; }, id);
  case RK::Max:
    return reduceWith<T, D>(
        x, p, -inf,
        [](D& a, T v) {
          if (v > a || std::isnan(v)) a = v;
        },
        id);
  case RK::Min:
    return reduceWith<T, D>(
        x, p, inf,
        [](D& a, T v) {
          if (v < a || std::isnan(v)) a = v;
        },
        id);
  case RK::LogSumExp: {
    // Stable: m = max, result = m + log(sum(exp(x - m))).
    std::vector<D> m(static_cast<size_t>(p.outNumel), -inf),
        s(static_cast<size_t>(p.outNumel), 0.0);
    const T* xp = x.data<T>();
    forEachReduced(p, [&](int64_t o, int64_t i) {
      if (xp[i] > m[o] || std::isnan(xp[i])) m[o] = xp[i];
    });
    forEachReduced(p, [&](int64_t o, int64_t i) {
      if (std::isfinite(m[o])) s[o] += std::exp(D(xp[i]) - m[o]);
    });
    Tensor out(x.dtype(), p.outShape);
    for (int64_t o = 0; o < p.outNumel; ++o)
      out.data<T>()[o] = static_cast<T>(std::isfinite(m[o]) ? m[o] + std::log(s[o]) : m[o]);
    return out;
  }
  }
  fail("internal: bad reduction kind");
}

template <typename T> Tensor reduceInt(RK k, const Tensor& x, const ReducePlan& p) {
  using U = uint64_t; // exact, wrapping arithmetic
  const int64_t n = p.count;
  auto id = [](U a) { return static_cast<T>(a); };
  auto u = [](T v) {
    return static_cast<U>(static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, U>>(v));
  };
  switch (k) {
  case RK::Sum:
    return reduceWith<T, U>(
        x, p, 0, [u](U& a, T v) { a += u(v); }, id);
  case RK::Mean:
    return reduceWith<T, U>(
        x, p, 0, [u](U& a, T v) { a += u(v); },
        [n](U a) {
          if (n == 0) return T{0};
          if constexpr (std::is_signed_v<T>)
            return static_cast<T>(static_cast<int64_t>(a) / n);
          else
            return static_cast<T>(a / static_cast<U>(n));
        });
  case RK::L1:
    return reduceWith<T, U>(
        x, p, 0,
        [u](U& a, T v) {
          if constexpr (std::is_signed_v<T>)
            a += v < 0 ? U{0} - u(v) : u(v);
          else
            a += u(v);
        },
        id);
  case RK::SumSquare:
    return reduceWith<T, U>(
        x, p, 0, [u](U& a, T v) { a += u(v) * u(v); }, id);
  case RK::Prod:
    return reduceWith<T, U>(
        x, p, 1, [u](U& a, T v) { a *= u(v); }, id);
  case RK::Max:
    return reduceWith<T, T>(
        x, p, std::numeric_limits<T>::lowest(),
        [](T& a, T v) {
          if (v > a) a = v;
        },
        [](T a) { return a; });
  case RK::Min:
    return reduceWith<T, T>(
        x, p, std::numeric_limits<T>::max(),
        [](T& a, T v) {
          if (v < a) a = v;
        },
        [](T a) { return a; });
  case RK::L2:
  case RK::LogSum:
  case RK::LogSumExp: {
    // Computed in double, stored back with saturation.
    Tensor f = reduceFloat<double>(k, x.castTo(DType::F64), p);
    Tensor out(x.dtype(), p.outShape);
    for (int64_t o = 0; o < p.outNumel; ++o) out.data<T>()[o] = storeDouble<T>(f.data<double>()[o]);
    return out;
  }
  }
  fail("internal: bad reduction kind");
}

Tensor reduceBool(RK k, const Tensor& x, const ReducePlan& p) {
  using B = uint8_t;
  auto id = [](B a) { return a != 0; };
  if (k == RK::Max)
    return reduceWith<bool, B>(
        x, p, 0, [](B& a, bool v) { a = a || v; }, id);
  if (k == RK::Min)
    return reduceWith<bool, B>(
        x, p, 1, [](B& a, bool v) { a = a && v; }, id);
  fail("element type bool is only supported by ReduceMax and ReduceMin");
}

Tensor reduceTensor(RK k, const Tensor& x, const ReducePlan& p) {
  if (isReducedFloat(x.dtype())) return reduceTensor(k, x.castTo(DType::F32), p).castTo(x.dtype());
  Tensor out;
  bool ok = visitNative(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>)
      out = reduceBool(k, x, p);
    else if constexpr (std::is_floating_point_v<T>)
      out = reduceFloat<T>(k, x, p);
    else
      out = reduceInt<T>(k, x, p);
  });
  AICC_CHECK(ok, "input 0 has unsupported element type {}", dtypeName(x.dtype()));
  return out;
}

std::vector<RValue> reduceKernel(RK k, KernelCtx& c) {
  const Tensor& x = c.in(0);
  bool keepdims = c.node.attrInt("keepdims") != 0;
  bool noop = c.node.attrInt("noop_with_empty_axes") != 0;
  std::vector<int64_t> axes;
  if (c.has(1)) {
    const Tensor& a = c.in(1);
    AICC_CHECK(a.dtype() == DType::I64 || a.dtype() == DType::I32, "axes must be int64, got {}",
               dtypeName(a.dtype()));
    AICC_CHECK(a.rank() <= 1, "axes must be 1-D, got shape {}", formatDims(a.shape()));
    axes = a.toI64Vector();
  }
  if (axes.empty() && noop) return {RValue::of(x)};
  int64_t r = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(r), axes.empty());
  for (int64_t a : axes) {
    AICC_CHECK(a >= -r && a < std::max<int64_t>(r, 1), "axis {} is out of range for rank {}", a, r);
    // (numpy, which ONNX's reference implementation reduces with, refuses a repeated axis too)
    AICC_CHECK(r == 0 || !reduced[static_cast<size_t>(a < 0 ? a + r : a)] || axes.empty(),
               "axis {} is given twice", a);
    if (r > 0) reduced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  return {RValue::of(reduceTensor(k, x, makePlan(x.shape(), reduced, keepdims)))};
}

void inferReduce(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& s = c.inShape(0);
  bool keepdims = c.node.attrInt("keepdims") != 0;
  bool noop = c.node.attrInt("noop_with_empty_axes") != 0;
  std::optional<std::vector<int64_t>> axes;
  std::optional<int64_t> numAxes; // length of a non-constant axes input, when static
  if (!c.has(1)) {
    axes.emplace();
  } else if (const Tensor* at = c.constInput(1); at && at->rank() <= 1 && isInteger(at->dtype())) {
    axes = at->toI64Vector(); // (shape values cannot hold negative axes)
  } else if (const auto* sv = c.shapeValue(1)) {
    std::vector<int64_t> v;
    for (const Dim& d : *sv)
      if (d.isStatic()) v.push_back(d.value);
    if (v.size() == sv->size())
      axes = v;
    else
      numAxes = static_cast<int64_t>(sv->size());
  } else if (const auto& as = c.inShape(1); as && as->size() == 1 && (*as)[0].isStatic()) {
    numAxes = (*as)[0].value;
    if (*numAxes == 0) axes.emplace();
  }
  if (!s) {
    c.setTensor(0, dt, std::nullopt);
    return;
  }
  int64_t r = static_cast<int64_t>(s->size());
  if (!axes) {
    // Which axes are reduced is data-dependent.
    if (keepdims) {
      Shape out;
      for (const Dim& d : *s) out.push_back(d.isStatic() && d.value == 1 ? d : Dim{});
      c.setTensor(0, dt, out);
    } else if (numAxes && *numAxes > 0 && *numAxes <= r) {
      c.setTensor(0, dt, Shape(static_cast<size_t>(r - *numAxes)));
    } else {
      c.setTensor(0, dt, std::nullopt);
    }
    return;
  }
  if (axes->empty() && noop) {
    c.setTensor(0, dt, s);
    return;
  }
  std::vector<bool> reduced(static_cast<size_t>(r), axes->empty());
  for (int64_t a : *axes) {
    AICC_CHECK(a >= -r && a < std::max<int64_t>(r, 1), "axis {} is out of range for rank {}", a, r);
    if (r > 0) reduced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  Shape out;
  for (size_t d = 0; d < s->size(); ++d) {
    if (!reduced[d])
      out.push_back((*s)[d]);
    else if (keepdims)
      out.push_back(Dim::known(1));
  }
  c.setTensor(0, dt, out);
  // Data propagation: a reduction of a whole known shape vector (e.g. ReduceProd(Shape(x))).
  RK k = c.node.op == "ReduceProd" ? RK::Prod : c.node.op == "ReduceSum" ? RK::Sum : RK::Mean;
  if (r == 1 && reduced[0] && k != RK::Mean && isInteger(dt))
    if (const auto* sv = c.shapeValue(0)) {
      int64_t v = k == RK::Prod ? 1 : 0;
      for (const Dim& d : *sv) {
        if (!d.isStatic()) return;
        v = k == RK::Prod ? v * d.value : v + d.value;
      }
      c.setShapeValue(0, {Dim::known(v)});
    }
}

void registerReduce(OpRegistry& r, const char* name, RK k, int axesInputSince) {
  AttrSpec legacyAxes{"axes", Attribute::Kind::Ints, std::nullopt, false};
  r.op(name)
      .perSample()
      .inputs(1, 2)
      .attrInt("keepdims", 1)
      .attrInt("noop_with_empty_axes", 0)
      .props(kReduction)
      .infer(inferReduce)
      // Axes given at run time: a kept dim is 1 or the input's (its bound); without keepdims a
      // result dim is one of the input's (bound: the largest for static inputs, else their sum).
      .dataDim([](const Node& n, size_t out, size_t dim) -> std::optional<DataDim> {
        if (n.attrInt("keepdims", 1) != 0) return dataDimOfInput0(n, out, dim);
        const Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
        if (out != 0 || !x || !x->type.shape || x->type.shape->empty()) return std::nullopt;
        if (const auto d = toDims(*x->type.shape))
          return DataDim{Dim::known(*std::max_element(d->begin(), d->end())), int(dim)};
        Dim sum = Dim::known(0);
        for (const Dim& d : *x->type.shape) sum = dimAdd(sum, d);
        return DataDim{sum, int(dim)};
      })
      .kernel([k](KernelCtx& c) { return reduceKernel(k, c); })
      .upgrade(1, axesInputSince - 1, [](ImportCtx& c) { c.attrToInput("axes", 1); }, {legacyAxes});
}

} // namespace

void registerReduceOps(OpRegistry& r) {
  registerReduce(r, "ReduceSum", RK::Sum, 13);
  registerReduce(r, "ReduceMean", RK::Mean, 18);
  registerReduce(r, "ReduceMax", RK::Max, 18);
  registerReduce(r, "ReduceMin", RK::Min, 18);
  registerReduce(r, "ReduceProd", RK::Prod, 18);
  registerReduce(r, "ReduceL1", RK::L1, 18);
  registerReduce(r, "ReduceL2", RK::L2, 18);
  registerReduce(r, "ReduceLogSum", RK::LogSum, 18);
  registerReduce(r, "ReduceLogSumExp", RK::LogSumExp, 18);
  registerReduce(r, "ReduceSumSquare", RK::SumSquare, 18);
}

void registerReductionOps(OpRegistry& r) {
  registerReduceOps(r);
  registerSoftmaxOps(r);
  registerIndexReductionOps(r);
  registerEinsumOp(r);
}

} // namespace aicc
