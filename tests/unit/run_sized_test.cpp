// Sizes the run decides with no bound (issue #12: a ConstantOfShape, Expand or Reshape of a
// run-time shape, a Pad of run-time pads, Range): data symbols sized at run time, their values
// in growable buffers (rt::HeapBuffer), each size set by a task of its own before the node's
// (LowerOptions::sizesOnly). Each test compiles one artifact with no fallback task and runs it
// against the interpreter on inputs whose values grow, shrink and grow again (the buffers keep
// the largest size); bad sizes are the run's errors.
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>

namespace aicc {
namespace {

namespace fs = std::filesystem;

Tensor ints(const std::vector<int64_t>& v) { return Tensor::fromI64(v); }

// Compiles `ir` with no symbols given, checks the plan sizes something at run time and has no
// fallback task, then runs each input set against the interpreter.
void expectSizedAtRunTime(const std::string& name, const std::string& ir,
                          const std::vector<std::vector<Tensor>>& runs) {
  Model ref = parseModel(ir), m = parseModel(ir);
  const fs::path dir = test::compileArtifact(m, "aicc_run_sized_" + name, {});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << name << ":\n" << plan;
  EXPECT_NE(plan.find("\nheap "), std::string::npos) << name << ":\n" << plan;
  runtime::LoadedArtifact art(dir.string());
  for (size_t r = 0; r < runs.size(); ++r) {
    std::vector<RValue> in;
    for (const Tensor& t : runs[r]) in.push_back(RValue::of(t));
    SCOPED_TRACE(name + ", run " + std::to_string(r));
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-6});
  }
}

// A run's error: `run` fails naming `what`, and the instance runs again afterwards.
void expectRunError(const std::string& name, const std::string& ir, const std::vector<Tensor>& bad,
                    const std::string& what, const std::vector<Tensor>& good) {
  Model m = parseModel(ir);
  const fs::path dir = test::compileArtifact(m, "aicc_run_sized_bad_" + name, {});
  runtime::LoadedArtifact art(dir.string());
  std::vector<RValue> in, ok;
  for (const Tensor& t : bad) in.push_back(RValue::of(t));
  for (const Tensor& t : good) ok.push_back(RValue::of(t));
  try {
    art.run(in);
    ADD_FAILURE() << name << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
  Model ref = parseModel(ir);
  test::expectOutputsClose(interpret(*ref.graph, ok), art.run(ok), {1e-6, 1e-6});
}

const char* kConstantOfShape = R"(graph @g(%shape: i64[2], %x: f32[3]) {
  %z = ConstantOfShape(%shape) {value = tensor f32[1] [0.5]} : f32[?,?]
  %y = Add(%z, %x) : f32[?,?]
  return %y
}
)";

// ConstantOfShape of a run-time shape, broadcast against a fixed row: both results sized at run
// time, the Add compiled at the run's sizes.
TEST(RunSized, ConstantOfShapeOfARunTimeShape) {
  const Tensor x = Tensor::fromF32({1, 2, 3});
  expectSizedAtRunTime("cos", kConstantOfShape,
                       {{ints({2, 3}), x},
                        {ints({300, 3}), x},
                        {ints({1, 3}), x},
                        {ints({0, 3}), x},
                        {ints({1000, 3}), x}});
}

// A Pad of run-time pads (CenterCropPad's expansion), then Shape and a Slice back to a fixed size.
TEST(RunSized, PadOfRunTimePads) {
  const char* ir = R"(graph @g(%x: f32[4,5], %pads: i64[4]) {
  %p = Pad(%x, %pads) {mode = "reflect"} : f32[?,?]
  %s = Shape(%p) : i64[2]
  %e = Exp(%p) : f32[?,?]
  return %e, %s
}
)";
  Tensor x(DType::F32, {4, 5});
  for (int64_t k = 0; k < 20; ++k) x.setF64(k, 0.1 * double(k) - 1);
  expectSizedAtRunTime("pad", ir,
                       {{x, ints({1, 2, 3, 4})},
                        {x, ints({0, 0, 0, 0})},
                        {x, ints({3, 4, 3, 4})},
                        {x, ints({-1, 2, 0, -3})}});
}

// Range of run-time bounds, Expand and Reshape of run-time shapes: the Reshape's -1 and 0, the
// Expand's broadcast of 1s either way.
TEST(RunSized, RangeExpandAndReshape) {
  const char* ir = R"(graph @g(%n: i64[], %shape: i64[3], %to: i64[2]) {
  %zero = Constant() {value = tensor i64[] [0]} : i64[]
  %one = Constant() {value = tensor i64[] [1]} : i64[]
  %r = Range(%zero, %n, %one) : i64[?]
  %f = Cast(%r) {to = 1} : f32[?]
  %e = Expand(%f, %shape) : f32[?,?,?]
  %t = Reshape(%e, %to) : f32[?,?]
  %y = Sqrt(%t) : f32[?,?]
  return %y, %e
}
)";
  auto n = [](int64_t v) { return ints({v}).reshaped({}); };
  expectSizedAtRunTime("range", ir,
                       {{n(6), ints({2, 1, 6}), ints({-1, 3})},
                        {n(1), ints({3, 4, 5}), ints({0, -1})},
                        {n(40), ints({2, 2, 1}), ints({8, 20})},
                        {n(2), ints({1, 1, 2}), ints({2, 1})}});
}

