// The layout, fusion and scheduling passes (assign-layout, fuse-epilogue, fuse-elementwise,
// schedule-memory) keep
// numerics: each real model of ../shared/models, after the passes alone (bit-exact) and after the
// -O1 cleanup followed by them, verified after every pass, matches the -O0 interpreter result on
// test_data_set_0 (rtol 1e-4, atol 1e-5), with every node (aicc.Fused bodies included) checked
// against shape inference. schedule-memory never raises the peak (on every shared model) and
// lowers it where the order matters. Plus small in-memory checks of the passes' contracts.
#include "frontend/onnx/inputs.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/fuse_elementwise.h"
#include "passes/fuse_epilogue.h"
#include "passes/memory_schedule.h"
#include "passes/pipelines.h"
#include "passes/shape_inference.h"

#include "shared_models.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;
using namespace aicc;

namespace {

int64_t countFused(const Graph& g) {
  int64_t n = 0;
  for (const auto& node : g.nodes) {
    n += node->domain == "aicc" && node->op == "Fused";
    for (const auto& [_, a] : node->attrs)
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) n += countFused(**sg);
  }
  return n;
}

void runPasses(Model& m, const std::vector<std::string>& names, int optLevel = 0) {
  PassInstrumentation inst;
  inst.verifyEach = true;
  PassManager<Model> pm(inst);
  for (auto& p : optPipeline(optLevel)) pm.add(std::move(p));
  for (const auto& n : names) pm.add(makeGraphPass(n));
  pm.run(m);
}

class FusionOnModel : public ::testing::TestWithParam<std::string> {};

TEST_P(FusionOnModel, KeepsNumericsAndNeverRaisesPeak) {
  std::string skip;
  auto mc = test::loadModelCase(GetParam(), skip);
  if (!mc) GTEST_SKIP() << skip;
  const std::vector<RValue>& inputs = mc->inputs;
  const std::vector<RValue>& expected = mc->expected;
  RunOptions ro;
  ro.checkTypes = true;

  for (int level : {0, 1}) {
    SCOPED_TRACE(level == 0 ? "fusion passes alone" : "-O1 then fusion passes");
    ImportedModel m = mc->reimport();
    // assign-layout first, as for an AVX-512 target: the interpreter runs its blocked regions
    // (aicc.Reorder, aicc.ConvNchwc) through their reference definitions.
    ASSERT_NO_THROW(
        runPasses(m.model, {"assign-layout", "fuse-epilogue", "fuse-elementwise", "dce"}, level));
    // Fused nodes pass shape inference (their bodies are re-inferred) and the verifier.
    ASSERT_NO_THROW(inferShapes(*m.model.graph));
    ASSERT_NO_THROW(verifyModel(m.model));
    int64_t peakBefore = peakMemoryBytes(*m.model.graph);
    ASSERT_NO_THROW(runPasses(m.model, {"schedule-memory"}));
    EXPECT_LE(peakMemoryBytes(*m.model.graph), peakBefore);
    std::vector<RValue> got;
    ASSERT_NO_THROW(got = interpret(*m.model.graph, inputs, ro));
    ASSERT_EQ(got.size(), expected.size());
    Tolerance tol = level == 0 ? Tolerance{0, 0} : Tolerance{1e-4, 1e-5}; // alone: bit-exact
    for (size_t i = 0; i < got.size(); ++i) {
      auto mismatch = compareValues(expected[i], got[i], tol);
      EXPECT_FALSE(mismatch) << "output " << i << ": " << *mismatch;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, FusionOnModel, ::testing::ValuesIn(test::sharedModelNames()),
                         [](const auto& info) { return test::modelParamName(info.param); });

Tensor floats(Dims shape, float start, float step) {
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.setF64(i, start + step * static_cast<double>(i));
  return t;
}

// Parses `text`, runs it, applies `passes`, checks the verifier, that `fusedExpected` aicc.Fused
// nodes appeared and that the outputs are bit-identical.
void checkExact(const std::string& text, const std::vector<RValue>& inputs,
                const std::vector<std::string>& passes, int64_t fusedExpected) {
  Model m = parseModel(text);
  RunOptions ro;
  ro.checkTypes = true;
  std::vector<RValue> before = interpret(*m.graph, inputs, ro);
  runPasses(m, passes);
  EXPECT_EQ(countFused(*m.graph), fusedExpected) << printModel(m);
  std::vector<RValue> after = interpret(*m.graph, inputs, ro);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    auto mismatch = compareValues(before[i], after[i], {0, 0});
    EXPECT_FALSE(mismatch) << "output " << i << ": " << *mismatch;
  }
}

TEST(FuseEpilogue, ConvBiasResidualSiLUAndMatMulGelu) {
  std::string text = R"(graph @g(%x: f32[1,2,3,3], %s: f32[1,2,3,3], %m: f32[2,3]) {
    %w = const f32[2,2,1,1] [0.5, -1, 2, 0.25]
    %b = const f32[1,2,1,1] [0.1, -0.2]
    %wm = const f32[3,2] [1, 2, 3, -1, -2, -3]
    %bm = const f32[2] [0.5, -0.5]
    %c = Conv(%x, %w) {kernel_shape = [1, 1]} : f32[1,2,3,3]
    %a = Add(%c, %b) : f32[1,2,3,3]
    %r = Add(%s, %a) : f32[1,2,3,3]
    %sg = Sigmoid(%r) : f32[1,2,3,3]
    %sl = Mul(%sg, %r) : f32[1,2,3,3]
    %mm = MatMul(%m, %wm) : f32[2,2]
    %ab = Add(%mm, %bm) : f32[2,2]
    %ge = Gelu(%ab) : f32[2,2]
    return %sl, %ge
  })";
  std::vector<RValue> in = {RValue::of(floats({1, 2, 3, 3}, -2, 0.25f)),
                            RValue::of(floats({1, 2, 3, 3}, 1, -0.125f)),
                            RValue::of(floats({2, 3}, -1, 0.5f))};
  checkExact(text, in, {"fuse-epilogue"}, 2);
}

