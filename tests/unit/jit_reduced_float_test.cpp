// f16 and bf16 tensors through the JIT: 16-bit storage, f32 arithmetic rounded to the type after
// every op (codegen/llvm/emit_llvm.cpp). Element moves and elementwise ops (Cast, CastLike,
// arithmetic, Max, Transpose, Concat, ...) compile and match the interpreter bit for bit,
// including the values conversions get wrong most easily (ties, subnormals, overflow to inf,
// NaN); ops that accumulate (reductions) fall back with the reason, and compile after the pass
// widen-reduced-floats (-O1 and up: in f32 between Casts, within f16's rounding of the reference).
// 4/2-bit integers (a byte each) compile in casts (and Identity), which wrap to the width as the
// reference's do; so do float8 / float4 (saturating casts, Cast's default, and saturate = 0 into
// float8) and float8e8m0 (each round_mode).
#include "ir/parser.h"
#include "jit_check.h"
#include "passes/shape_inference.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace aicc {
namespace {

// Random f32 values over binades up to 2^maxExp, with the hard cases at the front (`special`).
Tensor inputs(const Dims& d, uint32_t seed, bool special, int maxExp) {
  Tensor x(DType::F32, d);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-2, 2);
  std::uniform_int_distribution<int> ex(-30, maxExp);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::ldexp(mant(rng), ex(rng));
  const float hard[] = {0.0f,
                        -0.0f,
                        1.0f + 1.0f / 2048, // an f16 tie: rounds to even (1.0)
                        1.0f + 3.0f / 2048, // the other tie: rounds up
                        1.0f + 1.0f / 256,  // a bf16 tie
                        65504.0f,           // f16 max
                        65520.0f,           // rounds to f16 inf
                        1e-7f,              // f16 subnormal
                        3e-8f,              // rounds to f16 zero or the smallest subnormal
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        3.4e38f, // overflows f16, not bf16
                        std::numeric_limits<float>::quiet_NaN()};
  for (size_t i = 0; special && i < std::size(hard) && int64_t(i) < x.numel(); ++i)
    x.data<float>()[i] = hard[i];
  return x;
}

// The hard cases in the first input only, and only where no Max/Min sees a NaN (the compiled ones
// return the other operand, maxnum-style, the interpreter NaN) or an integer cast an infinity
// (undefined); without them, values up to 2^7 (no inf - inf in f16 products).
void check(const std::string& text, bool special) {
  SCOPED_TRACE(text);
  Model m = parseModel(text);
  inferShapes(*m.graph);
  std::vector<RValue> in;
  uint32_t seed = 3;
  for (const Value* v : m.graph->inputs) {
    in.push_back(RValue::of(inputs(*toDims(*v->type.shape), seed, special && seed == 3, 7)));
    ++seed;
  }
  expectJitMatches(m, in, {0, 0}, "kind = ");
}

TEST(JitReducedFloat, CastsArithmeticAndMovesMatchExactly) {
  // f32 -> f16 -> arithmetic in f16 -> transpose -> bf16 -> f32.
  check("graph @g(%x: f32[4,37], %y: f32[4,37]) {\n"
        "  %a = Cast(%x) {to = 10}\n  %b = Cast(%y) {to = 10}\n"
        "  %p = Mul(%a, %b)\n  %s = Add(%p, %a)\n  %m = Max(%s, %b)\n"
        "  %t = Transpose(%m) {perm = [1, 0]}\n  %c = Cast(%t) {to = 16}\n"
        "  %e = Exp(%c)\n  %z = Cast(%e) {to = 1}\n  return %z\n}\n",
        false);
  // Casts from f64 (through f32, as the interpreter rounds), NaN and the infinities included;
  // to and from integers (finite values in range: out-of-range conversions are undefined).
  check("graph @g(%x: f32[64], %y: f32[64]) {\n  %d = Cast(%x) {to = 11}\n"
        "  %h = Cast(%d) {to = 10}\n  %w = Cast(%h) {to = 11}\n  %b = Cast(%x) {to = 16}\n"
        "  %v = Cast(%b) {to = 1}\n  %c = const f32[] [1000]\n  %yc = Min(%y, %c)\n"
        "  %yh = Cast(%yc) {to = 10}\n  %i = Cast(%yh) {to = 6}\n  %k = Cast(%i) {to = 16}\n"
        "  %q = Cast(%k) {to = 1}\n  return %w, %v, %q\n}\n",
        true);
  // Concat and Slice of bf16.
  check("graph @g(%x: f32[3,5], %y: f32[3,4]) {\n  %a = Cast(%x) {to = 16}\n"
        "  %b = Cast(%y) {to = 16}\n  %c = Concat(%a, %b) {axis = 1}\n"
        "  %st = const i64[1] [1]\n  %en = const i64[1] [8]\n  %ax = const i64[1] [1]\n"
        "  %s = Slice(%c, %st, %en, %ax)\n  %z = Cast(%s) {to = 1}\n  return %z\n}\n",
        true);
}

