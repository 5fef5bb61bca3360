// Binary elementwise ops with multidirectional broadcasting: Add Sub Mul Div Pow Mod BitShift,
// BitwiseAnd/Or/Xor, And Or Xor, Equal Less LessOrEqual Greater GreaterOrEqual.
#include "ops/elementwise.h"

#include <cmath>

namespace aicc {

namespace {

// ---- import: opset < 7 had "broadcast"/"axis" attributes (and consumed_inputs before 6) --------

std::vector<AttrSpec> legacyBroadcastAttrs(bool consumed) {
  std::vector<AttrSpec> v{{"broadcast", Attribute::Kind::Int, Attribute{int64_t{0}}, false},
                          {"axis", Attribute::Kind::Int, std::nullopt, false}};
  if (consumed) v.push_back(legacyConsumedInputs()[0]);
  return v;
}

// With broadcast=1 and an axis, B's dims align with A's starting at `axis`; numpy-style
// broadcasting aligns from the right, so B gets trailing 1-dims (an Unsqueeze).
void upgradeLegacyBroadcast(ImportCtx& c) {
  Node& n = c.node;
  n.attrs.erase("consumed_inputs");
  const Attribute* ax = n.attr("axis");
  bool bcast = n.attr("broadcast") && std::get<int64_t>(n.attr("broadcast")->v) != 0;
  std::optional<int64_t> axis;
  if (ax) axis = std::get<int64_t>(ax->v);
  n.attrs.erase("axis");
  n.attrs.erase("broadcast");
  if (!bcast || !axis || !n.hasInput(0) || !n.hasInput(1)) return;
  const auto& sa = n.inputs[0]->type.shape;
  const auto& sb = n.inputs[1]->type.shape;
  AICC_CHECK(sa && sb, "legacy broadcast with axis needs the ranks of both inputs");
  int64_t ra = static_cast<int64_t>(sa->size()), rb = static_cast<int64_t>(sb->size());
  int64_t a = *axis < 0 ? *axis + ra : *axis;
  AICC_CHECK(a >= 0 && a + rb <= ra, "legacy broadcast axis {} does not fit ranks {} and {}", *axis,
             ra, rb);
  appendUnitDims(c, 1, ra - a - rb);
}

// ---- kernels ---------------------------------------------------------------------------------

// bool out = pred(a, b) with broadcasting; numeric and bool inputs (strings: Equal only).
template <typename P> Tensor compare(const Tensor& a, const Tensor& b, P pred) {
  requireSameDType(a, b);
  DType t = a.dtype();
  if (isReducedFloat(t)) return compare(a.castTo(DType::F32), b.castTo(DType::F32), pred);
  Tensor out(DType::Bool, broadcastDims(a.shape(), b.shape()));
  bool ok = visitNumeric(
      t,
      [&](auto tag) {
        using T = decltype(tag);
        broadcastLoop<T, T, uint8_t>(a, b, out,
                                     [&](T x, T y) -> uint8_t { return pred(x, y) ? 1 : 0; });
      },
      /*boolAsU8=*/true);
  AICC_CHECK(ok, "unsupported element type {}", dtypeName(t));
  return out;
}

template <typename T> T intDiv(T x, T y) {
  AICC_CHECK(y != 0, "integer division by zero");
  if constexpr (std::is_signed_v<T>)
    if (y == T(-1)) return wrapSub(T{0}, x); // INT_MIN / -1 wraps instead of trapping
  return static_cast<T>(x / y);
}

template <typename T> T modOf(T x, T y, bool cmod) {
  if constexpr (std::is_integral_v<T>) {
    AICC_CHECK(y != 0, "integer modulo by zero");
    if constexpr (std::is_signed_v<T>) {
      if (y == T(-1)) return T{0};
      T r = static_cast<T>(x % y);
      if (!cmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
      return r;
    } else {
      return static_cast<T>(x % y);
    }
  } else {
    T r = std::fmod(x, y);
    if (!cmod && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  }
}

int64_t ipow(int64_t base, int64_t e) {
  if (e < 0) { // integer result of 1 / base^-e, truncated
    if (base == 1) return 1;
    if (base == -1) return (e % 2) ? -1 : 1;
    AICC_CHECK(base != 0, "0 raised to a negative integer power");
    return 0;
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (uint64_t n = static_cast<uint64_t>(e); n; n >>= 1, b *= b)
    if (n & 1) result *= b;
  return static_cast<int64_t>(result);
}

std::vector<RValue> powKernel(KernelCtx& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  if (a.dtype() == DType::F32 && b.dtype() == DType::F32) {
    Tensor out(DType::F32, broadcastDims(a.shape(), b.shape()));
    broadcastLoop<float, float, float>(a, b, out, [](float x, float y) {
      return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y)));
    });
    return {RValue::of(out)};
  }
  if (isInteger(a.dtype()) && isInteger(b.dtype())) return {RValue::of(mapBinaryI64(a, b, ipow))};
  AICC_CHECK((isFloat(a.dtype()) || isInteger(a.dtype())) &&
                 (isFloat(b.dtype()) || isInteger(b.dtype())),
             "unsupported element types {} and {}", dtypeName(a.dtype()), dtypeName(b.dtype()));
  return {RValue::of(mapBinary(a, b, [](double x, double y) { return std::pow(x, y); }))};
}

// ---- inference and data propagation ----------------------------------------------------------

void inferSameTypeBroadcast(InferCtx& c) {
  requireSameInDTypes(c);
  inferBroadcast(c);
}

void inferCompare(InferCtx& c) {
  requireSameInDTypes(c);
  inferBroadcast(c, DType::Bool);
}

// Shape arithmetic on propagated shape values: static values are computed, symbolic ones become
// dim expressions (ir/dim_expr.h), so `Shape -> Gather -> Mul -> Concat -> Reshape` keeps N*S.
void propagateArith(InferCtx& c, char op) {
  const auto* pa = c.shapeValue(0);
  if (!pa) return;
  std::vector<Dim> av = *pa; // shapeValue() may reuse its buffer
  const auto* pb = c.shapeValue(1);
  if (!pb) return;
  std::vector<Dim> bv = *pb;
  if (av.empty() || bv.empty()) return; // an empty operand: nothing to compute
  if (av.size() != bv.size() && av.size() != 1 && bv.size() != 1) return;
  size_t n = std::max(av.size(), bv.size());
  std::vector<Dim> out(n);
  for (size_t i = 0; i < n; ++i) {
    const Dim& x = av[av.size() == 1 ? 0 : i];
    const Dim& y = bv[bv.size() == 1 ? 0 : i];
    // Static or symbolic (ir/dim_expr.h; unknown when a result could be negative or overflows).
    // '/' of sizes: integer division, exact for dims (never negative), by a positive constant
    // or an exact divisor.
    switch (op) {
    case '+':
      out[i] = dimAdd(x, y);
      break;
    case '-':
      out[i] = dimSub(x, y);
      break;
    case '*':
      out[i] = dimMul(x, y);
      break;
    case '/':
      if (y.isStatic() && y.value > 0)
        out[i] = dimFloorDiv(x, y.value);
      else if (auto ex = dimExpr(x), ey = dimExpr(y); ex && ey)
        if (auto q = ex->exactDiv(*ey)) out[i] = dimOf(*q);
      break;
    }
  }
  c.setShapeValue(0, std::move(out));
}

// Registers a same-type arithmetic op (Add, Sub, Mul, Div) with typed kernels.
template <typename Op>
void arithOp(OpRegistry& r, const char* name, char sym, uint32_t props, Op op) {
  r.op(name)
      .since(1)
      .inputs(2, 2)
      .props(kElementwise | props)
      .infer([sym](InferCtx& c) {
        inferSameTypeBroadcast(c);
        propagateArith(c, sym);
      })
      .kernel([op](KernelCtx& c) {
        return std::vector<RValue>{RValue::of(arith(c.in(0), c.in(1), op))};
      })
      .upgrade(1, 6, upgradeLegacyBroadcast, legacyBroadcastAttrs(true));
}

template <typename P>
void compareOp(OpRegistry& r, const char* name, int since, uint32_t props, P pred, bool legacy) {
  OpBuilder b = r.op(name);
  b.since(since).inputs(2, 2).props(kElementwise | props).infer(inferCompare);
  b.kernel([pred](KernelCtx& c) {
    return std::vector<RValue>{RValue::of(compare(c.in(0), c.in(1), pred))};
  });
  if (legacy) b.upgrade(1, 6, upgradeLegacyBroadcast, legacyBroadcastAttrs(false));
}

std::vector<RValue> equalKernel(KernelCtx& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  if (a.dtype() != DType::String)
    return {RValue::of(compare(a, b, [](auto x, auto y) { return x == y; }))};
  requireSameDType(a, b);
  Dims shape = broadcastDims(a.shape(), b.shape());
  Tensor out(DType::Bool, shape);
  BroadcastIndexer ia(a.shape(), shape), ib(b.shape(), shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data<uint8_t>()[i] = a.strings()[ia(i)] == b.strings()[ib(i)] ? 1 : 0;
  return {RValue::of(out)};
}

// Bool -> bool logical op.
template <typename P> void logicalOp(OpRegistry& r, const char* name, P pred) {
  r.op(name)
      .since(1)
      .inputs(2, 2)
      .props(kElementwise | kCommutative)
      .infer(inferCompare)
      .kernel([pred](KernelCtx& c) {
        requireDType(c, 0, {DType::Bool});
        requireDType(c, 1, {DType::Bool});
        return std::vector<RValue>{RValue::of(
            compare(c.in(0), c.in(1), [&](uint8_t x, uint8_t y) { return pred(x != 0, y != 0); }))};
      })
      .upgrade(1, 6, upgradeLegacyBroadcast, legacyBroadcastAttrs(false));
}

// Integer-only bitwise op.
template <typename Op> void bitwiseOp(OpRegistry& r, const char* name, Op op) {
  r.op(name)
      .since(18)
      .inputs(2, 2)
      .props(kElementwise | kCommutative)
      .infer(inferSameTypeBroadcast)
      .kernel([op](KernelCtx& c) {
        AICC_CHECK(isInteger(c.in(0).dtype()), "input 0 has unsupported element type {}",
                   dtypeName(c.in(0).dtype()));
        return std::vector<RValue>{RValue::of(arith(c.in(0), c.in(1), [&](auto x, auto y) {
          using T = decltype(x);
          if constexpr (std::is_integral_v<T>)
            return static_cast<T>(op(x, y));
          else
            return x;
        }))};
      });
}

} // namespace

void registerElementwiseBinaryOps(OpRegistry& r) {
  arithOp(r, "Add", '+', kCommutative, [](auto x, auto y) { return wrapAdd(x, y); });
  arithOp(r, "Sub", '-', 0, [](auto x, auto y) { return wrapSub(x, y); });
  arithOp(r, "Mul", '*', kCommutative, [](auto x, auto y) { return wrapMul(x, y); });
  arithOp(r, "Div", '/', 0, [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>)
      return intDiv(x, y);
    else
      return x / y;
  });

