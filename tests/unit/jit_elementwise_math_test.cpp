// Elementwise ops lowered through the loop IR's math table (loop/ir.h mathFunctions): the inverse
// and hyperbolic functions, IsNaN / IsInf, Mean, Shrink, float Mod and Pow of mixed types (in
// f64, cast to the base's type, truncating for integers); and the integer bitwise
// ops (BitwiseAnd/Or/Xor/Not, BitShift). Each through the JIT against the interpreter on values
// that reach their edges (domain ends, NaN, infinities, the largest finite value, mixed signs,
// shifts by the type's width and more).
#include "jit_check.h"

#include <cmath>
#include <limits>

namespace aicc {
namespace {

TEST(JitElementwiseMath, InverseAndHyperbolicFunctions) {
  // Each function on its domain, the ends included (acos(1) = 0, atanh(-1) = -inf).
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"Acos", {-1, -0.5, 0, 0.3, 0.99, 1}},      {"Asin", {-1, -0.25, 0, 0.5, 0.75, 1}},
      {"Acosh", {1, 1.5, 2, 10, 100, 1e6}},       {"Asinh", {-1e6, -2, -0.1, 0, 0.5, 30}},
      {"Atanh", {-1, -0.9, -0.1, 0, 0.5, 0.999}}, {"Cosh", {-20, -1, 0, 0.5, 3, 40}}};
  for (const auto& [op, v] : cases)
    for (const std::string type : {"f32", "f64"}) {
      SCOPED_TRACE(op + " " + type);
      const Model m = parseWithShapes("graph @g(%x: " + type + "[6]) {\n  %y = " + op +
                                      "(%x)\n  return %y\n}\n");
      const DType t = *dtypeFromName(type);
      expectJitMatches(m, {RValue::of(tensorOf(t, v))}, {1e-6, 0}, "");
    }
}

TEST(JitElementwiseMath, IsNaNAndIsInf) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> v = {0, -1.5, nan, inf, -inf, 3.4028234663852886e38, -2e38, 7};
  for (const std::string type : {"f32", "f64", "f16"}) {
    const DType t = *dtypeFromName(type);
    for (const std::string attrs : {"", " {detect_negative = 0}", " {detect_positive = 0}",
                                    " {detect_negative = 0, detect_positive = 0}"}) {
      SCOPED_TRACE(type + attrs);
      const Model m = parseWithShapes("graph @g(%x: " + type + "[8]) {\n  %a = IsInf(%x)" + attrs +
                                      "\n  %b = IsNaN(%x)\n  return %a, %b\n}\n");
      expectJitMatches(m, {RValue::of(tensorOf(t, v))}, {0, 0}, "");
    }
  }
}

TEST(JitElementwiseMath, MeanShrinkAndFloatMod) {
  // Mean of three inputs with broadcasting: summed in f64, one rounding, as the interpreter.
  Model mean = parseWithShapes("graph @g(%a: f32[2,3], %b: f32[3], %c: f32[2,1]) {\n"
                               "  %y = Mean(%a, %b, %c)\n  return %y\n}\n");
  Tensor a = tensorOf(DType::F32, {1e8, 1, -3, 0.1, 0.2, 0.3});
  a = a.reshaped({2, 3});
  Tensor c = tensorOf(DType::F32, {1e-8, -7}).reshaped({2, 1});
  expectJitMatches(mean,
                   {RValue::of(a), RValue::of(tensorOf(DType::F32, {1, 3e-8, 2})), RValue::of(c)},
                   {0, 0}, "");
  // Shrink: below -lambd add bias, above lambd subtract it, zero between.
  Model shrink =
      parseWithShapes("graph @g(%x: f32[7]) {\n  %y = Shrink(%x) {bias = 1.5, lambd = 2.0}\n"
                      "  return %y\n}\n");
  expectJitMatches(shrink, {RValue::of(tensorOf(DType::F32, {-5, -2, -1.9, 0, 1.9, 2, 7.25}))},
                   {0, 0}, "");
  // Float Mod (fmod = 1): C's fmod, the sign of the dividend, exact.
  for (const std::string type : {"f32", "f64"}) {
    SCOPED_TRACE(type);
    const DType t = *dtypeFromName(type);
    Model mod = parseWithShapes("graph @g(%a: " + type + "[6], %b: " + type +
                                "[6]) {\n  %y = Mod(%a, %b) {fmod = 1}\n  return %y\n}\n");
    expectJitMatches(mod,
                     {RValue::of(tensorOf(t, {5.5, -5.5, 5.5, -5.5, 1e10, 0.3})),
                      RValue::of(tensorOf(t, {2, 2, -2, -2, 3.25, 0.1}))},
                     {0, 0}, "");
  }
}

