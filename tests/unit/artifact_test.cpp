// Ahead-of-time artifacts (runtime/artifact.h, `aicc compile --emit so`): compiled, written,
// loaded back through the C API (include/aicc/runtime.h) and run, against the interpreter on every
// shared model that compiles completely (the others must be refused with the nodes named); bad
// inputs and damaged artifacts give clear errors.
#include "aicc/runtime.h"
#include "backend/target.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "passes/pass_manager.h"
#include "passes/pipelines.h"
#include "passes/shape_inference.h"
#include "runtime/artifact.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace aicc {
namespace {

namespace fs = std::filesystem;

void optimize2(Model& m) { test::optimize(m, 2); }

fs::path freshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("aicc_artifact_test_" + name);
  fs::remove_all(d);
  return d;
}

// Compiles g into dir; runs it through the C API with `inputs`; returns the outputs.
std::vector<RValue> compileAndRun(const Graph& g, const fs::path& dir,
                                  const std::vector<RValue>& inputs) {
  loop::LowerOptions lo;
  lo.runtimeKernels = true;
  runtime::ArtifactSpec spec = runtime::buildArtifact(g, lo);
  runtime::writeArtifact(spec, dir.string(), nativeTarget());
  aicc_model* m = aicc_model_load(dir.c_str());
  EXPECT_TRUE(m) << aicc_last_error();
  if (!m) return {};
  EXPECT_EQ(aicc_model_num_inputs(m), int(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_EQ(aicc_model_set_input(m, int(i), inputs[i].tensor.raw(), inputs[i].tensor.nbytes()), 0)
        << aicc_last_error();
  EXPECT_EQ(aicc_model_run(m), 0) << aicc_last_error();
  std::vector<RValue> out;
  for (int i = 0; i < aicc_model_num_outputs(m); ++i) {
    int64_t dims[8];
    int rank = aicc_model_output_dims(m, i, dims, 8);
    auto dt = dtypeFromName(aicc_model_output_dtype(m, i));
    EXPECT_TRUE(dt && rank >= 0 && rank <= 8);
    Tensor t(*dt, Dims(dims, dims + rank));
    size_t bytes = 0;
    const void* p = aicc_model_output(m, i, &bytes);
    EXPECT_TRUE(p) << aicc_last_error();
    EXPECT_EQ(bytes, t.nbytes());
    if (p) std::memcpy(t.raw(), p, t.nbytes());
    out.push_back(RValue::of(std::move(t)));
  }
  aicc_model_free(m);
  return out;
}

class SharedArtifact : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedArtifact, CompilesLoadsAndMatchesTheInterpreter) {
  std::string skip;
  auto mc = test::loadModelCase(GetParam(), skip);
  if (!mc) GTEST_SKIP() << skip;
  ImportedModel im = mc->reimport();
  // Static shapes from the test inputs (what `aicc compile --dim` / `--shape` do).
  std::map<std::string, int64_t> dims;
  for (size_t i = 0; i < im.model.graph->inputs.size(); ++i) {
    Type& t = im.model.graph->inputs[i]->type;
    if (!t.shape || t.shape->size() != mc->inputs[i].tensor.shape().size()) continue;
    for (size_t d = 0; d < t.shape->size(); ++d) {
      Dim& dim = (*t.shape)[d];
      if (dim.isStatic()) continue;
      if (!dim.symbol.empty()) dims[dim.symbol] = mc->inputs[i].tensor.shape()[d];
      else dim = Dim::known(mc->inputs[i].tensor.shape()[d]);
    }
  }
  specializeDims(im.model, dims);
  optimize2(im.model);
  loop::LowerOptions lo;
  lo.runtimeKernels = true;
  std::optional<runtime::ArtifactSpec> spec;
  try {
    spec = runtime::buildArtifact(*im.model.graph, lo);
  } catch (const Error& e) {
    // Refused: the message must name the nodes without a lowering, or the input whose shape
    // cannot be made static.
    std::string msg = e.what();
    bool named = msg.find("cannot be compiled ahead of time") != std::string::npos ||
                 msg.find("has the dynamic shape") != std::string::npos;
    EXPECT_TRUE(named) << msg;
    FAIL() << GetParam() << " no longer compiles ahead of time (every shared model did): "
           << msg.substr(0, msg.find('\n', msg.find('\n') + 1));
  }
  auto got = compileAndRun(*im.model.graph, freshDir(GetParam()), mc->inputs);
  test::expectOutputsClose(mc->expected, got, {1e-4, 1e-5});
}

INSTANTIATE_TEST_SUITE_P(Shared, SharedArtifact, ::testing::ValuesIn(test::sharedModelNames()),
                         [](const auto& info) { return test::modelParamName(info.param); });

TEST(Artifact, BadInputsAndDamagedArtifactsGiveClearErrors) {
  Model m = parseModel("graph @g(%x: f32[2,3], %y: f32[3]) {\n  %z = Add(%x, %y) : f32[2,3]\n"
                       "  %r = Relu(%z) : f32[2,3]\n  return %r\n}\n");
  fs::path dir = freshDir("bad");
  loop::LowerOptions lo;
  lo.runtimeKernels = true;
  runtime::writeArtifact(runtime::buildArtifact(*m.graph, lo), dir.string(), nativeTarget());
  aicc_model* am = aicc_model_load(dir.c_str());
  ASSERT_TRUE(am) << aicc_last_error();
  float x[6] = {1, -2, 3, -4, 5, -6}, y[3] = {0.5f, 0.5f, 0.5f};
  EXPECT_NE(aicc_model_set_input(am, 0, x, 5 * sizeof(float)), 0);
  EXPECT_NE(std::string(aicc_last_error()).find("input 'x': expected 24 bytes"), std::string::npos)
      << aicc_last_error();
  EXPECT_NE(aicc_model_set_input(am, 2, x, sizeof(x)), 0);
  EXPECT_NE(std::string(aicc_last_error()).find("out of range"), std::string::npos);
  ASSERT_EQ(aicc_model_set_input(am, 0, x, sizeof(x)), 0);
  EXPECT_NE(aicc_model_run(am), 0); // y missing
  EXPECT_NE(std::string(aicc_last_error()).find("input 'y' was not set"), std::string::npos)
      << aicc_last_error();
  ASSERT_EQ(aicc_model_set_input(am, 1, y, sizeof(y)), 0);
  ASSERT_EQ(aicc_model_run(am), 0) << aicc_last_error();
  size_t bytes = 0;
  const float* r = static_cast<const float*>(aicc_model_output(am, 0, &bytes));
  ASSERT_TRUE(r);
  EXPECT_EQ(bytes, sizeof(x));
  const float want[6] = {1.5f, 0, 3.5f, 0, 5.5f, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r[i], want[i]) << i;
  EXPECT_EQ(aicc_model_output(am, 1, &bytes), nullptr);
  aicc_model_free(am);
  // Checked tensors: dtype and shape named.
  runtime::LoadedArtifact art(dir.string());
  Tensor wrongShape(DType::F32, {3, 2}), yt(DType::F32, {3}), wrongType(DType::F64, {2, 3});
  try {
    art.run({RValue::of(wrongShape), RValue::of(yt)});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x': dim 0 is 3, the model was compiled for 2 "
                                         "[2,3]"),
              std::string::npos)
        << e.what();
  }
  try {
    art.run({RValue::of(Tensor(DType::F32, {6})), RValue::of(yt)});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x': rank 1, the model takes rank 2 [2,3]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(art.run({RValue::of(wrongType), RValue::of(yt)}), Error);
  EXPECT_THROW(art.run({RValue::of(yt)}), Error);
  // Code compiled for ISA features this CPU lacks is refused, naming them.
  {
    std::ifstream in(dir / "model.plan");
    std::stringstream plan;
    plan << in.rdbuf();
    std::string text = plan.str(), fake;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      fake += (line.rfind("requires ", 0) == 0 ? std::string("requires t nosuchisa") : line) + "\n";
    EXPECT_NE(fake.find("requires t nosuchisa"), std::string::npos);
    std::ofstream(dir / "model.plan") << fake;
    EXPECT_EQ(aicc_model_load(dir.c_str()), nullptr);
    EXPECT_NE(std::string(aicc_last_error()).find("needs nosuchisa that this CPU lacks"),
              std::string::npos)
        << aicc_last_error();
    std::ofstream(dir / "model.plan") << text;
  }
  // Damaged artifacts.
  EXPECT_EQ(aicc_model_load((dir / "nope").c_str()), nullptr);
  EXPECT_NE(std::string(aicc_last_error()).find("no model.plan"), std::string::npos);
  // Each damage is one error naming the file and the reason (never a signal): the folder is
  // restored from `pristine` between cases.
  const fs::path pristine = dir.string() + ".pristine";
  fs::remove_all(pristine);
  fs::copy(dir, pristine);
  auto damaged = [&](const char* what, const std::function<void()>& damage, const char* expect) {
    fs::remove_all(dir);
    fs::copy(pristine, dir);
    damage();
    EXPECT_EQ(aicc_model_load(dir.c_str()), nullptr) << what;
    EXPECT_NE(std::string(aicc_last_error()).find(expect), std::string::npos)
        << what << ": " << aicc_last_error();
  };
  auto editPlan = [&](const std::string& from, const std::string& to) {
    std::ifstream in(dir / "model.plan");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string t = ss.str();
    size_t at = t.find(from);
    ASSERT_NE(at, std::string::npos) << from << " not in\n" << t;
    t.replace(at, from.size(), to);
    std::ofstream(dir / "model.plan") << t;
  };
  damaged(
      "weights grown", [&] { std::ofstream(dir / "model.weights", std::ios::app) << "extra"; },
      "model.weights' holds");
  damaged(
      "library changed",
      [&] {
        std::fstream w(dir / "model.so", std::ios::in | std::ios::out | std::ios::binary);
        w.seekp(100);
        w.put('\x7f');
      },
      "model.so' does not match the plan's content hash");
  damaged(
      "library truncated", [&] { fs::resize_file(dir / "model.so", 1000); },
      "model.so' holds 1000 bytes");
  damaged(
      "binding past its region",
      [&] { std::ofstream(dir / "model.plan", std::ios::app) << "task task0 x A:0:99999999\n"; },
      "reaches past");
  // The first task (Add: x, y, result) loses its result binding, then x's shrinks.
  damaged(
      "binding removed", [&] { editPlan(" I:1:12 A:0:24", " I:1:12"); },
      "has 2 bindings; task0 takes 3");
  damaged(
      "binding shrunk", [&] { editPlan(" I:0:24 I:1:12", " I:0:8 I:1:12"); },
      "binding 0 has 8 bytes; task0 takes 24");
  damaged(
      "size not a number", [&] { editPlan("\narena ", "\narena x"); }, "malformed line");
  damaged(
      "jump backwards", [&] { std::ofstream(dir / "model.plan", std::ios::app) << "jump x @0\n"; },
      "not forward");
  damaged(
      "a call binding a dynamic slot", [&] { editPlan(" I:0:24 I:1:12", " D:0:0 I:1:12"); },
      "binds a dynamic value but is not a fallback task");
  // A copy shares a dynamic value only into another slot: never into the arena or from it.
  for (const char* copy : {"copy x D:0:0 A:0:0\n", "copy x A:0:0 D:0:0\n", "copy x D:0:0\n"})
    damaged(
        copy, [&] { std::ofstream(dir / "model.plan", std::ios::app) << copy; },
        "binds a dynamic value but is not a fallback task");
  fs::remove_all(dir);
  fs::copy(pristine, dir);
  fs::remove_all(pristine);
}