TEST(JitReducedFloat, AccumulatingOpsFallBackWithTheReason) {
  Model m = parseModel("graph @g(%x: f32[8,9]) {\n  %h = Cast(%x) {to = 10}\n"
                       "  %ax = const i64[1] [1]\n  %s = ReduceSum(%h, %ax)\n"
                       "  %z = Cast(%s) {to = 1}\n  return %z\n}\n");
  inferShapes(*m.graph);
  const std::vector<RValue> in = {RValue::of(inputs({8, 9}, 5, false, 7))};
  runtime::JitExecutable exe(*m.graph);
  const auto got = exe.run(in);
  const auto want = interpret(*m.graph, in);
  EXPECT_FALSE(compareValues(want[0], got[0], {0, 0}));
  ASSERT_EQ(exe.stats().fallback, 1);
  EXPECT_NE(exe.stats().fallbackReasons[0].find(
                "f16/bf16 and 4/2-bit tensors are lowered for element moves"),
            std::string::npos)
      << exe.stats().fallbackReasons[0];
}

// widen-reduced-floats: f16 MatMul, Softmax, Conv and a reduction (bf16) in f32 between Casts,
// every node compiled, against the interpreter on the graph as given (f16 results: within a few
// units of f16's last place).
TEST(JitReducedFloat, ComputeHeavyOpsWidenToF32) {
  const char* ir = "graph @g(%x: f32[2,8,6,6], %w: f32[4,8,3,3], %a: f32[6,16]) {\n"
                   "  %xh = Cast(%x) {to = 10}\n  %wh = Cast(%w) {to = 10}\n"
                   "  %c = Conv(%xh, %wh) {pads = [1, 1, 1, 1]}\n"
                   "  %ah = Cast(%a) {to = 10}\n  %m = MatMul(%c, %ah)\n"
                   "  %s = Softmax(%m) {axis = -1}\n  %b = Cast(%m) {to = 16}\n"
                   "  %ax = const i64[1] [3]\n  %r = ReduceSum(%b, %ax)\n"
                   "  %z = Cast(%s) {to = 1}\n  %q = Cast(%r) {to = 1}\n  return %z, %q\n}\n";
  Model ref = parseModel(ir), m = parseModel(ir);
  inferShapes(*ref.graph);
  test::optimize(m, 2);
  const std::vector<RValue> in = {RValue::of(test::uniformTensor({2, 8, 6, 6}, 1)),
                                  RValue::of(test::uniformTensor({4, 8, 3, 3}, 2, -0.3f, 0.3f)),
                                  RValue::of(test::uniformTensor({6, 16}, 3))};
  runtime::JitExecutable exe(*m.graph);
  const auto got = exe.run(in);
  EXPECT_EQ(exe.stats().fallback, 0)
      << (exe.stats().fallbackReasons.empty() ? "" : exe.stats().fallbackReasons[0]);
  const auto want = interpret(*ref.graph, in);
  EXPECT_FALSE(compareValues(want[0], got[0], {4e-3, 1e-4})); // (f16: 2^-11 relative)
  EXPECT_FALSE(compareValues(want[1], got[1], {2e-2, 2e-2})); // (bf16: 2^-8)
}

