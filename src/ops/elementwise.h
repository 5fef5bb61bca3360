// Shared pieces of the elementwise op family (src/ops/elementwise*.cpp): the per-file register
// functions, typed dispatch over element types, and a row iterator over broadcast operands.
#pragma once

#include "ops/helpers.h"

#include <array>
#include <cstring>
#include <type_traits>

namespace aicc {

void registerElementwiseUnaryOps(OpRegistry& r);      // elementwise_unary.cpp
void registerElementwiseActivationOps(OpRegistry& r); // elementwise_activation.cpp
void registerElementwiseBinaryOps(OpRegistry& r);     // elementwise_binary.cpp
void registerElementwiseVariadicOps(
    OpRegistry& r);                             // elementwise_variadic.cpp (Max, Where, Clip, ...)
void registerElementwiseCastOps(OpRegistry& r); // elementwise_cast.cpp

// `consumed_inputs`: an attribute of many ops before opset 6, with no meaning today.
std::vector<AttrSpec> legacyConsumedInputs();
// Import helper for legacy (pre-numpy) broadcasting: gives input `input` `count` trailing 1-dims
// (reshaping a constant, else inserting an Unsqueeze).
void appendUnitDims(ImportCtx& c, size_t input, int64_t count);

// Calls f(T{}) with the storage type of the numeric (non-bool) native types; returns false for
// other types. With `boolAsU8`, bool tensors are visited as uint8_t (values 0/1).
template <typename F> bool visitNumeric(DType t, F&& f, bool boolAsU8 = false) {
  switch (t) {
  case DType::F32:
    f(float{});
    return true;
  case DType::F64:
    f(double{});
    return true;
  case DType::I8:
    f(int8_t{});
    return true;
  case DType::I16:
    f(int16_t{});
    return true;
  case DType::I32:
    f(int32_t{});
    return true;
  case DType::I64:
    f(int64_t{});
    return true;
  case DType::U8:
    f(uint8_t{});
    return true;
  case DType::U16:
    f(uint16_t{});
    return true;
  case DType::U32:
    f(uint32_t{});
    return true;
  case DType::U64:
    f(uint64_t{});
    return true;
  case DType::Bool:
    if (!boolAsU8) return false;
    f(uint8_t{});
    return true;
  default:
    return false;
  }
}

// Integer arithmetic that wraps around (two's complement) instead of overflowing (UB).
template <typename T> T wrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <typename T> T wrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else
    return a - b;
}
template <typename T> T wrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

// Iterates a broadcast of N operands into `out` row by row: adjacent dims are coalesced where
// every operand is contiguous (or broadcast) across them, so rows are as long as possible.
// fn(outOffset, offsets[N], increments[N] (each operand's stride along the row: 0 or 1), length).
template <size_t N, typename Fn>
void forEachBroadcastRow(const Dims& out, const std::array<const Dims*, N>& ins, Fn&& fn) {
  int64_t total = checkedNumel(out);
  if (total == 0) return;
  // Strides of each operand aligned to out's rank (0 where broadcast), dropping size-1 out dims.
  Dims shape;
  std::array<Dims, N> st;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    shape.push_back(out[d]);
    for (size_t k = 0; k < N; ++k) {
      const Dims& s = *ins[k];
      size_t off = out.size() - s.size();
      int64_t stride = 0;
      if (d >= off && s[d - off] != 1) {
        stride = 1;
        for (size_t e = d - off + 1; e < s.size(); ++e) stride *= s[e];
      }
      st[k].push_back(stride);
    }
  }
  // Coalesce dim d into d+1 when every operand's stride is continuous across them.
  Dims cshape;
  std::array<Dims, N> cst;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool merge = !cshape.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = cst[k].back() == st[k][d] * shape[d];
    if (merge) {
      cshape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) cst[k].back() = st[k][d];
    } else {
      cshape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) cst[k].push_back(st[k][d]);
    }
  }
  if (cshape.empty()) { // every dim is 1: a single element
    std::array<int64_t, N> offs{}, incs{};
    fn(int64_t{0}, offs, incs, int64_t{1});
    return;
  }
  size_t r = cshape.size();
  int64_t len = cshape[r - 1];
  std::array<int64_t, N> offs{}, incs{};
  for (size_t k = 0; k < N; ++k) incs[k] = cst[k][r - 1];
  Dims idx(r, 0);
  for (int64_t o = 0; o < total; o += len) {
    fn(o, offs, incs, len);
    for (size_t d = r - 1; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) offs[k] += cst[k][d];
      if (++idx[d] < cshape[d]) break;
      for (size_t k = 0; k < N; ++k) offs[k] -= cst[k][d] * cshape[d];
      idx[d] = 0;
    }
  }
}