// An If on a run-time condition: both branches compiled, each run takes one. The branches read
// outer values, return an outer value, a constant and a nested If's result; each is checked
// against the interpreter with the condition true and false.
TEST(Artifact, IfRunsTheBranchItsConditionPicks) {
  Model m = parseModel(R"(graph @g(%x: f32[2,3], %c: bool[], %d: bool[]) {
  %e = Exp(%x) : f32[2,3]
  %y, %z = If(%c) {
    else_branch = graph @else() {
      %k = const f32[2,3] [1, 2, 3, 4, 5, 6]
      return %e, %k
    },
    then_branch = graph @then() {
      %a = Relu(%x) : f32[2,3]
      %b = Add(%a, %e) : f32[2,3]
      %n = If(%d) {
        else_branch = graph @ne() {
          %s = Sigmoid(%b) : f32[2,3]
          return %s
        },
        then_branch = graph @nt() {
          return %x
        }
      } : f32[2,3]
      return %b, %n
    }
  } : f32[2,3], f32[2,3]
  %w = Mul(%y, %z) : f32[2,3]
  return %w, %y
})");
  inferShapes(*m.graph);
  Tensor x = Tensor::fromF32({-1, 0.5f, 2, -3, 4, 0.25f}, {2, 3});
  for (int c = 0; c < 2; ++c)
    for (int d = 0; d < 2; ++d) {
      Tensor tc(DType::Bool, {}), td(DType::Bool, {});
      tc.setI64(0, c);
      td.setI64(0, d);
      std::vector<RValue> in = {RValue::of(x), RValue::of(tc), RValue::of(td)};
      auto want = interpret(*m.graph, in);
      auto got = compileAndRun(*m.graph, freshDir(fmt::format("if{}{}", c, d)), in);
      test::expectOutputsClose(want, got, {1e-6, 1e-6});
    }
}

