// The "recognize" pass keeps numerics: each real model of ../shared/models, after the pass alone
// and after the -O1 cleanup followed by it (verified after every pass), still matches the -O0
// interpreter result on test_data_set_0 (rtol 1e-4, atol 1e-5), with every node checked against
// shape inference. The lit inputs of tests/lit/passes/recognize-*.aicc are run before and after
// the pass on generated inputs, and the pass reports changes honestly (a second run finds nothing).
#include "frontend/onnx/inputs.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/verifier.h"
#include "passes/pipelines.h"
#include "passes/recognize_patterns.h"

#include "shared_models.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace aicc;

namespace {

std::map<std::string, int64_t> opCounts(const Graph& g) {
  std::map<std::string, int64_t> m;
  for (const auto& n : g.nodes) ++m[n->op];
  return m;
}

class RecognizeOnModel : public ::testing::TestWithParam<std::string> {};

TEST_P(RecognizeOnModel, KeepsNumerics) {
  std::string skip;
  auto mc = test::loadModelCase(GetParam(), skip);
  if (!mc) GTEST_SKIP() << skip;
  const std::vector<RValue>& inputs = mc->inputs;
  const std::vector<RValue>& expected = mc->expected;
  RunOptions ro;
  ro.checkTypes = true;

  for (bool cleanupFirst : {false, true}) {
    SCOPED_TRACE(cleanupFirst ? "-O1 + recognize" : "recognize");
    ImportedModel m = mc->reimport();
    PassInstrumentation inst;
    inst.verifyEach = true;
    PassManager<Model> pm(inst);
    if (cleanupFirst)
      for (auto& p : optPipeline(1)) pm.add(std::move(p));
    pm.add(makeGraphPass("recognize"));
    ASSERT_NO_THROW(pm.run(m.model));
    std::vector<RValue> got;
    ASSERT_NO_THROW(got = interpret(*m.model.graph, inputs, ro));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      auto mismatch = compareValues(expected[i], got[i], {1e-4, 1e-5});
      EXPECT_FALSE(mismatch) << "output " << i << ": " << *mismatch;
    }
    EXPECT_FALSE(recognizePatterns(m.model)) << "a second run changed the model";
    if (GetParam() == "ppocrv4-rec") {
      auto ops = opCounts(*m.model.graph);
      EXPECT_EQ(ops["LayerNormalization"], 5);
      EXPECT_EQ(ops["Attention"], 2);
      EXPECT_EQ(ops["HardSwish"], 28);
      EXPECT_EQ(ops["Swish"], 7);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, RecognizeOnModel, ::testing::ValuesIn(test::sharedModelNames()),
                         [](const auto& info) { return test::modelParamName(info.param); });

// Inputs for a parsed graph: symbolic dims fixed to 3, values generated deterministically.
std::vector<RValue> makeInputs(const Graph& g) {
  std::vector<RValue> r;
  for (const Value* in : g.inputs) {
    Value v = *in;
    for (Dim& d : *v.type.shape)
      if (!d.isStatic()) d = Dim::known(3);
    r.push_back(generateInput(v));
  }
  return r;
}

class RecognizeLit : public ::testing::TestWithParam<std::string> {};

TEST_P(RecognizeLit, SameResultsOnGeneratedInputs) {
  fs::path f = fs::path(AICC_SOURCE_DIR) / "tests" / "lit" / "passes" / GetParam();
  if (!fs::exists(f)) GTEST_SKIP() << f << " is missing";
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  Model before = parseModel(ss.str());
  Model after = parseModel(ss.str());
  std::vector<RValue> inputs = makeInputs(*before.graph);
  std::vector<RValue> want = interpret(*before.graph, inputs);
  EXPECT_TRUE(recognizePatterns(after));
  EXPECT_NO_THROW(verifyModel(after));
  EXPECT_FALSE(recognizePatterns(after));
  EXPECT_LT(after.graph->nodes.size(), before.graph->nodes.size());
  RunOptions ro;
  ro.checkTypes = true;
  std::vector<RValue> got = interpret(*after.graph, inputs, ro);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    auto mismatch = compareValues(want[i], got[i], {1e-5, 1e-6});
    EXPECT_FALSE(mismatch) << "output " << i << ": " << *mismatch;
  }
}

INSTANTIATE_TEST_SUITE_P(Lit, RecognizeLit,
                         ::testing::Values("recognize-layernorm.aicc", "recognize-gelu.aicc",
                                           "recognize-activations.aicc",
                                           "recognize-attention.aicc"),
                         [](const auto& info) { return test::modelParamName(info.param); });

TEST(RecognizePass, NoChangeWithoutPatterns) {
  Model m = parseModel(R"(graph @g(%x: f32[2,3]) {
  %s = Sigmoid(%x) : f32[2,3]
  %y = Mul(%s, %s) : f32[2,3]
  return %y, %s
})");
  EXPECT_FALSE(recognizePatterns(m));
  EXPECT_EQ(m.graph->nodes.size(), 2u);
}

} // namespace