// float8e8m0 (a power of two per code): into it under each round_mode, saturating or not, from
// f32 (many binades, the hard cases: 0, ties, f32 subnormals, inf, NaN, the largest finite) and
// f16, and back to f32 and f16; bit for bit.
TEST(JitReducedFloat, Float8E8M0CastsMatchExactly) {
  for (const char* mode : {"up", "down", "nearest"})
    for (int sat : {1, 0}) {
      SCOPED_TRACE(testing::Message() << mode << " saturate " << sat);
      const std::string attrs = std::string("{to = 24, round_mode = \"") + mode +
                                "\", saturate = " + std::to_string(sat) + "}";
      check("graph @g(%x: f32[300]) {\n  %a = Cast(%x) " + attrs +
                "\n  %b = Cast(%a) {to = 1}\n"
                "  %h = Cast(%x) {to = 10}\n  %c = Cast(%h) " +
                attrs +
                "\n  %d = Cast(%c) {to = 10}\n"
                "  %e = Cast(%d) {to = 1}\n  return %b, %e\n}\n",
            true);
    }
  // Values past f32's largest exponent and below its smallest, as raw codes through f64.
  check("graph @g(%x: f32[300]) {\n  %y = Mul(%x, %x)\n  %a = Cast(%y) {to = 24}\n"
        "  %b = Cast(%a) {to = 11}\n  return %b\n}\n",
        true);
}

TEST(JitReducedFloat, FourAndTwoBitIntegerCastsMatchExactly) {
  // f32 (over many binades, the hard cases first) and i32 into each 4/2-bit type and back.
  for (const char* to : {"22", "21", "26", "25"}) { // INT4, UINT4, INT2, UINT2
    SCOPED_TRACE(std::string("to = ") + to);
    check(std::string("graph @g(%x: f32[64], %y: f32[64]) {\n  %a = Cast(%x) {to = ") + to +
              "}\n  %b = Cast(%a) {to = 1}\n  %i = Cast(%y) {to = 6}\n  %c = Cast(%i) {to = " + to +
              "}\n  %d = Cast(%c) {to = 7}\n  %e = Identity(%c)\n  %f = Cast(%e) {to = 10}"
              "\n  %g2 = Cast(%f) {to = 1}\n  return %b, %d, %g2\n}\n",
          true);
  }
}

TEST(JitReducedFloat, Float8AndFloat4CastsMatchExactly) {
  // f32 over many binades with the hard cases (ties, max, past max, inf, NaN, -0), f16 and f64
  // sources, into each type and back.
  for (const char* to : {"17", "18", "19", "20", "23"}) { // E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E2M1
    SCOPED_TRACE(std::string("to = ") + to);
    check(std::string("graph @g(%x: f32[300]) {\n  %a = Cast(%x) {to = ") + to +
              "}\n  %b = Cast(%a) {to = 1}\n  %h = Cast(%x) {to = 10}\n  %c = CastLike(%h, %a)\n"
              "  %d = Cast(%c) {to = 11}\n  %e = Cast(%d) {to = " +
              to + "}\n  %f = Cast(%e) {to = 10}\n  return %b, %d, %f\n}\n",
          true);
  }
  // saturate = 0: past the largest finite value to inf (E5M2) or NaN (the others), stored as
  // such (a float8 output) and read back.
  for (const char* to : {"17", "18", "19", "20"}) {
    SCOPED_TRACE(std::string("saturate = 0, to = ") + to);
    check(std::string("graph @g(%x: f32[300]) {\n  %a = Cast(%x) {to = ") + to +
              ", saturate = 0}\n  %b = Cast(%a) {to = 1}\n  %h = Cast(%x) {to = 10}\n"
              "  %c = CastLike(%h, %a) {saturate = 0}\n  return %a, %b, %c\n}\n",
          true);
  }
}

} // namespace
} // namespace aicc
