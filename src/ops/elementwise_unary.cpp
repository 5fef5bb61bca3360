// Unary math ops: Abs Neg Sign Floor Ceil Round Sqrt Reciprocal Exp Log, trigonometric and
// hyperbolic functions, Erf, IsNaN IsInf, Not, BitwiseNot.
#include "ops/elementwise.h"

#include <cmath>

namespace aicc {

namespace {

void dropConsumedInputs(ImportCtx& c) { c.node.attrs.erase("consumed_inputs"); }

// Registers a float-only unary op computing `f` in double. `legacy`: the op existed before
// opset 6 with a `consumed_inputs` attribute. `ints`: integer inputs are allowed too (computed
// in double, stored back with saturation).
template <typename F>
void floatUnary(OpRegistry& r, const char* name, int since, F f, bool legacy, bool ints = false) {
  OpBuilder b = r.op(name);
  b.since(since).inputs(1, 1).props(kElementwise).infer(inferSameAsInput0);
  b.kernel([f, ints](KernelCtx& c) -> std::vector<RValue> {
    const Tensor& x = c.in(0);
    if (isFloat(x.dtype())) return {RValue::of(mapFloat(x, f))};
    AICC_CHECK(ints && isInteger(x.dtype()), "input 0 has unsupported element type {}",
               dtypeName(x.dtype()));
    return {RValue::of(mapUnary(x, [&](double v) { return f(v); }))};
  });
  if (legacy) b.upgrade(1, 5, dropConsumedInputs, legacyConsumedInputs());
}

// Registers a unary op over floats (`f`, in double) and integers (`fi`, a generic lambda over the
// integer storage type).
template <typename F, typename FI>
void numericUnary(OpRegistry& r, const char* name, int since, F f, FI fi, bool legacy) {
  OpBuilder b = r.op(name);
  b.since(since).inputs(1, 1).props(kElementwise).infer(inferSameAsInput0);
  b.kernel([f, fi](KernelCtx& c) -> std::vector<RValue> {
    const Tensor& x = c.in(0);
    if (isFloat(x.dtype())) return {RValue::of(mapFloat(x, f))};
    return {RValue::of(mapInteger(x, fi))};
  });
  if (legacy) b.upgrade(1, 5, dropConsumedInputs, legacyConsumedInputs());
}

void inferBoolLike0(InferCtx& c) { c.setTensor(0, DType::Bool, c.inShape(0)); }

// Output bool[i] = pred(x[i]) for a float input.
template <typename P> Tensor floatPredicate(const Tensor& x, P pred) {
  AICC_CHECK(isFloat(x.dtype()),
             "input 0 has unsupported element type {} (a float type is required)",
             dtypeName(x.dtype()));
  Tensor out(DType::Bool, x.shape());
  uint8_t* o = out.data<uint8_t>();
  if (x.dtype() == DType::F32) {
    const float* a = x.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = pred(static_cast<double>(a[i])) ? 1 : 0;
  } else {
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = pred(x.getF64(i)) ? 1 : 0;
  }
  return out;
}

} // namespace

void registerElementwiseUnaryOps(OpRegistry& r) {
  numericUnary(
      r, "Abs", 1, [](double v) { return std::fabs(v); },
      [](auto v) {
        using T = decltype(v);
        if constexpr (std::is_signed_v<T>)
          return v < 0 ? wrapSub(T{0}, v) : v;
        else
          return v;
      },
      true);
  numericUnary(
      r, "Neg", 1, [](double v) { return -v; }, [](auto v) { return wrapSub(decltype(v){0}, v); },
      true);
  numericUnary(
      r, "Sign", 9, [](double v) { return std::isnan(v) ? v : (v > 0) - (v < 0); },
      [](auto v) {
        using T = decltype(v);
        if constexpr (std::is_signed_v<T>)
          return static_cast<T>((v > 0) - (v < 0));
        else
          return static_cast<T>(v != 0);
      },
      false);

  floatUnary(
      r, "Floor", 1, [](double v) { return std::floor(v); }, true);
  floatUnary(
      r, "Ceil", 1, [](double v) { return std::ceil(v); }, true);
  // Round half to even (the default floating-point rounding mode).
  floatUnary(
      r, "Round", 11, [](double v) { return std::nearbyint(v); }, false);
  floatUnary(
      r, "Sqrt", 1, [](double v) { return std::sqrt(v); }, true);
  floatUnary(
      r, "Reciprocal", 1, [](double v) { return 1.0 / v; }, true);
  floatUnary(
      r, "Exp", 1, [](double v) { return std::exp(v); }, true);
  floatUnary(
      r, "Log", 1, [](double v) { return std::log(v); }, true);
  floatUnary(
      r, "Sin", 7, [](double v) { return std::sin(v); }, false);
  floatUnary(
      r, "Cos", 7, [](double v) { return std::cos(v); }, false);
  floatUnary(
      r, "Tan", 7, [](double v) { return std::tan(v); }, false);
  floatUnary(
      r, "Asin", 7, [](double v) { return std::asin(v); }, false);
  floatUnary(
      r, "Acos", 7, [](double v) { return std::acos(v); }, false);
  floatUnary(
      r, "Atan", 7, [](double v) { return std::atan(v); }, false);
  floatUnary(
      r, "Sinh", 9, [](double v) { return std::sinh(v); }, false);
  floatUnary(
      r, "Cosh", 9, [](double v) { return std::cosh(v); }, false);
  floatUnary(
      r, "Tanh", 1, [](double v) { return std::tanh(v); }, true);
  floatUnary(
      r, "Asinh", 9, [](double v) { return std::asinh(v); }, false);
  floatUnary(
      r, "Acosh", 9, [](double v) { return std::acosh(v); }, false);
  floatUnary(
      r, "Atanh", 9, [](double v) { return std::atanh(v); }, false);
  floatUnary(
      r, "Erf", 9, [](double v) { return std::erf(v); }, false, /*ints=*/true);

  r.op("IsNaN")
      .since(9)
      .inputs(1, 1)
      .props(kElementwise)
      .infer(inferBoolLike0)
      .kernel([](KernelCtx& c) {
        return std::vector<RValue>{
            RValue::of(floatPredicate(c.in(0), [](double v) { return std::isnan(v); }))};
      });
  r.op("IsInf")
      .since(10)
      .inputs(1, 1)
      .attrInt("detect_negative", 1)
      .attrInt("detect_positive", 1)
      .props(kElementwise)
      .infer(inferBoolLike0)
      .kernel([](KernelCtx& c) {
        bool neg = c.node.attrInt("detect_negative") != 0,
             pos = c.node.attrInt("detect_positive") != 0;
        return std::vector<RValue>{RValue::of(floatPredicate(c.in(0), [&](double v) {
          return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
        }))};
      });

  r.op("Not")
      .since(1)
      .inputs(1, 1)
      .props(kElementwise)
      .infer(inferSameAsInput0)
      .kernel([](KernelCtx& c) {
        requireDType(c, 0, {DType::Bool});
        const Tensor& x = c.in(0);
        Tensor out(DType::Bool, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i)
          out.data<uint8_t>()[i] = x.data<uint8_t>()[i] ? 0 : 1;
        return std::vector<RValue>{RValue::of(out)};
      });
  r.op("BitwiseNot")
      .since(18)
      .inputs(1, 1)
      .props(kElementwise)
      .infer(inferSameAsInput0)
      .kernel([](KernelCtx& c) {
        return std::vector<RValue>{RValue::of(mapInteger(c.in(0), [](auto v) { return ~v; }))};
      });
}

} // namespace aicc
