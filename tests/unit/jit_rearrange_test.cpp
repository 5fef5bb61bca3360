// Tile, DepthToSpace (DCR and CRD), SpaceToDepth and EyeLike through the JIT against the
// interpreter (loop/lower_rearrange.cpp), and Tile's repeats given at run time: checked against
// the compiled shape, a different value is the run's error. Slice with starts, ends, axes and
// steps all given at run time, and Pad with pads, axes and the constant value given at run time
// (every mode, wrap included, negative pads cropping), and OneHot's depth (a float), likewise.
// ConstantOfShape with its shape at run time and Range (floats, integers, negative steps): the
// shape and the count the inputs give are checked against the compiled output, a zero delta too.
// ReverseSequence with its lengths at run time, checked against the time axis.
#include "jit_check.h"

#include <limits>

namespace aicc {
namespace {

Tensor iota(DType t, const Dims& d) {
  Tensor x(t, d);
  for (int64_t i = 0; i < x.numel(); ++i) x.setF64(i, double(i) * 0.5 - 3);
  return x;
}

// One run of a compiled graph against the interpreter, exact, without fallbacks.
void expectRunMatches(runtime::JitExecutable& exe, const Graph& g, const std::vector<RValue>& in) {
  const auto want = interpret(g, in);
  std::vector<RValue> got;
  ASSERT_NO_THROW(got = exe.run(in));
  EXPECT_EQ(exe.stats().fallback, 0);
  auto diff = compareValues(want[0], got[0], {0, 0});
  EXPECT_FALSE(diff) << *diff;
}

TEST(JitRearrange, TileWithRepeatsAtRunTime) {
  Model m = parseWithShapes("graph @g(%x: f32[2,3,1], %r: i64[3]) {\n  %y = Tile(%x, %r)\n"
                            "  return %y\n}\n");
  // The output shape comes from the run's repeats, as the JIT specializes; set it here.
  m.graph->outputs[0]->type.shape = Shape{Dim::known(4), Dim::known(3), Dim::known(5)};
  const std::vector<RValue> in = {RValue::of(iota(DType::F32, {2, 3, 1})),
                                  RValue::of(tensorOfInts(DType::I64, {2, 1, 5}))};
  expectJitMatches(m, in, {0, 0}, "repeats");
  runtime::JitExecutable exe(*m.graph);
  EXPECT_THROW(exe.run({in[0], RValue::of(tensorOfInts(DType::I64, {2, 1, 4}))}), Error);
}

// ReverseSequence over time-major and batch-major inputs with run-time lengths (the whole
// sequence, none, some; int32 and int64), exact; a length past the time axis is the run's error.
TEST(JitRearrange, ReverseSequenceWithLengthsAtRunTime) {
  for (const char* text :
       {"graph @g(%x: f32[4,3,2], %l: i64[3]) {\n  %y = ReverseSequence(%x, %l) : f32[4,3,2]\n"
        "  return %y\n}\n",
        "graph @g(%x: i32[3,4,2], %l: i32[3]) {\n  %y = ReverseSequence(%x, %l) {batch_axis = 0, "
        "time_axis = 1} : i32[3,4,2]\n  return %y\n}\n"}) {
    SCOPED_TRACE(text);
    Model m = parseModel(text);
    const Value* x = m.graph->inputs[0];
    const DType lt = m.graph->inputs[1]->type.dtype;
    runtime::JitExecutable exe(*m.graph);
    const RValue xv = RValue::of(iota(x->type.dtype, *toDims(*x->type.shape)));
    expectRunMatches(exe, *m.graph, {xv, RValue::of(tensorOfInts(lt, {4, 0, 2}))});
    expectRunMatches(exe, *m.graph, {xv, RValue::of(tensorOfInts(lt, {1, 3, 4}))});
    EXPECT_THROW(exe.run({xv, RValue::of(tensorOfInts(lt, {5, 0, 2}))}), Error);
  }
}

TEST(JitRearrange, DepthToSpaceSpaceToDepthAndEyeLike) {
  for (const std::string mode : {"DCR", "CRD"}) {
    SCOPED_TRACE(mode);
    Model m =
        parseWithShapes("graph @g(%x: f32[2,12,2,3]) {\n  %y = DepthToSpace(%x) {blocksize = 2, "
                        "mode = \"" +
                        mode + "\"}\n  return %y\n}\n");
    expectJitMatches(m, {RValue::of(iota(DType::F32, {2, 12, 2, 3}))}, {0, 0}, "blocksize");
  }
  Model s2d =
      parseWithShapes("graph @g(%x: i32[1,3,6,4]) {\n  %y = SpaceToDepth(%x) {blocksize = 2}\n"
                      "  return %y\n}\n");
  expectJitMatches(s2d, {RValue::of(iota(DType::I32, {1, 3, 6, 4}))}, {0, 0}, "blocksize");
  for (int64_t k : {-2, 0, 3}) {
    SCOPED_TRACE(k);
    Model eye = parseWithShapes("graph @g(%x: f32[4,5]) {\n  %y = EyeLike(%x) {dtype = 7, k = " +
                                std::to_string(k) + "}\n  return %y\n}\n"); // dtype 7: int64
    expectJitMatches(eye, {RValue::of(iota(DType::F32, {4, 5}))}, {0, 0}, "");
  }
}

TEST(JitRearrange, SliceWithEverythingAtRunTime) {
  Model m = parseWithShapes("graph @g(%x: f32[6,5,4], %s: i64[2], %e: i64[2], %a: i64[2], "
                            "%t: i64[2]) {\n  %y = Slice(%x, %s, %e, %a, %t)\n  return %y\n}\n");
  m.graph->outputs[0]->type.shape = Shape{Dim::known(3), Dim::known(5), Dim::known(2)};
  runtime::JitExecutable exe(*m.graph);
  const RValue x = RValue::of(iota(DType::F32, {6, 5, 4}));
  // Value sets giving the compiled shape [3, 5, 2]: negative axes, starts and steps, ends past
  // the dim, INT64 extremes.
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<std::vector<std::vector<int64_t>>> ok = {
      {{0, 1}, {3, 3}, {0, 2}, {1, 1}},
      {{-1, 5}, {-3, -big}, {-1, 0}, {-1, -2}},
      {{3, 0}, {big, 100}, {0, 2}, {1, 2}},
      {{1, 0}, {7, 6}, {2, -3}, {2, 2}}};
  for (const auto& v : ok) {
    std::vector<RValue> in = {x};
    for (const auto& part : v) in.push_back(RValue::of(tensorOfInts(DType::I64, part)));
    ASSERT_EQ(interpret(*m.graph, in)[0].tensor.shape(), (Dims{3, 5, 2}));
    expectRunMatches(exe, *m.graph, in);
  }
  // A value set implying another shape: an error, not a wrong answer.
  EXPECT_THROW(exe.run({x, RValue::of(tensorOfInts(DType::I64, {0, 0})),
                        RValue::of(tensorOfInts(DType::I64, {4, 2})),
                        RValue::of(tensorOfInts(DType::I64, {0, 2})),
                        RValue::of(tensorOfInts(DType::I64, {1, 1}))}),
               Error);
}

TEST(JitRearrange, PadWithPadsAtRunTime) {
  for (const std::string mode : {"constant", "edge", "reflect", "wrap"}) {
    SCOPED_TRACE(mode);
    Model m = parseWithShapes("graph @g(%x: f32[3,4,5], %p: i64[4], %c: f32[], %a: i64[2]) {\n"
                              "  %y = Pad(%x, %p, %c, %a) {mode = \"" +
                              mode + "\"}\n  return %y\n}\n");
    m.graph->outputs[0]->type.shape = Shape{Dim::known(3), Dim::known(6), Dim::known(6)};
    runtime::JitExecutable exe(*m.graph);
    Tensor c(DType::F32, {});
    c.setF64(0, 7.5);
    const RValue x = RValue::of(iota(DType::F32, {3, 4, 5})), cv = RValue::of(c);
    // [3, 4 + 2, 5 + 1] three ways: axes (1, 2) and (-1, -2), and a negative pad that crops.
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ok = {
        {{1, 1, 1, 0}, {1, 2}}, {{0, 2, 1, 0}, {-1, -2}}, {{3, 2, -1, -1}, {1, 2}}};
    for (const auto& [pads, axes] : ok) {
      const std::vector<RValue> in = {x, RValue::of(tensorOfInts(DType::I64, pads)), cv,
                                      RValue::of(tensorOfInts(DType::I64, axes))};
      expectRunMatches(exe, *m.graph, in);
    }
    EXPECT_THROW(exe.run({x, RValue::of(tensorOfInts(DType::I64, {1, 1, 1, 1})), cv,
                          RValue::of(tensorOfInts(DType::I64, {1, 2}))}),
                 Error);
  }
}

TEST(JitRearrange, OneHotWithTheDepthAtRunTime) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const std::string type : {"f32", "i64"})
    for (int axis : {-1, 0, 1}) {
      SCOPED_TRACE(type + " axis " + std::to_string(axis));
      Dims od = {2, 3};
      od.insert(od.begin() + (axis < 0 ? 2 : axis), 4);
      Model m =
          parseWithShapes("graph @g(%i: " + type +
                          "[2,3], %d: f32[], %v: i32[2]) {\n  %y = OneHot(%i, %d, %v) {axis = " +
                          std::to_string(axis) + "}\n  return %y\n}\n");
      Shape os;
      for (int64_t x : od) os.push_back(Dim::known(x));
      m.graph->outputs[0]->type.shape = os;
      runtime::JitExecutable exe(*m.graph);
      const DType it = *dtypeFromName(type);
      Tensor ind(it, {2, 3});
      const std::vector<double> iv = {0, 3, -1, -4, 7, type == "f32" ? inf : 2};
      for (int64_t k = 0; k < 6; ++k) ind.setF64(k, iv[size_t(k)]);
      if (type == "f32") ind.data<float>()[4] = std::nanf("");
      Tensor depth(DType::F32, {}), vals(DType::I32, {2});
      depth.setF64(0, 4.0);
      vals.setI64(0, -5), vals.setI64(1, 9);
      const std::vector<RValue> in = {RValue::of(ind), RValue::of(depth), RValue::of(vals)};
      expectRunMatches(exe, *m.graph, in);
      depth.setF64(0, 5.0);
      EXPECT_THROW(exe.run({in[0], RValue::of(depth), in[2]}), Error);
    }
}