// A branch whose shapes do not resolve for the compiled input shapes becomes a Fail task: the
// build names it, and taking it at run time is an error, never garbage.
TEST(Artifact, UncompilableBranchFailsOnlyWhenTaken) {
  loop::LowerOptions lo;
  lo.runtimeKernels = true;
  Model g = parseModel(R"(graph @g(%x: f32[4], %c: bool[]) {
  %shape = const i64[1] [4]
  %y = If(%c) {
    else_branch = graph @else() {
      %n = NonZero(%x) : i64[1,?]
      %f = Cast(%n) {to = 1} : f32[1,?]
      %r = Reshape(%f, %shape) : f32[4]
      return %r
    },
    then_branch = graph @then() {
      %a = Neg(%x) : f32[4]
      return %a
    }
  } : f32[4]
  return %y
})");
  runtime::ArtifactSpec spec = runtime::buildArtifact(*g.graph, lo);
  ASSERT_EQ(spec.failBranches.size(), 1u);
  EXPECT_NE(spec.failBranches[0].find("NonZero"), std::string::npos) << spec.failBranches[0];
  fs::path dir = freshDir("failbranch");
  runtime::writeArtifact(spec, dir.string(), nativeTarget());
  runtime::LoadedArtifact art(dir.string());
  Tensor x = Tensor::fromF32({1, 0, 2, 3}, {4});
  Tensor yes(DType::Bool, {}), no(DType::Bool, {});
  yes.setI64(0, 1);
  auto out = art.run({RValue::of(x), RValue::of(yes)});
  EXPECT_EQ(out[0].tensor.getF64(2), -2.0);
  try {
    art.run({RValue::of(x), RValue::of(no)});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("else_branch cannot run"), std::string::npos) << e.what();
  }
}

