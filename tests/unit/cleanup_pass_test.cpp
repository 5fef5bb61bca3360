// The cleanup passes (fold-shapes, constant-fold, dce, cse) keep numerics: each real model of
// ../shared/models, after each pass alone and after the -O1 pipeline (the four to a fixed point),
// verified after every pass, still matches the -O0 interpreter result on test_data_set_0
// (rtol 1e-4, atol 1e-5) and the stored reference outputs, with every node checked against shape
// inference. Plus small in-memory checks of the passes' contracts.
#include "frontend/onnx/inputs.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/constant_folding.h"
#include "passes/dead_code_elimination.h"
#include "passes/fold_shape_ops.h"
#include "passes/pipelines.h"

#include "shared_models.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;
using namespace aicc;

namespace {

size_t countNodes(Graph& g) {
  size_t n = g.nodes.size();
  for (const auto& node : g.nodes)
    for (const auto& [_, a] : node->attrs)
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) n += countNodes(**sg);
  return n;
}

class CleanupOnModel : public ::testing::TestWithParam<std::string> {};

TEST_P(CleanupOnModel, KeepsNumerics) {
  std::string skip;
  auto mc = test::loadModelCase(GetParam(), skip);
  if (!mc) GTEST_SKIP() << skip;
  ImportedModel& ref = mc->ref;
  const std::vector<RValue>& inputs = mc->inputs;
  fs::path data = mc->dir / "test_data_set_0";
  const std::vector<RValue>& expected = mc->expected;
  RunOptions ro;
  ro.checkTypes = true;
  size_t before = countNodes(*ref.model.graph);

  std::vector<std::vector<std::string>> runs = {
      {"fold-shapes"}, {"constant-fold"}, {"dce"}, {"cse"}, {}};
  for (const auto& passes : runs) {
    std::string what = passes.empty() ? "-O1" : passes[0];
    SCOPED_TRACE(what);
    ImportedModel m = mc->reimport();
    PassInstrumentation inst;
    inst.verifyEach = true;
    PassManager<Model> pm(inst);
    if (passes.empty())
      for (auto& p : optPipeline(1)) pm.add(std::move(p));
    else
      pm.add(makeGraphPass(passes[0]));
    ASSERT_NO_THROW(pm.run(m.model));
    EXPECT_LE(countNodes(*m.model.graph), before);
    std::vector<RValue> got;
    ASSERT_NO_THROW(got = interpret(*m.model.graph, inputs, ro));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      auto mismatch = compareValues(expected[i], got[i], {1e-4, 1e-5});
      EXPECT_FALSE(mismatch) << "output " << i << ": " << *mismatch;
      fs::path f = data / ("output_" + std::to_string(i) + ".pb");
      if (!fs::exists(f)) continue;
      RValue stored = readValueFile(f.string(), m.model.graph->outputs[i]->type);
      auto off = compareValues(stored, got[i], {1e-3, 1e-4});
      EXPECT_FALSE(off) << "output " << i << " vs stored reference: " << *off;
    }
    // A second run of the pipeline finds nothing left to do.
    if (passes.empty()) {
      PassManager<Model> again(inst);
      for (auto& p : optPipeline(1)) again.add(std::move(p));
      size_t n = countNodes(*m.model.graph);
      again.run(m.model);
      EXPECT_EQ(countNodes(*m.model.graph), n);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, CleanupOnModel, ::testing::ValuesIn(test::sharedModelNames()),
                         [](const auto& info) { return test::modelParamName(info.param); });

Model parse(const std::string& text) { return parseModel(text); }

TEST(CleanupPasses, ReportChangesHonestly) {
  Model m = parse(R"(graph @g(%x: f32[2]) {
  %k = const f32[2] [1, 2]
  %a = Add(%k, %k) : f32[2]
  %b = Add(%x, %a) : f32[2]
  %c = Add(%x, %a) : f32[2]
  %d = Relu(%x) : f32[2]
  %s = Sub(%b, %c) : f32[2]
  return %s
})");
  EXPECT_TRUE(foldConstants(m, 1 << 20));
  EXPECT_FALSE(foldConstants(m, 1 << 20));
  EXPECT_TRUE(eliminateCommonSubexpressions(m));
  EXPECT_FALSE(eliminateCommonSubexpressions(m));
  EXPECT_TRUE(eliminateDeadCode(m));
  EXPECT_FALSE(eliminateDeadCode(m));
  EXPECT_FALSE(foldShapeOps(m));
  EXPECT_EQ(m.graph->nodes.size(), 2u); // %b = Add(%x, %a), %s = Sub(%b, %b)
  std::vector<RValue> out = interpret(*m.graph, {RValue::of(Tensor::fromF32({1, 2}))});
  EXPECT_EQ(out[0].tensor.getF64(0), 0.0);
}

TEST(CleanupPasses, ConstantFoldRespectsLimit) {
  Model m = parse(R"(graph @g(%x: f32[4]) {
  %k = const f32[1] [1]
  %reps = const i64[1] [4]
  %t = Tile(%k, %reps) : f32[4]
  %y = Add(%x, %t) : f32[4]
  return %y
})");
  EXPECT_FALSE(foldConstants(m, 3));
  EXPECT_TRUE(foldConstants(m, 4));
}

TEST(CleanupPasses, DceKeepsOuterScopeProducers) {
  Model m = parse(R"(graph @g(%x: f32[2], %c: bool[]) {
  %o = Neg(%x) : f32[2]
  %y = If(%c) {
    else_branch = graph @e() {
      return %x
    },
    then_branch = graph @t() {
      return %o
    }
  } : f32[2]
  return %y
})");
  EXPECT_FALSE(eliminateDeadCode(m));
  EXPECT_EQ(m.graph->nodes.size(), 2u);
}

} // namespace