  r.op("Pow")
      .since(1)
      .inputs(2, 2)
      .props(kElementwise)
      .infer([](InferCtx& c) { inferBroadcast(c); })
      .kernel(powKernel)
      .upgrade(1, 6, upgradeLegacyBroadcast, legacyBroadcastAttrs(false));

  r.op("Mod")
      .since(10)
      .inputs(2, 2)
      .attrInt("fmod", 0)
      .props(kElementwise)
      .infer(inferSameTypeBroadcast)
      .kernel([](KernelCtx& c) {
        bool cmod = c.node.attrInt("fmod") != 0;
        return std::vector<RValue>{RValue::of(
            arith(c.in(0), c.in(1), [cmod](auto x, auto y) { return modOf(x, y, cmod); }))};
      });

  r.op("BitShift")
      .since(11)
      .inputs(2, 2)
      .attr("direction", Attribute::Kind::String, /*required=*/true)
      .props(kElementwise)
      .infer(inferSameTypeBroadcast)
      .kernel([](KernelCtx& c) {
        std::string dir = c.node.attrString("direction");
        AICC_CHECK(dir == "LEFT" || dir == "RIGHT",
                   "attribute 'direction' must be LEFT or RIGHT, got '{}'", dir);
        requireDType(c, 0, {DType::U8, DType::U16, DType::U32, DType::U64});
        bool left = dir == "LEFT";
        return std::vector<RValue>{RValue::of(arith(c.in(0), c.in(1), [left](auto x, auto y) {
          using T = decltype(x);
          if constexpr (std::is_unsigned_v<T>) {
            if (y >= sizeof(T) * 8) return T{0};
            return static_cast<T>(left ? x << y : x >> y);
          } else {
            return x;
          }
        }))};
      });

