// Symbolic image sizes (issue #12): a conv net over [N, 3, H, W] whose shapes agree only for
// multiples of 4 (an upsampled 1/4-scale map added to a 1/2-scale one, as PaddleOCR's detector
// does at 32) gets that step from passes/dim_steps.h, compiles once, and its artifact matches the
// interpreter at several image sizes, its output dims derived from H and W (2 * (H / 4)) as the
// run's; a size off the step is refused with one line; a derived output dim of the batch (a
// Reshape to [4 * N]) is the run's too, and a reduction over the batch sums the run's samples.
#include "aicc/runtime.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "passes/dim_steps.h"
#include "runtime/artifact.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace aicc {
namespace {

namespace fs = std::filesystem;

// Conv (stride 2, then depthwise, then stride 2 again), Resize x2, the Add of two scales, a
// squeeze-excite Mul by a GlobalAveragePool, MaxPool, ConvTranspose, a Slice of channels, Concat.
// (The inputs after x are its weights: random constants, weightsToConstants.)
const char* kNet = R"(graph @net(%x: f32[N,3,H,W], %w1: f32[8,3,3,3], %wd: f32[8,1,3,3],
                                 %w2: f32[8,8,3,3], %wt: f32[8,4,2,2]) {
  %roi = Constant() {value = tensor f32[0] []} : f32[0]
  %scales = Constant() {value = tensor f32[4] [1, 1, 2, 2]} : f32[4]
  %c1 = Conv(%x, %w1) {strides = [2, 2], pads = [1, 1, 1, 1]} : f32[N,8,?,?]
  %r1 = Relu(%c1) : f32[N,8,?,?]
  %d1 = Conv(%r1, %wd) {group = 8, pads = [1, 1, 1, 1]} : f32[N,8,?,?]
  %c2 = Conv(%d1, %w2) {strides = [2, 2], pads = [1, 1, 1, 1]} : f32[N,8,?,?]
  %up = Resize(%c2, %roi, %scales) {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : f32[N,8,?,?]
  %a = Add(%r1, %up) : f32[N,8,?,?]
  %g = GlobalAveragePool(%a) : f32[N,8,1,1]
  %s = Sigmoid(%g) : f32[N,8,1,1]
  %m = Mul(%a, %s) : f32[N,8,?,?]
  %p = MaxPool(%m) {kernel_shape = [2, 2], strides = [2, 2]} : f32[N,8,?,?]
  %t = ConvTranspose(%p, %wt) {strides = [2, 2]} : f32[N,4,?,?]
  %starts = Constant() {value = tensor i64[1] [0]} : i64[1]
  %ends = Constant() {value = tensor i64[1] [4]} : i64[1]
  %axes = Constant() {value = tensor i64[1] [1]} : i64[1]
  %half = Slice(%m, %starts, %ends, %axes) : f32[N,4,?,?]
  %k = Concat(%t, %half) {axis = 1} : f32[N,8,?,?]
  %y = Tanh(%k) : f32[N,8,?,?]
  return %y
}
)";

Model weightsToConstants(Model m) {
  Graph& g = *m.graph;
  for (size_t i = 1; i < g.inputs.size(); ++i) {
    Value* w = g.inputs[i];
    Value* c = g.addConstant(w->name + "_c",
                             test::uniformTensor(*toDims(*w->type.shape), 11 + uint32_t(i)));
    for (const auto& n : g.nodes) std::replace(n->inputs.begin(), n->inputs.end(), w, c);
  }
  g.inputs.resize(1);
  return m;
}

fs::path compile(Model& m, const std::string& name, const std::vector<rt::Symbol>& ranges) {
  return test::compileArtifact(m, "aicc_dynamic_spatial_" + name, ranges);
}