// Nodes without a lowering (static sizes, no subgraph) run as fallback tasks: the reference
// kernel on the planned buffers, between compiled tasks; the spec lists them.
TEST(Artifact, NodesWithoutLoweringRunAsFallbackTasks) {
  // (Dropout in training mode draws random numbers: never lowered; seeded, the reference's
  // draws are the same in every run)
  Model m = parseModel(R"(graph @g(%x: f32[3,4,1]) {
  %ratio = const f32[] [0.5]
  %train = const bool[] [1]
  %c = Dropout(%x, %ratio, %train) {seed = 3} : f32[3,4,1]
  %r = Relu(%c) : f32[3,4,1]
  %m = Mul(%x, %x) : f32[3,4,1]
  %h = Dropout(%m, %ratio, %train) {seed = 4} : f32[3,4,1]
  %s = Add(%h, %c) : f32[3,4,1]
  return %s, %r
})");
  loop::LowerOptions lo;
  lo.runtimeKernels = true;
  runtime::ArtifactSpec spec = runtime::buildArtifact(*m.graph, lo);
  ASSERT_EQ(spec.fallbacks.size(), 2u);
  EXPECT_NE(spec.fallbacks[0].find("Dropout"), std::string::npos) << spec.fallbacks[0];
  std::vector<RValue> in = {RValue::of(
      Tensor::fromF32({1, -2, 3, 0.5f, -1, 4, -3, 2, 0.25f, 0.75f, -0.5f, 1}, {3, 4, 1}))};
  auto want = interpret(*m.graph, in);
  auto got = compileAndRun(*m.graph, freshDir("fallback"), in);
  test::expectOutputsClose(want, got, {1e-6, 1e-6});
}