TEST(JitRearrange, ConstantOfShapeWithTheShapeAtRunTime) {
  for (const std::string value :
       {"", " {value = tensor i32[1] [-7]}", " {value = tensor f16[1] [2.5]}"}) {
    SCOPED_TRACE(value);
    Model m = parseWithShapes("graph @g(%s: i64[3]) {\n  %y = ConstantOfShape(%s)" + value +
                              "\n  return %y\n}\n");
    m.graph->outputs[0]->type.shape = Shape{Dim::known(2), Dim::known(3), Dim::known(5)};
    runtime::JitExecutable exe(*m.graph);
    const std::vector<RValue> in = {RValue::of(tensorOfInts(DType::I64, {2, 3, 5}))};
    expectRunMatches(exe, *m.graph, in);
    EXPECT_THROW(exe.run({RValue::of(tensorOfInts(DType::I64, {2, 3, 4}))}), Error);
  }
  // An empty output: nothing stored, the shape still checked.
  Model e = parseWithShapes("graph @g(%s: i64[2]) {\n  %y = ConstantOfShape(%s)\n  return %y\n}\n");
  e.graph->outputs[0]->type.shape = Shape{Dim::known(3), Dim::known(0)};
  runtime::JitExecutable exe(*e.graph);
  expectRunMatches(exe, *e.graph, {RValue::of(tensorOfInts(DType::I64, {3, 0}))});
  EXPECT_THROW(exe.run({RValue::of(tensorOfInts(DType::I64, {3, 1}))}), Error);
}