TEST(DynamicSpatial, OneArtifactMatchesTheInterpreterAtEveryImageSize) {
  Model ref = weightsToConstants(parseModel(kNet)), m = weightsToConstants(parseModel(kNet));
  EXPECT_GT(countUnknownDims(*m.graph), 0); // (H+1)/2 and 2*((H+3)/4) do not agree in general
  const std::map<std::string, int64_t> steps = findDimSteps(*m.graph);
  EXPECT_EQ(steps, (std::map<std::string, int64_t>{{"H", 4}, {"W", 4}}));
  applyDimSteps(*m.graph, steps);
  EXPECT_EQ(countUnknownDims(*m.graph), 0);
  EXPECT_EQ(formatType(m.graph->outputs[0]->type), "f32[N,8,2*\"H/4\",2*\"W/4\"]");
  fs::path dir = compile(m, "net", {{"N", 1, 2}, {"H", 4, 40, 4}, {"W", 4, 40, 4}});
  runtime::LoadedArtifact art(dir.string());
  for (const Dims& d :
       std::vector<Dims>{{1, 3, 16, 16}, {2, 3, 8, 20}, {1, 3, 40, 4}, {2, 3, 36, 12}}) {
    std::vector<RValue> in = {RValue::of(test::uniformTensor(d, uint32_t(d[2] * 7 + d[3])))};
    const std::vector<RValue> want = interpret(*ref.graph, in), got = art.run(in);
    ASSERT_EQ(got[0].tensor.shape(), (Dims{d[0], 8, d[2] / 2, d[3] / 2}));
    // (sums of 72 products of weights in [-1, 1]: f32 rounding reaches a few 1e-6)
    test::expectOutputsClose(want, got, {1e-4, 1e-5});
  }
  // A size off the step: one line naming the input, the dim and the step.
  aicc_model* am = aicc_model_load(dir.c_str());
  ASSERT_TRUE(am) << aicc_last_error();
  std::vector<float> buf(3 * 10 * 8, 0.5f);
  const int64_t dims[4] = {1, 3, 10, 8};
  ASSERT_EQ(aicc_model_set_input_dims(am, 0, buf.data(), int64_t(buf.size() * 4), dims, 4), 0)
      << aicc_last_error();
  EXPECT_NE(aicc_model_run(am), 0);
  const std::string e = aicc_last_error();
  EXPECT_NE(e.find("input 'x': dim 2 (H) is 10, not a multiple of 4"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  aicc_model_free(am);
}

TEST(DynamicSpatial, DerivedOutputDimsAndReductionsAreTheRuns) {
  const char* ir = R"(graph @g(%x: f32[N,4]) {
  %shape = Constant() {value = tensor i64[1] [-1]} : i64[1]
  %s = Reshape(%x, %shape) : f32[4*N]
  %t = Relu(%s) : f32[4*N]
  %axes = Constant() {value = tensor i64[1] [0]} : i64[1]
  %sum = ReduceSum(%x, %axes) {keepdims = 0} : f32[4]
  return %t, %sum
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  fs::path dir = compile(m, "flat", {{"N", 1, 5}});
  runtime::LoadedArtifact art(dir.string());
  EXPECT_EQ(art.outputDims(0), Dims{20}); // before a run: at the bound (4 * 5)
  for (int64_t n : {1, 3, 5}) {
    std::vector<RValue> in = {RValue::of(test::uniformTensor({n, 4}, uint32_t(n)))};
    const std::vector<RValue> got = art.run(in);
    ASSERT_EQ(got[0].tensor.shape(), Dims{4 * n});
    test::expectOutputsClose(interpret(*ref.graph, in), got, {1e-6, 1e-6});
  }
}

// A plan whose derived dim or variant line is damaged is refused at load, naming the plan and the
// reason (the runtime evaluates the dim programs and opens variants: never out of its folder).
TEST(DynamicSpatial, DamagedDimProgramsAndVariantsAreRefused) {
  Model m = parseModel(R"(graph @g(%x: f32[N,4]) {
  %shape = Constant() {value = tensor i64[1] [-1]} : i64[1]
  %s = Reshape(%x, %shape) : f32[4*N]
  return %s
}
)");
  const fs::path dir = compile(m, "damaged", {{"N", 1, 5}});
  std::string plan;
  {
    std::ifstream in(dir / "model.plan");
    plan.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_NE(plan.find("=4:$0:*"), std::string::npos) << plan; // 4*N as a postfix program
  auto refused = [&](const std::string& text, const char* want) {
    {
      std::ofstream out(dir / "model.plan");
      out << text;
    }
    try {
      rt::Artifact a(dir.string());
      ADD_FAILURE() << "loaded: " << want;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = plan;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  refused(edited("=4:$0:*", "=4:$7:*"), "model.plan: malformed line 'output s f32 =4:$7:*");
  refused(edited("=4:$0:*", "=4:*"), "model.plan: malformed line");
  refused(edited("=4:$0:*", "=4:$0:/0"), "model.plan: malformed line");
  refused(edited("\ninput ", "\nvariant ../elsewhere\ninput "), "not a folder inside");
  refused(edited("\ninput ", "\nvariant variants/0\ninput "), "variants/0");
}

// Unnamed dims ('?') become symbols; two that meet in a broadcast are merged (as ONNX Runtime
// requires them equal at run time), one that meets nothing stays apart.
TEST(DynamicSpatial, UnnamedDimsAreNamedAndMergedWhereTheyMeet) {
  Model m = parseModel(R"(graph @g(%x: f32[?,4], %s: f32[?,4], %t: f32[?,3]) {
  %y = Add(%x, %s) : f32[?,4]
  %z = Relu(%t) : f32[?,3]
  return %y, %z
}
)");
  const std::vector<std::string> named = nameUnknownInputDims(*m.graph);
  EXPECT_EQ(named, (std::vector<std::string>{"x.0", "s.0", "t.0"}));
  EXPECT_EQ(countUnknownDims(*m.graph), 1); // y: x.0 and s.0 may differ
  const auto merged = mergeNamedDims(*m.graph, named);
  EXPECT_EQ(merged, (std::map<std::string, std::string>{{"s.0", "x.0"}}));
  EXPECT_EQ(countUnknownDims(*m.graph), 0);
  EXPECT_EQ(formatType(m.graph->outputs[0]->type), "f32[x.0,4]");
  EXPECT_EQ(formatType(m.graph->outputs[1]->type), "f32[t.0,3]");
}

// A Reshape to a constant shape holds a symbol at one value (an export that baked its batch in:
// [128, N, 768] to [128, 12, 64] only at N = 1); a product of two symbols, or a shape with -1,
// holds none; a count no value gives is an error naming the node.
TEST(DynamicSpatial, AReshapeToAConstantShapeFixesItsSymbol) {
  Model m = parseModel(R"(graph @g(%x: f32[128,N,768], %y: f32[S,T,4], %z: f32[B,6]) {
  %s = Constant() {value = tensor i64[3] [128, 12, 64]} : i64[3]
  %a = Reshape(%x, %s) : f32[128,12,64]
  %t = Constant() {value = tensor i64[2] [-1, 4]} : i64[2]
  %b = Reshape(%y, %t) : f32[?,4]
  %u = Constant() {value = tensor i64[2] [3, 4]} : i64[2]
  %c = Reshape(%z, %u) : f32[3,4]
  return %a, %b, %c
}
)");
  const auto pins = findPinnedDims(*m.graph);
  ASSERT_EQ(pins.size(), 2u);
  EXPECT_EQ(pins.at("N").value, 1);
  EXPECT_EQ(pins.at("N").node, "node producing 'a' (Reshape)");
  EXPECT_EQ(pins.at("B").value, 2);
  Model bad = parseModel(R"(graph @g(%x: f32[N,5]) {
  %s = Constant() {value = tensor i64[2] [3, 4]} : i64[2]
  %a = Reshape(%x, %s) : f32[3,4]
  return %a
}
)");
  try {
    findPinnedDims(*bad.graph);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node producing 'a' (Reshape): its result is [3,4]"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace aicc