// A Scan of static sizes compiles to a repeat region (runtime/artifact_build.cpp emitLoop), its
// body reading the enclosing graph's values in place. One that does not (here: strings in its
// body) runs as a fallback task: the node printed alone as a model, declaring what its body
// reads of the enclosing graph (an input or result of it: one more binding; a constant:
// printed). A name that would clash with the printed node's own (in0.., out0..) keeps it out.
TEST(Artifact, NodesWithBodiesCompileOrRunAsFallbackTasks) {
  auto scan = [](const std::string& w, const std::string& addend, bool strings) {
    // (the string round trip keeps these values exact)
    const std::string next = strings ? "%nf" : "%next",
                      viaStrings = strings ? "%ns = Cast(%next) {to = 8} : string[2]\n      "
                                             "%nf = Cast(%ns) {to = 1} : f32[2]\n      "
                                           : "";
    return parseModel(R"(model opsets={"": 9} {
graph @g(%init: f32[2], %x: f32[3,2], %)" +
                      w + R"(: f32[2]) {
  %k = const f32[2] [0.25, -4]
  %x2 = Mul(%x, %x) : f32[3,2]
  %y, %z = Scan(%init, %x2) {
    body = graph @body(%sum_in: f32[2], %next: f32[2]) {
      )" + viaStrings +
                      "%t = Add(" + next + ", " + addend + R"() : f32[2]
      %sum_out = Add(%sum_in, %t) : f32[2]
      %scan_out = Identity(%sum_out) : f32[2]
      return %sum_out, %scan_out
    },
    num_scan_inputs = 1
  } : f32[2], f32[3,2]
  %r = Relu(%z) : f32[3,2]
  return %y, %r
}
})");
  };
  loop::LowerOptions lo;
  lo.runtimeKernels = true;
  std::vector<RValue> in = {RValue::of(Tensor::fromF32({1, -2}, {2})),
                            RValue::of(Tensor::fromF32({1, 2, -3, 0.5f, 2, -1}, {3, 2})),
                            RValue::of(Tensor::fromF32({0.5f, 4}, {2}))};
  // Its own values only; the enclosing graph's input %w (%init: the Scan's own input too); a
  // constant of the enclosing graph.
  int variant = 0;
  for (bool strings : {false, true})
    for (const char* addend : {"%next", "%w", "%init", "%k"}) {
      Model m = scan("w", addend, strings);
      runtime::ArtifactSpec spec = runtime::buildArtifact(*m.graph, lo);
      ASSERT_EQ(spec.fallbacks.size(), strings ? 1u : 0u) << addend;
      if (strings) {
        EXPECT_NE(spec.fallbacks[0].find("Scan"), std::string::npos) << spec.fallbacks[0];
      }
      EXPECT_EQ(std::any_of(spec.tasks.begin(), spec.tasks.end(),
                            [](const runtime::ArtifactTask& t) {
                              return t.kind == runtime::ArtifactTask::Kind::Repeat;
                            }),
                !strings);
      test::expectOutputsClose(
          interpret(*m.graph, in),
          compileAndRun(*m.graph, freshDir("scan" + std::to_string(variant++)), in), {0, 0});
    }
  Model clash = scan("in0", "%in0", true);
  try {
    runtime::buildArtifact(*clash.graph, lo);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(Scan)"), std::string::npos) << e.what();
  }
}

// The recurrent micro-kernel calls resolve in the artifact too (aicc_rt_call_kernel).
TEST(Artifact, LstmCompilesAheadOfTimeAndMatchesTheInterpreter) {
  Model m = parseModel(
      "graph @g(%x: f32[4,3,3], %w: f32[2,20,3], %r: f32[2,20,5], %b: f32[2,40], "
      "%c0: f32[2,3,5], %p: f32[2,15]) {\n  %sl = const i32[3] [4, 1, 3]\n"
      "  %y, %yh, %yc = LSTM(%x, %w, %r, %b, %sl, _, %c0, %p) {direction = \"bidirectional\", "
      "hidden_size = 5, clip = 1.5} : f32[4,2,3,5], f32[2,3,5], f32[2,3,5]\n"
      "  return %y, %yh, %yc\n}\n");
  std::vector<RValue> in;
  uint32_t seed = 1;
  for (const Value* v : m.graph->inputs) {
    Tensor t(DType::F32, *toDims(*v->type.shape));
    for (int64_t i = 0; i < t.numel(); ++i, seed = seed * 1103515245u + 12345u)
      t.setF64(i, double(seed >> 8 & 0xffff) / 16384.0 - 2.0);
    in.push_back(RValue::of(std::move(t)));
  }
  test::expectOutputsClose(interpret(*m.graph, in), compileAndRun(*m.graph, freshDir("lstm"), in),
                           {1e-5, 1e-6});
}