TEST(JitRearrange, RangeChecksItsCount) {
  struct Case {
    std::string type;
    double start, limit, delta;
    int64_t n;
  };
  const Case cases[] = {{"f32", 1.5, 4.0, 0.5, 5}, {"f64", 10, 2, -3, 3}, {"f16", -1, 1, 0.25, 8},
                        {"i32", 10, -3, -4, 4},    {"i64", -5, 7, 3, 4},  {"i16", 3, 4, 5, 1}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type + " " + std::to_string(c.start) + ".." + std::to_string(c.limit));
    const std::string t = c.type + "[]";
    Model m = parseWithShapes("graph @g(%a: " + t + ", %b: " + t + ", %d: " + t +
                              ") {\n  %y = Range(%a, %b, %d)\n  return %y\n}\n");
    m.graph->outputs[0]->type.shape = Shape{Dim::known(c.n)};
    runtime::JitExecutable exe(*m.graph);
    const DType dt = *dtypeFromName(c.type);
    auto scalar = [&](double v) {
      Tensor x(dt, {});
      x.setF64(0, v);
      return RValue::of(x);
    };
    expectRunMatches(exe, *m.graph, {scalar(c.start), scalar(c.limit), scalar(c.delta)});
    // Another count, and a zero delta, are the run's errors.
    EXPECT_THROW(exe.run({scalar(c.start), scalar(c.limit + 3 * c.delta), scalar(c.delta)}), Error);
    EXPECT_THROW(exe.run({scalar(c.start), scalar(c.limit), scalar(0)}), Error);
  }
}

} // namespace
} // namespace aicc
