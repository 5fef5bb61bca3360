// Reductions whose axes come at run time (an input, not a constant): the lowering takes the dims
// to reduce from the input and the declared output shape when they determine them, compiles the
// reduction for those (one nest per candidate when they leave it open, picked by the run's axes),
// and checks the axes given at run time against them (@check_reduce_axes).
// Against the interpreter; a wrong axis at run time is a clear error, not a wrong answer.
// ReduceMax / ReduceMin of integers (their extremes included) and bools, exactly;
// BatchNormalization in training mode (the batch's statistics and the running ones);
// MeanVarianceNormalization over its default and given axes.
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "passes/shape_inference.h"
#include "runtime/jit_executor.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <random>

namespace aicc {
namespace {

Tensor values(const Dims& d, uint32_t seed) { return test::uniformTensor(d, seed, -2, 2); }

Tensor axes(std::vector<int64_t> a) {
  Tensor t(DType::I64, {int64_t(a.size())});
  for (size_t i = 0; i < a.size(); ++i) t.data<int64_t>()[i] = a[i];
  return t;
}

// `op` over x [3,4,5] with axes at run time into an output declared as `out`.
std::unique_ptr<runtime::JitExecutable> compile(Model& m, const std::string& op,
                                                const std::string& attrs, const std::string& out,
                                                int64_t naxes) {
  m = parseModel("graph @g(%x: f32[3,4,5], %a: i64[" + std::to_string(naxes) +
                 "]) {\n  %y = " + op + "(%x, %a)" + attrs + " : f32" + out + "\n  return %y\n}\n");
  inferShapes(*m.graph);
  return std::make_unique<runtime::JitExecutable>(*m.graph);
}

TEST(JitReduceAxes, RuntimeAxesMatchTheInterpreter) {
  struct Case {
    const char* op;
    std::string attrs, out;
    std::vector<int64_t> ax;
  };
  const Case cases[] = {{"ReduceSum", "", "[3,1,5]", {1}},
                        {"ReduceMean", "", "[1,4,1]", {-1, 0}},
                        {"ReduceMax", " {keepdims = 0}", "[3,5]", {1}},
                        {"ReduceL2", " {keepdims = 0}", "[4]", {2, 0}},
                        {"ReduceLogSumExp", "", "[3,4,1]", {2}},
                        {"ReduceLogSum", "", "[1,1,1]", {}},
                        {"ReduceSumSquare", " {keepdims = 0}", "[]", {0, 1, 2}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + c.attrs + " -> " + c.out);
    Model m;
    auto exe = compile(m, c.op, c.attrs, c.out, int64_t(c.ax.size()));
    const std::vector<RValue> in = {RValue::of(values({3, 4, 5}, 7)), RValue::of(axes(c.ax))};
    std::vector<RValue> got;
    ASSERT_NO_THROW(got = exe->run(in));
    EXPECT_EQ(exe->stats().fallback, 0)
        << (exe->stats().fallbackReasons.empty() ? "" : exe->stats().fallbackReasons[0]);
    const auto want = interpret(*m.graph, in);
    auto diff = compareValues(want[0], got[0], {1e-5, 1e-6});
    EXPECT_FALSE(diff) << *diff;
  }
}

TEST(JitReduceAxes, AxesThatDisagreeWithTheCompiledShapeAreAnError) {
  Model m;
  auto exe = compile(m, "ReduceSum", "", "[3,1,5]", 1);
  for (const auto& [ax, what] : std::vector<std::pair<int64_t, const char*>>{
           {2, "do not give the output shape"}, {3, "out of range for rank 3"}}) {
    try {
      exe->run({RValue::of(values({3, 4, 5}, 1)), RValue::of(axes({ax}))});
      ADD_FAILURE() << "axis " << ax << " ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
}

// Shapes that leave the reduced dims open (which of two size-4 dims? of three size-2 ones?): one
// nest per candidate, the run's axes pick it, compiled once for all of them; axes that give
// another shape are still the check's error.
TEST(JitReduceAxes, AxesTheShapesLeaveOpenArePickedAtRunTime) {
  for (const std::string op : {"ReduceSum", "ReduceMax", "ReduceL2"}) {
    SCOPED_TRACE(op);
    Model amb = parseModel("graph @g(%x: f32[4,4], %a: i64[1]) {\n  %y = " + op +
                           "(%x, %a) {keepdims = 0} : f32[4]\n  return %y\n}\n");
    inferShapes(*amb.graph);
    runtime::JitExecutable exe(*amb.graph);
    for (int64_t ax : {0, 1, -1, -2}) {
      SCOPED_TRACE(ax);
      const std::vector<RValue> in = {RValue::of(values({4, 4}, 2)), RValue::of(axes({ax}))};
      std::vector<RValue> got;
      ASSERT_NO_THROW(got = exe.run(in));
      EXPECT_EQ(exe.stats().fallback, 0);
      auto diff = compareValues(interpret(*amb.graph, in)[0], got[0], {1e-6, 1e-7});
      EXPECT_FALSE(diff) << *diff;
    }
    EXPECT_THROW(exe.run({RValue::of(values({4, 4}, 2)), RValue::of(axes({2}))}), Error);
  }
  // [2,2,1,2] -> [2] (keepdims 0): which of the three size-2 dims is kept is open; the size-1
  // dim is named too (keepdims 0 drops three dims).
  Model m = parseModel("graph @g(%x: f32[2,2,1,2], %a: i64[3]) {\n  %y = ReduceSum(%x, %a) "
                       "{keepdims = 0} : f32[2]\n  return %y\n}\n");
  inferShapes(*m.graph);
  runtime::JitExecutable exe(*m.graph);
  for (const std::vector<int64_t>& ax :
       std::vector<std::vector<int64_t>>{{1, 2, 3}, {0, 2, 3}, {2, 0, 1}, {-1, -2, -4}}) {
    const std::vector<RValue> in = {RValue::of(values({2, 2, 1, 2}, 5)), RValue::of(axes(ax))};
    std::vector<RValue> got;
    ASSERT_NO_THROW(got = exe.run(in));
    EXPECT_EQ(exe.stats().fallback, 0);
    auto diff = compareValues(interpret(*m.graph, in)[0], got[0], {1e-6, 1e-7});
    EXPECT_FALSE(diff) << *diff;
  }
}

} // namespace
} // namespace aicc

namespace aicc {
namespace {

// Softmax / LogSoftmax (max and sum) and LayerNormalization (mean and variance) over the last
// axis run their row reductions in vector lanes (lower_reduce.cpp) when a row holds at least two
// vectors: rows of 100 and 37 (a tail lane), 768 (BERT's), large magnitudes (the max subtracted
// first), and a middle axis (the scalar form). Against the interpreter: the max is exact in any
// order, the sums reassociated (rtol 1e-5).
TEST(JitReduceAxes, RowsInLanesMatchTheInterpreter) {
  struct Case {
    std::string op, attrs;
    Dims dims;
    float scale;
  };
  for (const Case& c :
       {Case{"Softmax", "", {3, 5, 100}, 1.0f}, Case{"LogSoftmax", "", {4, 37}, 30.0f},
        Case{"Softmax", " {axis = 1}", {2, 64, 3}, 1.0f}, Case{"Softmax", "", {12, 128}, 80.0f},
        Case{"LayerNormalization", " {axis = -1}", {5, 768}, 3.0f},
        Case{"LayerNormalization", " {axis = -1}", {2, 3, 37}, 100.0f},
        Case{"LayerNormalization", " {axis = 1}", {2, 8, 9}, 1.0f}}) {
    std::string d = "[";
    for (size_t k = 0; k < c.dims.size(); ++k) d += (k ? "," : "") + std::to_string(c.dims[k]);
    d += "]";
    const bool ln = c.op == "LayerNormalization";
    Dims nd(c.dims.begin() +
                (c.attrs.find("axis = 1") != std::string::npos ? 1 : long(c.dims.size()) - 1),
            c.dims.end());
    std::string sd = "[";
    for (size_t k = 0; k < nd.size(); ++k) sd += (k ? "," : "") + std::to_string(nd[k]);
    sd += "]";
    Model m = parseModel("graph @g(%x: f32" + d + (ln ? ", %s: f32" + sd + ", %b: f32" + sd : "") +
                         ") {\n  %y = " + c.op + (ln ? "(%x, %s, %b)" : "(%x)") + c.attrs +
                         " : f32" + d + "\n  return %y\n}\n");
    inferShapes(*m.graph);
    std::vector<RValue> in;
    Tensor x = values(c.dims, 9);
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data<float>()[i] = x.data<float>()[i] * c.scale + 1.0f;
    in.push_back(RValue::of(x));
    if (ln) in.push_back(RValue::of(values(nd, 10))), in.push_back(RValue::of(values(nd, 11)));
    const auto want = interpret(*m.graph, in);
    runtime::JitExecutable exe(*m.graph);
    EXPECT_EQ(exe.stats().fallback, 0);
    auto diff = compareValues(want[0], exe.run(in)[0], {1e-5, 1e-5});
    EXPECT_FALSE(diff) << c.op << d << ": " << *diff;
  }
}

// InstanceNormalization and GroupNormalization on the LayerNorm lowering (rows of one channel or
// one group, the scale and bias of each element's channel): against the interpreter, spatial
// sizes with a vector tail, groups of one channel (= instance) and of all channels.
TEST(JitReduceAxes, InstanceAndGroupNormalizationMatchTheInterpreter) {
  struct Case {
    std::string op;
    int64_t groups;
    Dims dims;
  };
  for (const Case& c :
       {Case{"InstanceNormalization", 0, {2, 3, 5, 7}},
        Case{"InstanceNormalization", 0, {1, 4, 37}}, Case{"GroupNormalization", 3, {2, 6, 4, 5}},
        Case{"GroupNormalization", 6, {2, 6, 9}}, Case{"GroupNormalization", 1, {1, 4, 33, 3}}}) {
    std::string d = "[";
    for (size_t k = 0; k < c.dims.size(); ++k) d += (k ? "," : "") + std::to_string(c.dims[k]);
    d += "]";
    const std::string ch = "[" + std::to_string(c.dims[1]) + "]";
    const std::string attrs = c.groups ? " {num_groups = " + std::to_string(c.groups) + "}" : "";
    Model m = parseModel("graph @g(%x: f32" + d + ", %s: f32" + ch + ", %b: f32" + ch +
                         ") {\n  %y = " + c.op + "(%x, %s, %b)" + attrs + " : f32" + d +
                         "\n  return %y\n}\n");
    inferShapes(*m.graph);
    Tensor x = values(c.dims, 12);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * 7.0f + 3.0f;
    std::vector<RValue> in = {RValue::of(x), RValue::of(values({c.dims[1]}, 13)),
                              RValue::of(values({c.dims[1]}, 14))};
    const auto want = interpret(*m.graph, in);
    runtime::JitExecutable exe(*m.graph);
    EXPECT_EQ(exe.stats().fallback, 0) << c.op << d;
    auto diff = compareValues(want[0], exe.run(in)[0], {1e-5, 1e-5});
    EXPECT_FALSE(diff) << c.op << d << ": " << *diff;
  }
}

TEST(JitReduceAxes, BatchNormTrainingMatchesTheInterpreter) {
  for (const Dims& xd : {Dims{3, 4, 5, 2}, Dims{2, 3}}) {
    SCOPED_TRACE(dimsText(xd));
    const int64_t C = xd[1];
    const std::string p = "f32[" + std::to_string(C) + "]";
    Model m = parseWithShapes("graph @g(%x: f32" + dimsText(xd) + ", %s: " + p + ", %b: " + p +
                              ", %m: " + p + ", %v: " + p +
                              ") {\n  %y, %rm, %rv = BatchNormalization(%x, %s, %b, %m, %v) "
                              "{training_mode = 1, momentum = 0.8, epsilon = 0.01}\n"
                              "  return %y, %rm, %rv\n}\n");
    expectJitMatches(m,
                     {RValue::of(values(xd, 1)), RValue::of(test::uniformTensor({C}, 2, 0.5f, 2)),
                      RValue::of(values({C}, 3)), RValue::of(values({C}, 4)),
                      RValue::of(test::uniformTensor({C}, 5, 0.1f, 1))},
                     {1e-6, 1e-6}, "batchnorm");
  }
}

TEST(JitReduceAxes, MeanVarianceNormalizationMatchesTheInterpreter) {
  for (const char* axes : {"", " {axes = [1]}", " {axes = [0, 1, 2, 3]}", " {axes = [-1, 1]}"}) {
    SCOPED_TRACE(axes);
    Model m = parseWithShapes(std::string("graph @g(%x: f32[3,4,5,2]) {\n  %y = "
                                          "MeanVarianceNormalization(%x)") +
                              axes + "\n  return %y\n}\n");
    expectJitMatches(m, {RValue::of(values({3, 4, 5, 2}, 6))}, {1e-6, 1e-6}, "reduce");
  }
}

TEST(JitReduceAxes, IntegerAndBoolMaxMinAreExact) {
  std::mt19937 rng(11);
  for (const char* t : {"i8", "u8", "i32", "i64", "u64", "bool"})
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      SCOPED_TRACE(std::string(op) + " of " + t);
      const DType dt = *dtypeFromName(t);
      Tensor x(dt, {3, 4, 5});
      std::uniform_int_distribution<int64_t> v(-200, 200);
      for (int64_t i = 0; i < x.numel(); ++i) x.setI64(i, dt == DType::Bool ? v(rng) > 0 : v(rng));
      Model m =
          parseWithShapes(std::string("graph @g(%x: ") + t +
                          "[3,4,5], %a: i64[1]) {\n  %y = " + op + "(%x, %a) : " + t +
                          "[3,1,5]\n  %c = const i64[2] [0, 2]\n"
                          "  %z = " +
                          op + "(%x, %c) {keepdims = 0} : " + t + "[4]\n  return %y, %z\n}\n");
      expectJitMatches(m, {RValue::of(x), RValue::of(axes({1}))}, {0, 0}, "reduce");
    }
}

} // namespace
} // namespace aicc