TEST(FuseElementwise, ChainTreeAndSoftmax) {
  std::string text = R"(graph @g(%x: f32[2,4], %y: f32[4]) {
    %k = const f32[] [0.5]
    %m = Mul(%x, %k) : f32[2,4]
    %e = Exp(%y) : f32[4]
    %a = Add(%m, %e) : f32[2,4]
    %t = Tanh(%a) : f32[2,4]
    %u = Sub(%t, %x) : f32[2,4]
    %s = Softmax(%u) {axis = -1} : f32[2,4]
    return %s
  })";
  std::vector<RValue> in = {RValue::of(floats({2, 4}, -1, 0.3f)), RValue::of(floats({4}, 0, 0.1f))};
  checkExact(text, in, {"fuse-elementwise"}, 1);
  // The [4]-shaped Exp stays outside the [2,4] group; the group ends in the Softmax.
  Model m = parseModel(text);
  runPasses(m, {"fuse-elementwise"});
  ASSERT_EQ(m.graph->nodes.size(), 2u);
  EXPECT_EQ(m.graph->nodes[0]->op, "Exp");
  EXPECT_EQ(m.graph->nodes[1]->attrString("kind"), "reduction");
}

TEST(FuseElementwise, MultiUseAndGraphOutputsStayOutside) {
  std::string text = R"(graph @g(%x: f32[3]) {
    %a = Exp(%x) : f32[3]
    %b = Neg(%a) : f32[3]
    %c = Abs(%b) : f32[3]
    %d = Sqrt(%c) : f32[3]
    %t = Transpose(%a) : f32[3]
    return %b, %d, %t
  })";
  Model m = parseModel(text);
  runPasses(m, {"fuse-elementwise"});
  // %a has a user outside (Transpose), %b is a graph output: only Abs + Sqrt are fused.
  ASSERT_EQ(countFused(*m.graph), 1);
  for (const auto& n : m.graph->nodes) {
    if (n->op == "Fused") {
      EXPECT_EQ(std::get<GraphPtr>(n->attr("body")->v)->nodes.size(), 2u);
    }
  }
  EXPECT_EQ(m.graph->outputs[1]->name, "d");
}

TEST(MemorySchedule, LowersPeakWhereOrderMatters) {
  Model m = parseModel(R"(graph @g(%x: f32[1024]) {
    %a = Exp(%x) : f32[1024]
    %b = Sin(%x) : f32[1024]
    %c = Cos(%x) : f32[1024]
    %ra = ReduceSum(%a) : f32[1]
    %rb = ReduceSum(%b) : f32[1]
    %rc = ReduceSum(%c) : f32[1]
    %s = Sum(%ra, %rb, %rc) : f32[1]
    return %s
  })");
  int64_t before = peakMemoryBytes(*m.graph);
  EXPECT_EQ(before, 3 * 4096 + 4);
  std::vector<RValue> in = {RValue::of(floats({1024}, -1, 0.002f))};
  std::vector<RValue> ref = interpret(*m.graph, in);
  EXPECT_TRUE(scheduleForMemory(m));
  verifyModel(m);
  EXPECT_LT(peakMemoryBytes(*m.graph), before);
  EXPECT_EQ(peakMemoryBytes(*m.graph), 4096 + 3 * 4);
  EXPECT_FALSE(compareValues(ref[0], interpret(*m.graph, in)[0], {0, 0}));
  EXPECT_FALSE(scheduleForMemory(m)); // already best: unchanged
}

TEST(MemorySchedule, LivenessReport) {
  Model m = parseModel(R"(graph @g(%x: f32[N,4], %y: f32[8]) {
    %a = Relu(%x) : f32[N,4]
    %b = Neg(%y) : f32[8]
    %c = Exp(%b) : f32[8]
    return %a, %c
  })");
  MemoryReport r = analyzeMemory(*m.graph);
  ASSERT_EQ(r.tensors.size(), 3u);
  EXPECT_EQ(r.unknownSizes, 1); // %a: dynamic
  EXPECT_FALSE(r.tensors[0].known);
  EXPECT_EQ(r.tensors[0].lastUse, 2u); // graph output: live to the end
  EXPECT_EQ(r.tensors[1].bytes, 32);
  EXPECT_EQ(r.tensors[1].lastUse, 2u);
  EXPECT_EQ(r.peakBytes, 64);
}

} // namespace
