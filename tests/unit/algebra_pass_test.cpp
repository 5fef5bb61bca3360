// The algebra passes (simplify, fold-affine) keep numerics and report changes honestly: each real
// model of ../shared/models, after each pass alone and after both to a fixed point (verified after
// every pass), still matches the -O0 interpreter result on test_data_set_0 (rtol 1e-4,
// atol 1e-5), with every node checked against shape inference; a second run changes nothing.
// Plus small in-memory checks: folded BatchNormalization numerics, passes that must not fire.
#include "frontend/onnx/inputs.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/verifier.h"
#include "passes/algebraic_simplify.h"
#include "passes/fold_affine_into_conv.h"
#include "passes/pipelines.h"

#include "shared_models.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

namespace fs = std::filesystem;
using namespace aicc;

namespace {

int64_t countOp(const Graph& g, const std::string& op) {
  int64_t n = 0;
  for (const auto& node : g.nodes) n += node->op == op;
  return n;
}

GraphPass algebraGroup() {
  return GraphPass::group("algebra", {makeGraphPass("simplify"), makeGraphPass("fold-affine")},
                          true);
}

class AlgebraOnModel : public ::testing::TestWithParam<std::string> {};

TEST_P(AlgebraOnModel, KeepsNumerics) {
  std::string skip;
  auto mc = test::loadModelCase(GetParam(), skip);
  if (!mc) GTEST_SKIP() << skip;
  const std::vector<RValue>& inputs = mc->inputs;
  const std::vector<RValue>& expected = mc->expected;
  RunOptions ro;
  ro.checkTypes = true;

  for (const std::string what : {"simplify", "fold-affine", "both"}) {
    SCOPED_TRACE(what);
    ImportedModel m = mc->reimport();
    PassInstrumentation inst;
    inst.verifyEach = true;
    PassManager<Model> pm(inst);
    pm.add(what == "both" ? algebraGroup() : makeGraphPass(what));
    ASSERT_NO_THROW(pm.run(m.model));
    std::vector<RValue> got;
    ASSERT_NO_THROW(got = interpret(*m.model.graph, inputs, ro));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      auto mismatch = compareValues(expected[i], got[i], {1e-4, 1e-5});
      EXPECT_FALSE(mismatch) << "output " << i << ": " << *mismatch;
    }
    if (what == "both") {
      // Fixed point reached: nothing left to do, and the passes say so.
      EXPECT_FALSE(simplifyAlgebra(m.model));
      EXPECT_FALSE(foldAffineIntoConv(m.model));
      EXPECT_EQ(countOp(*m.model.graph, "BatchNormalization"), 0) << "a BatchNormalization is left";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, AlgebraOnModel, ::testing::ValuesIn(test::sharedModelNames()),
                         [](const auto& info) { return test::modelParamName(info.param); });

Tensor randomTensor(DType dt, Dims shape, uint32_t seed, double lo, double hi) {
  Tensor t(dt, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.setF64(i, u(rng));
  return t;
}

// Conv(3x3, group 2) -> BN -> Mul by [C,1,1] -> Add [1,C,1,1], with random weights: folded into
// one Conv whose result matches the original within float rounding.
TEST(AlgebraPasses, FoldedConvMatches) {
  Model m = parseModel(R"(graph @g(%x: f32[2,4,5,5]) {
  %w = const f32[6,2,3,3] <elided>
  %b = const f32[6] <elided>
  %s = const f32[6] <elided>
  %bb = const f32[6] <elided>
  %mu = const f32[6] <elided>
  %var = const f32[6] <elided>
  %k = const f32[6,1,1] <elided>
  %q = const f32[1,6,1,1] <elided>
  %c = Conv(%x, %w, %b) {group = 2, kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : f32[2,6,5,5]
  %n = BatchNormalization(%c, %s, %bb, %mu, %var) : f32[2,6,5,5]
  %p = Mul(%n, %k) : f32[2,6,5,5]
  %y = Add(%p, %q) : f32[2,6,5,5]
  return %y
})");
  uint32_t seed = 1;
  for (Value* c : m.graph->constants) {
    bool positive = c->name == "var";
    c->constant = randomTensor(DType::F32, *toDims(*c->type.shape), seed++, positive ? 0.1 : -1,
                               positive ? 2 : 1);
  }
  std::vector<RValue> in = {RValue::of(randomTensor(DType::F32, {2, 4, 5, 5}, 99, -1, 1))};
  RunOptions ro;
  ro.checkTypes = true;
  auto expected = interpret(*m.graph, in, ro);
  EXPECT_TRUE(foldAffineIntoConv(m));
  EXPECT_FALSE(foldAffineIntoConv(m));
  ASSERT_NO_THROW(verifyModel(m));
  ASSERT_EQ(m.graph->nodes.size(), 1u);
  EXPECT_EQ(m.graph->nodes[0]->op, "Conv");
  EXPECT_EQ(m.graph->outputs[0]->name, "y");
  auto got = interpret(*m.graph, in, ro);
  auto mismatch = compareValues(expected[0], got[0], {1e-4, 1e-5});
  EXPECT_FALSE(mismatch) << *mismatch;
}

// A BatchNormalization with no producer to fold into becomes Mul + Add, bit-exact for f32.
// The kernel computes x * a + b in double and rounds once; Mul then Add by a, b rounded to f32
// rounds three more times, so the two agree to a few f32 ulps (4 ulps allowed: 2.4e-7 relative).
TEST(AlgebraPasses, UnfoldableBatchNormBecomesAffineWithinRounding) {
  Model m = parseModel(R"(graph @g(%x: f32[1,3,4,4]) {
  %s = const f32[3] [0.5, 2, -1.25]
  %b = const f32[3] [0.1, -0.2, 0.3]
  %mu = const f32[3] [0.01, 1, -3]
  %var = const f32[3] [0.7, 1.3, 2.9]
  %y = BatchNormalization(%x, %s, %b, %mu, %var) : f32[1,3,4,4]
  return %y
})");
  std::vector<RValue> in = {RValue::of(randomTensor(DType::F32, {1, 3, 4, 4}, 7, -3, 3))};
  auto expected = interpret(*m.graph, in);
  EXPECT_TRUE(foldAffineIntoConv(m));
  ASSERT_NO_THROW(verifyModel(m));
  EXPECT_EQ(countOp(*m.graph, "BatchNormalization"), 0);
  EXPECT_EQ(countOp(*m.graph, "Mul"), 1);
  EXPECT_EQ(countOp(*m.graph, "Add"), 1);
  auto got = interpret(*m.graph, in);
  auto bad = compareTensors(expected[0].tensor, got[0].tensor, {.rtol = 2.4e-7, .atol = 1e-6});
  EXPECT_FALSE(bad) << *bad;
}

TEST(AlgebraPasses, NothingToDoReportsNoChange) {
  Model m = parseModel(R"(graph @g(%x: f32[2,3], %w: f32[3,3], %p: f32[3]) {
  %one = const f32[2,3] [1, 1, 1, 1, 1, 2]
  %h = Cast(%x) {to = 10} : f16[2,3]
  %f = Cast(%h) {to = 1} : f32[2,3]
  %t = Transpose(%f) {perm = [1, 0]} : f32[3,2]
  %r = Relu(%t) : f32[3,2]
  %m = Mul(%x, %one) : f32[2,3]
  %g = Gemm(%m, %w) : f32[2,3]
  %n, %rm, %rv = BatchNormalization(%g, %p, %p, %p, %p) {training_mode = 1} : f32[2,3], f32[3], f32[3]
  return %r, %n, %rm, %rv
})");
  EXPECT_FALSE(simplifyAlgebra(m));
  EXPECT_FALSE(foldAffineIntoConv(m));
  EXPECT_EQ(m.graph->nodes.size(), 7u);
}

TEST(AlgebraPasses, SimplifyReachesFixedPointAndKeepsOutputs) {
  Model m = parseModel(R"(graph @g(%x: f32[2,3]) {
  %one = const f32[] [1]
  %a = Identity(%x) : f32[2,3]
  %b = Mul(%a, %one) : f32[2,3]
  %t = Transpose(%b) {perm = [1, 0]} : f32[3,2]
  %e = Exp(%t) : f32[3,2]
  %y = Transpose(%e) {perm = [1, 0]} : f32[2,3]
  return %y
})");
  EXPECT_TRUE(simplifyAlgebra(m));
  EXPECT_FALSE(simplifyAlgebra(m));
  ASSERT_NO_THROW(verifyModel(m));
  ASSERT_EQ(m.graph->nodes.size(), 1u);
  EXPECT_EQ(m.graph->nodes[0]->op, "Exp");
  EXPECT_EQ(m.graph->outputs[0]->name, "y");
}

} // namespace