// Values of run-time size live in dynamic slots (rt/artifact.h): a NonZero result (its size
// depends on the data) and what is computed from it run as fallback tasks, the rest compiled;
// a sequence input is the runtime's (rt/sequence.h), refused by the C API's tensor setter by name.
// Two runs of one instance with different sizes; through the C API, a dynamic tensor output is
// read with the dims of its run.
TEST(Artifact, ValuesOfRunTimeSizeLiveInDynamicSlots) {
  Model m = parseModel(R"(graph @g(%x: f32[4], %s: seq<f32[2]>) {
  %n = NonZero(%x) : i64[1,?]
  %t = Transpose(%n) : i64[?,1]
  %k = Size(%t) : i64[]
  %r = Relu(%x) : f32[4]
  %l = SequenceLength(%s) : i64[]
  return %t, %k, %r, %l
})");
  loop::LowerOptions lo;
  lo.runtimeKernels = true;
  runtime::ArtifactSpec spec = runtime::buildArtifact(*m.graph, lo);
  EXPECT_GE(spec.dynamicValues, 2);
  EXPECT_EQ(spec.fallbacks.size(), 3u); // NonZero, Transpose, Size; Relu, SequenceLength compiled
  const fs::path dir = freshDir("dynamic");
  runtime::writeArtifact(spec, dir.string(), nativeTarget());
  runtime::LoadedArtifact art(dir.string());
  auto seq = RValue::ofSeq(
      {Tensor::fromF32({1, 2}, {2}), Tensor::fromF32({3, 4}, {2}), Tensor::fromF32({5, 6}, {2})});
  for (const std::vector<float>& x : {std::vector<float>{0, -1, 2, 0}, {3, 1, -2, 5}}) {
    std::vector<RValue> in = {RValue::of(Tensor::fromF32(x, {4})), seq};
    test::expectOutputsClose(interpret(*m.graph, in), art.run(in), {0, 0});
  }
  // The C API: the sequence input is refused by the tensor setter, by name (unset: no run).
  aicc_model* cm = aicc_model_load(dir.c_str());
  ASSERT_TRUE(cm) << aicc_last_error();
  const float x[4] = {1, 0, 0, 1};
  EXPECT_EQ(aicc_model_set_input(cm, 0, x, sizeof x), 0) << aicc_last_error();
  EXPECT_NE(aicc_model_set_input(cm, 1, x, sizeof x), 0);
  EXPECT_NE(std::string(aicc_last_error()).find("input 's' is seq<f32[2]>"), std::string::npos)
      << aicc_last_error();
  EXPECT_NE(aicc_model_run(cm), 0);
  aicc_model_free(cm);
  // An output of run-time size that is a tensor is read with its run's dims (no sequence input).
  Model m2 = parseModel(R"(graph @g(%x: f32[5]) {
  %n = NonZero(%x) : i64[1,?]
  %r = Relu(%x) : f32[5]
  return %n, %r
})");
  const fs::path dir2 = freshDir("dynamic_c");
  runtime::writeArtifact(runtime::buildArtifact(*m2.graph, lo), dir2.string(), nativeTarget());
  cm = aicc_model_load(dir2.c_str());
  ASSERT_TRUE(cm) << aicc_last_error();
  int64_t dims[4];
  EXPECT_EQ(aicc_model_output_dims(cm, 0, dims, 4), -1); // before a run
  for (const std::vector<float>& x : {std::vector<float>{0, 3, 0, -1, 2}, {0, 0, 0, 0, 7}}) {
    ASSERT_EQ(aicc_model_set_input(cm, 0, x.data(), x.size() * sizeof(float)), 0);
    ASSERT_EQ(aicc_model_run(cm), 0) << aicc_last_error();
    const Tensor want = interpret(*m2.graph, {RValue::of(Tensor::fromF32(x, {5}))})[0].tensor;
    ASSERT_EQ(aicc_model_output_dims(cm, 0, dims, 4), 2);
    EXPECT_EQ(Dims(dims, dims + 2), want.shape());
    EXPECT_STREQ(aicc_model_output_dtype(cm, 0), "i64");
    size_t bytes = 0;
    const void* p = aicc_model_output(cm, 0, &bytes);
    ASSERT_TRUE(p) << aicc_last_error();
    ASSERT_EQ(bytes, want.nbytes());
    EXPECT_EQ(std::memcmp(p, want.raw(), bytes), 0);
  }
  aicc_model_free(cm);
}

} // namespace
} // namespace aicc