  bitwiseOp(r, "BitwiseAnd", [](auto x, auto y) { return x & y; });
  bitwiseOp(r, "BitwiseOr", [](auto x, auto y) { return x | y; });
  bitwiseOp(r, "BitwiseXor", [](auto x, auto y) { return x ^ y; });

  logicalOp(r, "And", [](bool x, bool y) { return x && y; });
  logicalOp(r, "Or", [](bool x, bool y) { return x || y; });
  logicalOp(r, "Xor", [](bool x, bool y) { return x != y; });

  r.op("Equal")
      .since(1)
      .inputs(2, 2)
      .props(kElementwise | kCommutative)
      .infer(inferCompare)
      .kernel(equalKernel)
      .upgrade(1, 6, upgradeLegacyBroadcast, legacyBroadcastAttrs(false));
  compareOp(
      r, "Less", 1, 0, [](auto x, auto y) { return x < y; }, true);
  compareOp(
      r, "Greater", 1, 0, [](auto x, auto y) { return x > y; }, true);
  compareOp(
      r, "LessOrEqual", 12, 0, [](auto x, auto y) { return x <= y; }, false);
  compareOp(
      r, "GreaterOrEqual", 12, 0, [](auto x, auto y) { return x >= y; }, false);
}

} // namespace aicc