TEST(JitElementwiseMath, BitwiseOpsAndShifts) {
  for (const std::string type : {"u8", "i16", "i32", "u64"}) {
    SCOPED_TRACE(type);
    const DType t = *dtypeFromName(type);
    const bool u = type[0] == 'u';
    Model m = parseWithShapes("graph @g(%a: " + type + "[6], %b: " + type +
                              "[6]) {\n  %x = BitwiseAnd(%a, %b)\n  %y = BitwiseOr(%a, %b)\n"
                              "  %z = BitwiseXor(%a, %b)\n  %w = BitwiseNot(%a)\n"
                              "  return %x, %y, %z, %w\n}\n");
    const std::vector<int64_t> a = {0, 1, 0x5a, u ? 200 : -1, u ? 255 : -128, 77};
    const std::vector<int64_t> b = {0, 3, 0x0f, u ? 13 : -77, 1, u ? 255 : -1};
    expectJitMatches(m, {RValue::of(tensorOfInts(t, a)), RValue::of(tensorOfInts(t, b))}, {0, 0},
                     "");
  }
  // Shifts of unsigned types (ONNX BitShift), amounts up to and past the width: 0 there.
  for (const std::string type : {"u8", "u16", "u32", "u64"}) {
    SCOPED_TRACE(type);
    const DType t = *dtypeFromName(type);
    const int64_t w = int64_t(dtypeSize(t) * 8);
    Model m =
        parseWithShapes("graph @g(%a: " + type + "[7], %b: " + type +
                        "[7]) {\n  %l = BitShift(%a, %b) {direction = \"LEFT\"}\n"
                        "  %r = BitShift(%a, %b) {direction = \"RIGHT\"}\n  return %l, %r\n}\n");
    expectJitMatches(m,
                     {RValue::of(tensorOfInts(t, {1, 255, 6, 1, 3, 200, 7})),
                      RValue::of(tensorOfInts(t, {0, 1, 3, w - 1, w, w + 5, 200 % w}))},
                     {0, 0}, "");
  }
}

TEST(JitElementwiseMath, PowOfMixedTypes) {
  const std::vector<std::pair<std::string, std::string>> cases = {{"f32", "i32"}, {"f32", "u64"},
                                                                  {"f64", "i64"}, {"i32", "f32"},
                                                                  {"i64", "f32"}, {"u8", "f64"}};
  for (const auto& [base, exponent] : cases) {
    SCOPED_TRACE(base + " ** " + exponent);
    const DType bt = *dtypeFromName(base), et = *dtypeFromName(exponent);
    Model m = parseWithShapes("graph @g(%a: " + base + "[6], %b: " + exponent +
                              "[6]) {\n  %y = Pow(%a, %b)\n  return %y\n}\n");
    const bool su = bt == DType::U8, eu = et == DType::U64;
    Tensor a =
        tensorOf(bt, {2, su ? 3.0 : -3.0, 0, 1.5 * !isInteger(bt) + 7, 10, su ? 200.0 : -1.0});
    Tensor b = tensorOf(et, {10, 3, 0, 2, eu ? 5.0 : -2.0, isFloat(et) ? 0.5 : 2.0});
    expectJitMatches(m, {RValue::of(a), RValue::of(b)}, {1e-7, 0}, "");
  }
}

// Integer Pow (loop/lower_int_pow.cpp): wrapping powers, negative exponents (bases 1 and -1, and
// others: 0), broadcasting both ways, in and out of a fused chain; exact.
TEST(JitElementwiseMath, IntegerPowWrapsAsTheReference) {
  const std::vector<int64_t> bases = {2, -3, 1, -1, 7, 0, 10, -2, 3, 5, 255, -128};
  const std::vector<int64_t> exps = {0, 1, 5, 63, -1, -2, 3, 40, -3, 2};
  for (const char* t : {"i32", "i64", "u8", "i8"})
    for (const char* et : {"i64", "i32"}) {
      SCOPED_TRACE(std::string(t) + " ** " + et);
      const DType dt = *dtypeFromName(t), de = *dtypeFromName(et);
      Tensor x(dt, {3, 4}), e(de, {4});
      for (int64_t i = 0; i < 12; ++i) x.setI64(i, bases[size_t(i)]);
      for (int64_t i = 0; i < 4; ++i) e.setI64(i, exps[size_t(i * 2 + (dt == DType::I64))]);
      if (!isSigned(dt)) // (no negative exponents: the reference's 1 / 0 for a base of 0)
        for (int64_t i = 0; i < 4; ++i) e.setI64(i, std::abs(e.getI64(i)));
      Model m = parseWithShapes(std::string("graph @g(%x: ") + t + "[3,4], %e: " + et +
                                "[4]) {\n  %p = Pow(%x, %e)\n  %q = Add(%p, %x)\n"
                                "  %s = Pow(%e, %e)\n  return %q, %s\n}\n");
      // (Pow(%e, %e): 0 ** -1 never occurs: e has no zero with a negative partner)
      expectJitMatches(m, {RValue::of(x), RValue::of(e)}, {0, 0}, "elementwise");
    }
}

} // namespace
} // namespace aicc
