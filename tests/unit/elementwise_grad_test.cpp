// Gradient rules of the elementwise arithmetic ops and activations, checked against central
// finite differences in float64 (grad_check.h).
#include "grad_check.h"

#include <gtest/gtest.h>

using namespace aicc;
using namespace aicc::test;

namespace {

GradCheckInput var(Dims s, uint32_t seed, double lo = -1, double hi = 1) {
  return {randomTensor(std::move(s), seed, lo, hi), true, false};
}
GradCheckInput fixed(Tensor t) { return {std::move(t), false, false}; }
GradCheckInput omitted() { return {Tensor(), false, true}; }

Attribute f(float v) { return Attribute{v}; }
Attribute i(int64_t v) { return Attribute{v}; }
Attribute s(std::string v) { return Attribute{std::move(v)}; }

#define EXPECT_GRAD(...)                                                                           \
  do {                                                                                             \
    GradCheckResult r_ = checkOpGradient(__VA_ARGS__);                                             \
    EXPECT_LT(r_.maxRelError, 1e-6) << r_.worst;                                                   \
  } while (0)

const std::vector<Dims> kUnaryShapes = {{}, {5}, {2, 3, 4}};

void checkUnary(const std::string& op, std::map<std::string, Attribute> attrs = {}, double lo = -2,
                double hi = 2) {
  uint32_t seed = 1;
  for (const Dims& d : kUnaryShapes) {
    SCOPED_TRACE(op + " " + formatDims(d));
    EXPECT_GRAD(op, {var(d, seed++, lo, hi)}, attrs);
  }
}

// Binary broadcasting shape pairs: equal, scalar, trailing, size-1 in either operand.
const std::vector<std::pair<Dims, Dims>> kBinaryShapes = {{{2, 3}, {2, 3}},    {{2, 3}, {}},
                                                          {{}, {4}},           {{2, 3, 4}, {4}},
                                                          {{2, 1, 4}, {3, 1}}, {{1, 3}, {2, 1}}};

void checkBinary(const std::string& op, double lo = -1, double hi = 1, double lo2 = -1,
                 double hi2 = 1) {
  uint32_t seed = 10;
  for (const auto& [a, b] : kBinaryShapes) {
    SCOPED_TRACE(op + " " + formatDims(a) + " " + formatDims(b));
    EXPECT_GRAD(op, {var(a, seed, lo, hi), var(b, seed + 1, lo2, hi2)});
    // Only one operand differentiated (the other a constant).
    EXPECT_GRAD(op, {var(a, seed + 2, lo, hi), fixed(randomTensor(b, seed + 3, lo2, hi2))});
    seed += 4;
  }
}

} // namespace