// out[i] = f(a[i], b[i]) with broadcasting, over typed pointers: `A`, `B`, `O` are storage types.
template <typename A, typename B, typename O, typename F>
void broadcastLoop(const Tensor& a, const Tensor& b, Tensor& out, F&& f) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  forEachBroadcastRow<2>(out.shape(), {&a.shape(), &b.shape()},
                         [&](int64_t o, const std::array<int64_t, 2>& off,
                             const std::array<int64_t, 2>& inc, int64_t n) {
                           const A* x = pa + off[0];
                           const B* y = pb + off[1];
                           O* z = po + o;
                           if (inc[0] == 1 && inc[1] == 1)
                             for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
                           else if (inc[0] == 1 && inc[1] == 0)
                             for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[0]);
                           else if (inc[0] == 0 && inc[1] == 1)
                             for (int64_t i = 0; i < n; ++i) z[i] = f(x[0], y[i]);
                           else
                             for (int64_t i = 0; i < n; ++i) z[i] = f(x[i * inc[0]], y[i * inc[1]]);
                         });
}

// Checks that the static element types of inputs `from..` agree (Undefined = unknown).
void requireSameInDTypes(InferCtx& c, size_t from = 0);
// Throws unless `t` is a floating type (f32/f64/f16/bf16 or another reduced float).
void requireFloat(const KernelCtx& c, size_t i);

} // namespace aicc

namespace aicc {

// out[i] = f(x[i]) for a float tensor, f computed in double: typed loops for f32/f64, reduced
// floats (f16, bf16, f8) go through f32 and are rounded back.
template <typename F> Tensor mapFloat(const Tensor& x, F&& f) {
  DType t = x.dtype();
  if (isReducedFloat(t)) return mapFloat(x.castTo(DType::F32), f).castTo(t);
  Tensor out(t, x.shape());
  int64_t n = x.numel();
  if (t == DType::F32) {
    const float* a = x.data<float>();
    float* o = out.data<float>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(f(static_cast<double>(a[i])));
  } else if (t == DType::F64) {
    const double* a = x.data<double>();
    double* o = out.data<double>();
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
  } else {
    fail("element type {} is not a float type", dtypeName(t));
  }
  return out;
}

// out[i] = f(x[i]) over the native integer types (f is a generic lambda over the storage type).
template <typename F> Tensor mapInteger(const Tensor& x, F&& f) {
  Tensor out(x.dtype(), x.shape());
  bool done = false;
  visitNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      const T* a = x.data<T>();
      T* o = out.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<T>(f(a[i]));
      done = true;
    }
  });
  AICC_CHECK(done, "element type {} is not a supported integer type", dtypeName(x.dtype()));
  return out;
}

inline void requireSameDType(const Tensor& a, const Tensor& b) {
  AICC_CHECK(a.dtype() == b.dtype(), "inputs have different element types {} and {}",
             dtypeName(a.dtype()), dtypeName(b.dtype()));
}

// out = op(a, b) with broadcasting, out of a's element type. `op` is a generic lambda over the
// storage type (numeric types; reduced floats are computed through f32).
template <typename Op> Tensor arith(const Tensor& a, const Tensor& b, Op op) {
  requireSameDType(a, b);
  DType t = a.dtype();
  if (isReducedFloat(t)) return arith(a.castTo(DType::F32), b.castTo(DType::F32), op).castTo(t);
  Tensor out(t, broadcastDims(a.shape(), b.shape()));
  bool ok = visitNumeric(t, [&](auto tag) {
    using T = decltype(tag);
    broadcastLoop<T, T, T>(a, b, out, [&](T x, T y) { return static_cast<T>(op(x, y)); });
  });
  AICC_CHECK(ok, "unsupported element type {}", dtypeName(t));
  return out;
}

} // namespace aicc
