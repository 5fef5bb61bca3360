// Loop and Scan compiled as `repeat` regions of the task sequence (runtime/artifact_build.cpp
// emitLoop, rt::Plan::Kind::Repeat): a Scan with a reversed input and an output stacked along
// axis 1, a while-Loop whose scan output has its iteration count as a data symbol, the nested
// Scans of an opset-8 Scan, a Loop of a run-time trip count that its rows fix, and a body's Slice
// of run-time bounds whose length its consumer fixes. Every run matches the interpreter with no
// fallback task; a plan whose task leaves a loop body is refused at load.
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

namespace aicc {
namespace {

std::filesystem::path compileLoops(const char* ir, const std::string& name) {
  Model m = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_loops_" + name, {});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_NE(plan.find("\nrepeat "), std::string::npos) << plan;
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << plan;
  return dir;
}

TEST(CompiledLoops, ScanWithReversedInputAndAxis1Output) {
  const char* ir = R"(graph @g(%init: f32[2], %xs: f32[4,2]) {
  %final, %ys = Scan(%init, %xs) {
    body = graph @b(%s: f32[2], %x: f32[2]) {
      %t = Add(%s, %x) : f32[2]
      %u = Tanh(%t) : f32[2]
      return %t, %u
    },
    num_scan_inputs = 1,
    scan_input_directions = [1],
    scan_output_axes = [1]
  } : f32[2], f32[2,4]
  return %final, %ys
}
)";
  const auto dir = compileLoops(ir, "scan");
  Model ref = parseModel(ir);
  runtime::LoadedArtifact art(dir.string());
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<RValue> in = {RValue::of(test::uniformTensor({2}, seed)),
                              RValue::of(test::uniformTensor({4, 2}, seed + 10))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-6});
  }
}

// A Scan over a symbolic sequence length: its count is the shape block's value of T, the slices
// of the inputs and rows of the results are at the run's length (both directions, both output
// axes).
TEST(CompiledLoops, ScanOverASymbolicLength) {
  const char* ir = R"(graph @g(%init: f32[2], %xs: f32[T,2]) {
  %final, %ys, %zs = Scan(%init, %xs) {
    body = graph @b(%s: f32[2], %x: f32[2]) {
      %t = Add(%s, %x) : f32[2]
      %u = Tanh(%t) : f32[2]
      %v = Neg(%t) : f32[2]
      return %t, %u, %v
    },
    num_scan_inputs = 1,
    scan_input_directions = [1],
    scan_output_axes = [0, 1],
    scan_output_directions = [0, 1]
  } : f32[2], f32[T,2], f32[2,T]
  return %final, %ys, %zs
}
)";
  Model m = parseModel(ir), ref = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_loops_symbolic", {{"T", 1, 8}});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_NE(plan.find("\nrepeat "), std::string::npos) << plan;
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << plan;
  runtime::LoadedArtifact art(dir.string());
  for (int64_t T : {1, 3, 8, 5}) {
    std::vector<RValue> in = {RValue::of(test::uniformTensor({2}, uint32_t(T))),
                              RValue::of(test::uniformTensor({T, 2}, uint32_t(T + 20)))};
    const std::vector<RValue> want = interpret(*ref.graph, in), got = art.run(in);
    EXPECT_EQ(got[2].tensor.shape(), (Dims{2, T}));
    test::expectOutputsClose(want, got, {1e-6, 1e-6});
  }
}

TEST(CompiledLoops, WhileLoopRowsAreADataSymbol) {
  const char* ir = R"(graph @g(%x: f32[3], %limit: f32[]) {
  %m = Constant() {value = tensor i64[] [10]} : i64[]
  %c = Constant() {value = tensor bool[] [1]} : bool[]
  %acc, %rows = Loop(%m, %c, %x) {
    body = graph @body(%i: i64[], %cond: bool[], %a: f32[3]) {
      %two = Constant() {value = tensor f32[] [2]} : f32[]
      %b = Mul(%a, %two) : f32[3]
      %s = ReduceSum(%b) {keepdims = 0} : f32[]
      %go = Less(%s, %limit) : bool[]
      return %go, %b, %b
    }
  } : f32[3], f32[?,3]
  return %acc, %rows
}
)";
  const auto dir = compileLoops(ir, "while");
  EXPECT_NE(readFile((dir / "model.plan").string()).find("symbol loop.0 0 10 data"),
            std::string::npos);
  Model ref = parseModel(ir);
  runtime::LoadedArtifact art(dir.string());
  const Tensor x = Tensor::fromF32({1, 1, 1});
  for (float limit : {1.f, 20.f, 100.f, 1e9f}) { // 1, 3, 5 and all 10 iterations
    std::vector<RValue> in = {RValue::of(x), RValue::of(Tensor::scalar(DType::F32, limit))};
    const std::vector<RValue> want = interpret(*ref.graph, in), got = art.run(in);
    EXPECT_EQ(got[1].tensor.shape(), want[1].tensor.shape()) << "limit " << limit;
    test::expectOutputsClose(want, got, {1e-6, 1e-6});
  }
}