TEST(ElementwiseGrad, Add) { checkBinary("Add"); }
TEST(ElementwiseGrad, Sub) { checkBinary("Sub"); }
TEST(ElementwiseGrad, Mul) { checkBinary("Mul"); }
TEST(ElementwiseGrad, Div) { checkBinary("Div", -1, 1, 0.5, 2); }
TEST(ElementwiseGrad, Pow) {
  checkBinary("Pow", 0.5, 2, -2, 2);
  // An integer exponent (only x is differentiable) and x <= 0 with it.
  EXPECT_GRAD("Pow", {var({2, 3}, 3, -2, 2), fixed(Tensor::fromI64({3}, {1}))});
  EXPECT_GRAD("Pow", {var({2, 3}, 4, -2, 2), fixed(Tensor::scalar(DType::F64, 2.0))});
}
TEST(ElementwiseGrad, Neg) { checkUnary("Neg"); }
TEST(ElementwiseGrad, Abs) { checkUnary("Abs"); }
TEST(ElementwiseGrad, Sqrt) { checkUnary("Sqrt", {}, 0.2, 3); }
TEST(ElementwiseGrad, Reciprocal) { checkUnary("Reciprocal", {}, 0.5, 2); }
TEST(ElementwiseGrad, Exp) { checkUnary("Exp"); }
TEST(ElementwiseGrad, Log) { checkUnary("Log", {}, 0.2, 3); }
TEST(ElementwiseGrad, Sin) { checkUnary("Sin"); }
TEST(ElementwiseGrad, Cos) { checkUnary("Cos"); }
TEST(ElementwiseGrad, Tanh) { checkUnary("Tanh"); }
TEST(ElementwiseGrad, Trigonometric) {
  for (const char* op : {"Tan", "Sinh", "Cosh", "Atan", "Asinh"}) checkUnary(op, {}, -1.2, 1.2);
  for (const char* op : {"Asin", "Acos", "Atanh"}) checkUnary(op, {}, -0.9, 0.9);
  checkUnary("Acosh", {}, 1.2, 3);
}
TEST(ElementwiseGrad, CastLike) {
  EXPECT_GRAD("CastLike", {var({2, 3}, 1), fixed(Tensor(DType::F64, {1}))});
  EXPECT_GRAD("CastLike", {var({2, 3}, 2), var({}, 3)}); // the type source gets a zero gradient
}
TEST(ElementwiseGrad, Erf) { checkUnary("Erf"); }
TEST(ElementwiseGrad, Identity) { checkUnary("Identity"); }
TEST(ElementwiseGrad, Cast) { checkUnary("Cast", {{"to", i(static_cast<int64_t>(DType::F64))}}); }
TEST(ElementwiseGrad, PiecewiseConstant) {
  for (const char* op : {"Sign", "Floor", "Ceil", "Round"}) checkUnary(op, {}, 0.1, 0.4);
}
TEST(ElementwiseGrad, Sigmoid) { checkUnary("Sigmoid", {}, -4, 4); }
TEST(ElementwiseGrad, Relu) { checkUnary("Relu"); }
TEST(ElementwiseGrad, ThresholdedRelu) { checkUnary("ThresholdedRelu", {{"alpha", f(0.5f)}}); }
TEST(ElementwiseGrad, LeakyRelu) {
  checkUnary("LeakyRelu");
  checkUnary("LeakyRelu", {{"alpha", f(0.3f)}});
}
TEST(ElementwiseGrad, Elu) {
  checkUnary("Elu");
  checkUnary("Elu", {{"alpha", f(0.7f)}});
}
TEST(ElementwiseGrad, Selu) {
  checkUnary("Selu");
  checkUnary("Selu", {{"alpha", f(1.5f)}, {"gamma", f(2.0f)}});
}
TEST(ElementwiseGrad, Celu) {
  checkUnary("Celu");
  checkUnary("Celu", {{"alpha", f(0.5f)}});
}
TEST(ElementwiseGrad, Softplus) { checkUnary("Softplus", {}, -5, 5); }
TEST(ElementwiseGrad, Softsign) { checkUnary("Softsign"); }
TEST(ElementwiseGrad, HardSigmoid) {
  checkUnary("HardSigmoid", {}, -4, 4);
  checkUnary("HardSigmoid", {{"alpha", f(0.5f)}, {"beta", f(0.2f)}}, -3, 3);
}
TEST(ElementwiseGrad, HardSwish) { checkUnary("HardSwish", {}, -5, 5); }
TEST(ElementwiseGrad, Gelu) {
  checkUnary("Gelu", {}, -3, 3);
  checkUnary("Gelu", {{"approximate", s("tanh")}}, -3, 3);
}
TEST(ElementwiseGrad, Mish) { checkUnary("Mish", {}, -3, 3); }
TEST(ElementwiseGrad, Swish) {
  checkUnary("Swish", {}, -3, 3);
  checkUnary("Swish", {{"alpha", f(1.7f)}}, -3, 3);
}
TEST(ElementwiseGrad, PRelu) {
  EXPECT_GRAD("PRelu", {var({2, 3, 4}, 1), var({3, 1}, 2)});
  EXPECT_GRAD("PRelu", {var({2, 3, 4}, 3), var({4}, 4)});
  EXPECT_GRAD("PRelu", {var({5}, 5), var({5}, 6)});
  EXPECT_GRAD("PRelu", {var({2, 3}, 7), fixed(randomTensor({1}, 8))});
}
TEST(ElementwiseGrad, Clip) {
  Tensor lo = Tensor::scalar(DType::F64, -0.5), hi = Tensor::scalar(DType::F64, 0.4);
  EXPECT_GRAD("Clip", {var({2, 3, 4}, 1)});
  EXPECT_GRAD("Clip", {var({2, 3, 4}, 2), fixed(lo), fixed(hi)});
  EXPECT_GRAD("Clip", {var({2, 3, 4}, 3), fixed(lo)});
  EXPECT_GRAD("Clip", {var({2, 3, 4}, 4), omitted(), fixed(hi)});
  // min > max: everything is max.
  EXPECT_GRAD("Clip", {var({5}, 5), fixed(hi), fixed(lo)});
  // Differentiating min and max too.
  EXPECT_GRAD("Clip", {var({3, 4}, 6), {lo, true, false}, {hi, true, false}});
  EXPECT_GRAD("Clip", {var({3, 4}, 7), {hi, true, false}, {lo, true, false}});
}
TEST(ElementwiseGrad, MaxMin) {
  for (const char* op : {"Max", "Min"}) {
    SCOPED_TRACE(op);
    EXPECT_GRAD(op, {var({2, 3}, 1)});
    EXPECT_GRAD(op, {var({2, 3}, 2), var({2, 3}, 3)});
    EXPECT_GRAD(op, {var({2, 3, 4}, 4), var({4}, 5), var({3, 1}, 6)});
    EXPECT_GRAD(op, {var({}, 7), var({2, 2}, 8)});
  }
}
TEST(ElementwiseGrad, SumMean) {
  for (const char* op : {"Sum", "Mean"}) {
    SCOPED_TRACE(op);
    EXPECT_GRAD(op, {var({2, 3}, 1)});
    EXPECT_GRAD(op, {var({2, 3}, 2), var({2, 3}, 3)});
    EXPECT_GRAD(op, {var({2, 3, 4}, 4), var({4}, 5), var({3, 1}, 6)});
    EXPECT_GRAD(op, {var({}, 7), fixed(randomTensor({2, 2}, 8)), var({1, 2}, 9)});
  }
}
TEST(ElementwiseGrad, Where) {
  Tensor cond(DType::Bool, {2, 3});
  for (int64_t k = 0; k < 6; ++k) cond.setI64(k, k % 3 == 1);
  Tensor cond1(DType::Bool, {3});
  cond1.setI64(0, 1);
  EXPECT_GRAD("Where", {fixed(cond), var({2, 3}, 1), var({2, 3}, 2)});
  EXPECT_GRAD("Where", {fixed(cond), var({}, 3), var({3}, 4)});
  EXPECT_GRAD("Where", {fixed(cond1), var({2, 1}, 5), var({4, 2, 3}, 6)});
}