// Split of run-time lengths and Tile of run-time repeats over an input of symbolic length: each
// output's length along the axis, and the tiled dims, sized at run time.
TEST(RunSized, SplitAndTileOfRunTimeValues) {
  const char* ir = R"(graph @g(%x: f32[2,L], %split: i64[2], %reps: i64[2]) {
  %a, %b = Split(%x, %split) {axis = 1} : f32[2,?], f32[2,?]
  %t = Tile(%b, %reps) : f32[?,?]
  %y = Neg(%t) : f32[?,?]
  return %a, %y
}
)";
  auto x = [](int64_t l) {
    Tensor t(DType::F32, {2, l});
    for (int64_t k = 0; k < 2 * l; ++k) t.setF64(k, double(k) - 3);
    return t;
  };
  Model ref = parseModel(ir), m = parseModel(ir);
  const fs::path dir = test::compileArtifact(m, "aicc_run_sized_split", {{"L", 1, 64}});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << plan;
  runtime::LoadedArtifact art(dir.string());
  for (const auto& [l, a, r0, r1] : std::vector<std::array<int64_t, 4>>{
           {5, 2, 1, 3}, {64, 60, 4, 5}, {3, 0, 2, 1}, {7, 7, 1, 1}}) {
    std::vector<RValue> in = {RValue::of(x(l)), RValue::of(ints({a, l - a})),
                              RValue::of(ints({r0, r1}))};
    SCOPED_TRACE(std::to_string(l));
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-6});
  }
  std::vector<RValue> bad = {RValue::of(x(5)), RValue::of(ints({2, 2})), RValue::of(ints({1, 1}))};
  EXPECT_THROW(art.run(bad), Error); // lengths that do not add up to the input's
}

// An If whose results are sized at run time runs whole as a fallback task (its branches' results
// would be copied between growable buffers, which copy tasks do not bind: the artifact loaded but
// refused to run before), sizing its result itself; the ConstantOfShape before it still compiles.
TEST(RunSized, AnIfOfValuesSizedAtRunTimeRunsWhole) {
  const char* ir = R"(graph @g(%c: bool[], %shape: i64[1]) {
  %z = ConstantOfShape(%shape) {value = tensor f32[1] [0.5]} : f32[?]
  %y = If(%c) {then_branch = graph @then() { %t = Neg(%z) : f32[?]  return %t },
               else_branch = graph @else() { %e = Exp(%z) : f32[?]  return %e }} : f32[?]
  return %y
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  const fs::path dir = test::compileArtifact(m, "aicc_run_sized_if", {});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_NE(plan.find("\nfallback "), std::string::npos) << plan;
  EXPECT_EQ(plan.find("\ncopy "), std::string::npos) << plan;
  runtime::LoadedArtifact art(dir.string());
  for (const auto& [c, n] :
       std::vector<std::pair<bool, int64_t>>{{true, 5}, {false, 300}, {true, 2}}) {
    Tensor cond(DType::Bool, {});
    cond.setF64(0, c ? 1 : 0);
    std::vector<RValue> in = {RValue::of(cond), RValue::of(ints({n}))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-6});
  }
}

// Bad sizes are the run's errors, naming the node, and the instance still runs: a negative dim,
// a shape that does not broadcast, an absurd size (2^40 floats), a Reshape of other elements.
TEST(RunSized, BadSizesAreTheRunsErrors) {
  const Tensor x = Tensor::fromF32({1, 2, 3});
  expectRunError("negative", kConstantOfShape, {ints({-2, 3}), x}, "ConstantOfShape",
                 {ints({2, 3}), x});
  expectRunError("absurd", kConstantOfShape, {ints({int64_t(1) << 40, 3}), x}, "more than",
                 {ints({4, 3}), x});
  const char* expand = R"(graph @g(%x: f32[2,3], %shape: i64[2]) {
  %e = Expand(%x, %shape) : f32[?,?]
  return %e
}
)";
  const Tensor x23 = Tensor::fromF32({1, 2, 3, 4, 5, 6}, {2, 3});
  expectRunError("expand", expand, {x23, ints({2, 4})}, "Expand", {x23, ints({2, 3})});
  const char* reshape = R"(graph @g(%x: f32[2,3], %shape: i64[2]) {
  %e = Reshape(%x, %shape) : f32[?,?]
  return %e
}
)";
  expectRunError("reshape", reshape, {x23, ints({4, 2})}, "Reshape", {x23, ints({3, 2})});
}

} // namespace
} // namespace aicc