// An If inside a Loop body: its jumps stay inside the repeat region (alternate iterations take
// the two branches).
TEST(CompiledLoops, AnIfInsideALoopBody) {
  const char* ir = R"(graph @g(%x: f32[3], %m: i64[]) {
  %c = Constant() {value = tensor bool[] [1]} : bool[]
  %acc = Loop(%m, %c, %x) {
    body = graph @body(%i: i64[], %cond: bool[], %a: f32[3]) {
      %two = Constant() {value = tensor i64[] [2]} : i64[]
      %zero = Constant() {value = tensor i64[] [0]} : i64[]
      %r = Mod(%i, %two) : i64[]
      %even = Equal(%r, %zero) : bool[]
      %b = If(%even) {
        then_branch = graph @t() {
          %t = Neg(%a) : f32[3]
          return %t
        },
        else_branch = graph @e() {
          %h = Constant() {value = tensor f32[] [0.5]} : f32[]
          %u = Add(%a, %h) : f32[3]
          return %u
        }
      } : f32[3]
      return %cond, %b
    }
  } : f32[3]
  return %acc
}
)";
  const auto dir = compileLoops(ir, "if_in_body");
  EXPECT_NE(readFile((dir / "model.plan").string()).find("\njumpz "), std::string::npos);
  Model ref = parseModel(ir);
  runtime::LoadedArtifact art(dir.string());
  for (int64_t trips : {0, 1, 4, 5}) { // (a run-time trip count: no scan output to bound)
    std::vector<RValue> in = {RValue::of(Tensor::fromF32({1, 2, 3})),
                              RValue::of(Tensor::scalar(DType::I64, double(trips)))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
  }
}

// Scan-8's batch as an outer Scan around the inner one (what the importer makes of it): nested
// repeat regions. A plan whose inner body reaches past the outer's end is refused at load.
TEST(CompiledLoops, NestedScansAndABodyThatLeavesItsLoop) {
  const char* ir = R"(graph @g(%initial: f32[2,2], %x: f32[2,3,2]) {
  %y, %z = Scan(%initial, %x) {
    body = graph @outer(%s0: f32[2], %x0: f32[3,2]) {
      %s1, %z1 = Scan(%s0, %x0) {
        body = graph @inner(%s: f32[2], %v: f32[2]) {
          %t = Add(%s, %v) : f32[2]
          %u = Identity(%t) : f32[2]
          return %t, %u
        },
        num_scan_inputs = 1
      } : f32[2], f32[3,2]
      return %s1, %z1
    },
    num_scan_inputs = 2
  } : f32[2,2], f32[2,3,2]
  return %y, %z
}
)";
  const auto dir = compileLoops(ir, "nested");
  Model ref = parseModel(ir);
  {
    runtime::LoadedArtifact art(dir.string());
    std::vector<RValue> in = {RValue::of(test::uniformTensor({2, 2}, 4)),
                              RValue::of(test::uniformTensor({2, 3, 2}, 5))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-6});
  }
  // The outer repeat's end moved before the inner's: the inner body leaves the outer.
  std::string plan = readFile((dir / "model.plan").string());
  const size_t outer = plan.find("\nrepeat "), inner = plan.find("\nrepeat ", outer + 1);
  ASSERT_NE(inner, std::string::npos);
  const size_t at = plan.find(" @", outer), innerAt = plan.find(" @", inner);
  const int64_t innerEnd = std::stoll(plan.substr(innerAt + 2));
  plan.replace(at + 2, plan.find(' ', at + 2) - at - 2, std::to_string(innerEnd - 1));
  writeFile((dir / "model.plan").string(), plan);
  try {
    runtime::LoadedArtifact bad(dir.string());
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leaves the loop body"), std::string::npos) << e.what();
  }
}

// A Loop with a run-time trip count and a condition its body passes on (Range's expansion): its
// rows fixed by the declared result, checked by the runtime before it runs (a count or a false
// condition that would give other rows is an error); the scan output is a view of the state the
// iteration updates, written before the update.
TEST(CompiledLoops, RunTimeTripCountCheckedAgainstTheRows) {
  const char* ir = R"(graph @g(%m: i64[], %c: bool[], %x: f32[2]) {
  %final, %rows = Loop(%m, %c, %x) {
    body = graph @b(%i: i64[], %ci: bool[], %s: f32[2]) {
      %co = Identity(%ci) : bool[]
      %t = Tanh(%s) : f32[2]
      %r = Identity(%s) : f32[2]
      return %co, %t, %r
    }
  } : f32[2], f32[3,2]
  return %final, %rows
}
)";
  const auto dir = compileLoops(ir, "trip_count");
  Model ref = parseModel(ir);
  runtime::LoadedArtifact art(dir.string());
  auto inputs = [](int64_t count, bool cond) {
    Tensor m(DType::I64, {}), c(DType::Bool, {});
    m.setI64(0, count);
    c.setI64(0, cond ? 1 : 0);
    return std::vector<RValue>{RValue::of(m), RValue::of(c),
                               RValue::of(test::uniformTensor({2}, 6))};
  };
  test::expectOutputsClose(interpret(*ref.graph, inputs(3, true)), art.run(inputs(3, true)),
                           {1e-6, 1e-6});
  for (auto [count, cond] : {std::pair<int64_t, bool>{2, true}, {3, false}}) {
    try {
      art.run(inputs(count, cond));
      ADD_FAILURE() << "no error for " << count << " " << cond;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("differs from the 3"), std::string::npos) << e.what();
    }
  }
}

// A Slice of run-time bounds inside a loop body (test_loop11's form): its length fixed at 1 by
// the Add that consumes it (declared [1], the other operand [1]); the compiled Slice checks the
// bounds give that length, so a body whose slice would be longer stops with an error.
TEST(CompiledLoops, ASliceInTheBodyFixedByItsConsumer) {
  for (const char* width : {"1", "2"}) {
    const std::string ir = std::string(R"(graph @g(%m: i64[], %c: bool[], %y: f32[1]) {
  %res_y, %res_scan = Loop(%m, %c, %y) {
    body = graph @b(%i: i64[], %ci: bool[], %yi: f32[1]) {
      %co = Identity(%ci) : bool[]
      %x = const f32[6] [1, 2, 3, 4, 5, 6]
      %w = const i64[] [)") +
                           width + R"(]
      %e = Add(%i, %w) : i64[]
      %zero = const i64[1] [0]
      %s0 = Unsqueeze(%i, %zero) : i64[1]
      %s1 = Unsqueeze(%e, %zero) : i64[1]
      %sl = Slice(%x, %s0, %s1) : f32[?]
      %yo = Add(%yi, %sl) : f32[1]
      %so = Identity(%yo) : f32[1]
      return %co, %yo, %so
    }
  } : f32[1], f32[5,1]
  return %res_y, %res_scan
}
)";
    Model m = parseModel(ir), ref = parseModel(ir);
    const auto dir = test::compileArtifact(m, "aicc_compiled_loops_slice", {});
    EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
    runtime::LoadedArtifact art(dir.string());
    Tensor count(DType::I64, {}), cond(DType::Bool, {});
    count.setI64(0, 5);
    cond.setI64(0, 1);
    const std::vector<RValue> in = {RValue::of(count), RValue::of(cond),
                                    RValue::of(test::uniformTensor({1}, 3))};
    if (std::string(width) == "1") {
      test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-6});
      continue;
    }
    try {
      art.run(in);
      ADD_FAILURE() << "no error for a slice of 2";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Slice"), std::string::npos) << e.what();
    }
  }
}

} // namespace
} // namespace aicc
