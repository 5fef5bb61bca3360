// Data-dependent dims (passes/data_dims.h, issue #12): NonZero's count, Compress's kept columns
// and TopK's run-time k get symbols with bounds; the artifact plans them at the bound, the task
// producing each writes its value into the shape block, and the nodes after it run compiled at
// the run's sizes. Every run matches the interpreter, zero counts included; a k past its axis is
// a one-line error naming the node.
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

namespace aicc {
namespace {

const char* kDataNet = R"(graph @g(%x: f32[N,6], %c: bool[6], %k: i64[1]) {
  %zero = Constant() {value = tensor f32[] [0]} : f32[]
  %two = Constant() {value = tensor f32[] [2]} : f32[]
  %pos = Greater(%x, %zero) : bool[N,6]
  %nz = NonZero(%pos) : i64[2,?]
  %nzt = Transpose(%nz) {perm = [1, 0]} : i64[?,2]
  %nzf = Cast(%nzt) {to = 1} : f32[?,2]
  %y = Mul(%nzf, %two) : f32[?,2]
  %xc = Compress(%x, %c) {axis = 1} : f32[N,?]
  %xr = Relu(%xc) : f32[N,?]
  %s = ReduceSum(%xr) {keepdims = 1} : f32[1,1]
  %v, %i = TopK(%x, %k) {axis = 1} : f32[N,?], i64[N,?]
  %vs = Sigmoid(%v) : f32[N,?]
  return %y, %xr, %s, %vs, %i
}
)";

Tensor boolTensor(const std::vector<int>& v) {
  Tensor t(DType::Bool, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.setI64(int64_t(i), v[i]);
  return t;
}

// m compiled into a fresh `folder` (ranges for its input symbols); its plan declares each of
// `symbols` and, when `compiledOnly`, has no fallback task.
std::filesystem::path compileChecked(Model& m, const std::string& folder,
                                     const std::vector<rt::Symbol>& ranges,
                                     std::initializer_list<const char*> symbols,
                                     bool compiledOnly) {
  const auto dir = test::compileArtifact(m, folder, ranges);
  const std::string plan = readFile((dir / "model.plan").string());
  for (const char* line : symbols)
    EXPECT_NE(plan.find(line), std::string::npos) << line << "\n" << plan;
  if (compiledOnly) {
    EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << plan;
  }
  return dir;
}

// The artifact against the interpreter on one input set: the same dims and values.
void expectRunMatches(const Graph& ref, runtime::LoadedArtifact& art,
                      const std::vector<RValue>& in) {
  const std::vector<RValue> want = interpret(ref, in), got = art.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].tensor.shape(), want[i].tensor.shape()) << "output " << i;
  test::expectOutputsClose(want, got, {1e-6, 1e-6});
}

TEST(DataDims, RunsMatchTheInterpreterAtEveryCount) {
  Model ref = parseModel(kDataNet), m = parseModel(kDataNet);
  // Bounds: NonZero of [4,6] has at most 24; Compress keeps at most 6 columns; k at most 6. Every
  // node compiled: the producers write their counts themselves (no fallback task).
  const auto dir = compileChecked(
      m, "aicc_data_dims_net", {{"N", 1, 4}},
      {"symbol nonzero.0 0 24 data", "symbol compress.0 0 6 data", "symbol topk.0 0 6 data"}, true);
  runtime::LoadedArtifact art(dir.string());
  struct Case {
    int64_t n;
    std::vector<int> keep;
    int64_t k;
    float shift; // all below 0: NonZero finds none
  } cases[] = {{1, {1, 0, 1, 1, 0, 0}, 3, 0},
               {3, {0, 0, 0, 0, 0, 0}, 0, 0},
               {4, {1, 1, 1, 1, 1, 1}, 6, 0},
               {2, {0, 1, 0, 0, 0, 1}, 1, -2}};
  for (const Case& c : cases) {
    std::vector<RValue> in = {
        RValue::of(test::uniformTensor({c.n, 6}, uint32_t(c.n * 13), -1 + c.shift, 1 + c.shift)),
        RValue::of(boolTensor(c.keep)), RValue::of(Tensor::fromI64({c.k}))};
    expectRunMatches(*ref.graph, art, in);
  }
  // k past its axis: the producing task's error, naming the node, in one line.
  std::vector<RValue> in = {RValue::of(test::uniformTensor({2, 6}, 5)),
                            RValue::of(boolTensor({1, 1, 1, 1, 1, 1})),
                            RValue::of(Tensor::fromI64({7}))};
  try {
    art.run(in);
    ADD_FAILURE() << "k = 7 of 6 ran";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("TopK"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// Unique after a symbolic batch, compiled (loop/lower_select.cpp; no fallback task): over the
// elements sorted, along the rows in input order; the count of distinct values or rows is each
// one's data symbol, the nodes after them compiled at it. Inputs with repeated rows and values,
// a single row, all equal.
TEST(DataDims, UniqueIsCompiled) {
  const char* ir = R"(graph @g(%x: f32[N,4]) {
  %r = Round(%x) : f32[N,4]
  %v, %i, %inv, %c = Unique(%r) : f32[?], i64[?], i64[?], i64[?]
  %vs = Sigmoid(%v) : f32[?]
  %rows, %ri, %rinv, %rc = Unique(%r) {axis = 0, sorted = 0} : f32[?,4], i64[?], i64[N], i64[?]
  %rt = Transpose(%rows) {perm = [1, 0]} : f32[4,?]
  return %vs, %i, %inv, %c, %rt, %ri, %rinv, %rc
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  const auto dir = compileChecked(m, "aicc_data_dims_unique", {{"N", 1, 6}},
                                  {"symbol unique.0 0 24 data", "symbol unique.1 0 6 data"}, true);
  runtime::LoadedArtifact art(dir.string());
  for (int64_t n : {1, 3, 6}) {
    Tensor x = test::uniformTensor({n, 4}, uint32_t(n), -2, 2);
    for (int64_t k = 4; k < x.numel(); ++k) // row 2 repeats row 0
      if (k / 4 == 2) x.data<float>()[k] = x.data<float>()[k - 8];
    expectRunMatches(*ref.graph, art, {RValue::of(x)});
  }
  Tensor same(DType::F32, {5, 4}); // one distinct value and row
  expectRunMatches(*ref.graph, art, {RValue::of(same)});
}

// An If on data whose branches' results differ in size (4 columns or 2): that dim is a data
// symbol, each branch compiled, copying its result and writing its size; the nodes after it
// compiled at the run's size. Both branches at three batches.
TEST(DataDims, AnIfWithResultsOfDifferentSizes) {
  const char* ir = R"(graph @g(%x: f32[N,4], %c: bool[]) {
  %z = Constant() {value = tensor i64[1] [0]} : i64[1]
  %one = Constant() {value = tensor i64[1] [1]} : i64[1]
  %two = Constant() {value = tensor i64[1] [2]} : i64[1]
  %y = If(%c) {
    else_branch = graph @e() {
      %s = Slice(%x, %z, %two, %one) : f32[N,2]
      return %s
    },
    then_branch = graph @t() {
      %r = Relu(%x) : f32[N,4]
      return %r
    }
  } : f32[N,?]
  %e = Exp(%y) : f32[N,?]
  %sum = ReduceSum(%e, %one) {keepdims = 1} : f32[N,1]
  return %e, %sum
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  const auto dir =
      compileChecked(m, "aicc_data_dims_if", {{"N", 1, 4}}, {"symbol if.0 0 4 data"}, true);
  EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  for (int64_t n : {1, 2, 4})
    for (int c : {1, 0}) {
      Tensor cond(DType::Bool, {});
      cond.setI64(0, c);
      expectRunMatches(
          *ref.graph, art,
          {RValue::of(test::uniformTensor({n, 4}, uint32_t(n), -1, 1)), RValue::of(cond)});
    }
}

// NonMaxSuppression compiled after a symbolic batch: the selected rows are a data symbol. Random
// overlapping boxes in both formats (corners given in either order; centers), scores with ties
// and NaNs, with and without a score threshold, several IoU thresholds and output limits: the
// same rows as the interpreter, in the same order.
TEST(DataDims, NonMaxSuppressionIsCompiled) {
  const char* ir = R"(graph @g(%boxes: f32[N,12,4], %scores: f32[N,3,12], %k: i64[], %iou: f32[],
                       %thr: f32[]) {
  %a = NonMaxSuppression(%boxes, %scores, %k, %iou, %thr) : i64[?,3]
  %c = NonMaxSuppression(%boxes, %scores, %k, %iou) {center_point_box = 1} : i64[?,3]
  return %a, %c
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  const auto dir = compileChecked(
      m, "aicc_data_dims_nms", {{"N", 1, 3}},
      {"symbol nonmaxsuppression.0 0 108 data", "symbol nonmaxsuppression.1 0 108 data"}, true);
  runtime::LoadedArtifact art(dir.string());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0, 1);
  int64_t rows = 0;
  for (int round = 0; round < 12; ++round) {
    const int64_t n = 1 + round % 3;
    Tensor boxes(DType::F32, {n, 12, 4}), scores(DType::F32, {n, 3, 12});
    for (int64_t e = 0; e < boxes.numel(); ++e) // a 4x4 field: many overlaps
      boxes.data<float>()[e] = std::round(u(rng) * 16) / 4;
    for (int64_t e = 0; e < scores.numel(); ++e)
      scores.data<float>()[e] = std::round(u(rng) * 8) / 8; // ties
    scores.data<float>()[round % scores.numel()] = std::nanf("");
    Tensor k(DType::I64, {}), iou(DType::F32, {}), thr(DType::F32, {});
    k.setI64(0, round % 4 == 0 ? 100 : round % 5);
    iou.setF64(0, 0.1 * (round % 6));
    thr.setF64(0, 0.25 * (round % 3));
    const std::vector<RValue> in = {RValue::of(boxes), RValue::of(scores), RValue::of(k),
                                    RValue::of(iou), RValue::of(thr)};
    expectRunMatches(*ref.graph, art, in);
    for (const RValue& r : interpret(*ref.graph, in)) rows += r.tensor.shape()[0];
  }
  EXPECT_GT(rows, 100); // (the cases select boxes, and suppress some)
}

// A Slice of run-time starts and ends: each dim of its result its own data symbol, the tasks
// after it at the run's sizes; a zero step is the run's error.
TEST(DataDims, ASliceOfRunTimeBoundsSetsEachDim) {
  const char* ir = R"(graph @g(%x: f32[5,7], %st: i64[2], %en: i64[2], %sp: i64[2]) {
  %axes = Constant() {value = tensor i64[2] [0, 1]} : i64[2]
  %s = Slice(%x, %st, %en, %axes, %sp) : f32[?,?]
  %t = Transpose(%s) {perm = [1, 0]} : f32[?,?]
  %y = Exp(%t) : f32[?,?]
  return %y
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  const auto dir = compileChecked(m, "aicc_data_dims_slice", {},
                                  {"symbol slice.0 0 5 data", "symbol slice.1 0 7 data"}, true);
  runtime::LoadedArtifact art(dir.string());
  const Tensor x = test::uniformTensor({5, 7}, 3);
  for (const auto& [st, en, sp] :
       std::vector<std::array<std::vector<int64_t>, 3>>{{{{0, 0}, {5, 7}, {1, 1}}},
                                                        {{{1, 2}, {4, 3}, {1, 1}}},
                                                        {{{4, -1}, {0, 0}, {-1, -2}}},
                                                        {{{3, 3}, {3, 3}, {1, 1}}},
                                                        {{{-100, 1}, {100, 6}, {2, 3}}}}) {
    expectRunMatches(*ref.graph, art,
                     {RValue::of(x), RValue::of(Tensor::fromI64(st)),
                      RValue::of(Tensor::fromI64(en)), RValue::of(Tensor::fromI64(sp))});
  }
  std::vector<RValue> in = {RValue::of(x), RValue::of(Tensor::fromI64({0, 0})),
                            RValue::of(Tensor::fromI64({5, 7})),
                            RValue::of(Tensor::fromI64({1, 0}))};
  EXPECT_THROW(art.run(in), Error);
}

// GPT-2's causal mask: a constant [1, 1, 8, 8] buffer sliced to the length S the run gives
// (ends from Shape), its slices meeting the scores' S in a Where. The slices' data symbols are S
// (name-data-dims: they meet S in a broadcast), so the Where, Softmax and MatMul after them
// compile at the run's S; the Slices check their counts against S, so a length past the buffer
// is the run's error (ONNX Runtime fails there too), not a wrong answer.
TEST(DataDims, ACausalMaskBufferSlicedByTheLength) {
  std::string tril;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) tril += std::string(r || c ? ", " : "") + (c <= r ? "1" : "0");
  const std::string ir = R"(graph @g(%q: f32[N,2,S,4], %k: f32[N,2,4,S]) {
  %bias = Constant() {value = tensor f32[1,1,8,8] [)" +
                         tril + R"(]} : f32[1,1,8,8]
  %sh = Shape(%q) : i64[4]
  %i2 = Constant() {value = tensor i64[1] [2]} : i64[1]
  %i3 = Constant() {value = tensor i64[1] [3]} : i64[1]
  %z = Constant() {value = tensor i64[1] [0]} : i64[1]
  %s = Slice(%sh, %i2, %i3) : i64[1]
  %b1 = Slice(%bias, %z, %s, %i3) : f32[1,1,8,?]
  %b2 = Slice(%b1, %z, %s, %i2) : f32[1,1,?,?]
  %m = Cast(%b2) {to = 9} : bool[1,1,?,?]
  %sc = MatMul(%q, %k) : f32[N,2,S,S]
  %ninf = Constant() {value = tensor f32[] [-1000000000]} : f32[]
  %w = Where(%m, %sc, %ninf) : f32[N,2,?,?]
  %p = Softmax(%w) {axis = -1} : f32[N,2,?,?]
  %o = MatMul(%p, %q) : f32[N,2,?,4]
  return %o
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  const auto dir = compileChecked(m, "aicc_data_dims_causal_mask", {{"N", 1, 2}, {"S", 1, 16}},
                                  {"output o f32 N,2,S,4"}, true);
  runtime::LoadedArtifact art(dir.string());
  for (auto [n, l] : {std::pair<int64_t, int64_t>{1, 1}, {2, 5}, {1, 8}})
    expectRunMatches(*ref.graph, art,
                     {RValue::of(test::uniformTensor({n, 2, l, 4}, uint32_t(l))),
                      RValue::of(test::uniformTensor({n, 2, 4, l}, uint32_t(l + 1)))});
  EXPECT_THROW(art.run({RValue::of(test::uniformTensor({1, 2, 9, 4}, 1)),
                        RValue::of(test::uniformTensor({1, 2, 4, 9}, 2))}),
               Error);
}

// Reductions over axes given at run time (lower_reduce.cpp reduceByMask): each result dim is a
// data symbol (1 or the input's with keepdims; one of the input's without: bound the sum of a
// symbolic input's dims), written by the compiled reduction from the run's mask, the Exp after it
// compiled at the run's sizes; a symbolic input (N) is reduced at the run's size; a dim that a
// later node's declared shape fixes is checked instead. Every axis set, and bad axes (out of range,
// repeated): the interpreter's error.
TEST(DataDims, AReductionOverRunTimeAxes) {
  const char* ir = R"(graph @g(%x: f32[N,4], %axes: i64[1], %two: i64[2]) {
  %r = ReduceSum(%x, %axes) : f32[?,?]
  %y = Exp(%r) : f32[?,?]
  %m = ReduceMean(%x, %axes) {keepdims = 0} : f32[?]
  %l = ReduceLogSumExp(%x, %two) : f32[?,?]
  %z = ReduceMax(%x, %two) {keepdims = 0} : f32[]
  %q = ReduceL2(%x, %axes) {keepdims = 0} : f32[?]
  %ql = Sqrt(%q) : f32[4]
  return %y, %m, %l, %z, %ql
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  const auto dir = compileChecked(m, "aicc_data_dims_reduce", {{"N", 1, 5}},
                                  {"symbol reducesum.0 0 5 data", "symbol reducesum.1 0 4 data",
                                   "symbol reducemean.0 0 9 data"},
                                  true);
  runtime::LoadedArtifact art(dir.string());
  for (int64_t n : {1, 3, 5})
    for (int64_t axis : {0, 1, -1, -2})
      for (const auto& two : {std::vector<int64_t>{0, 1}, {1, -2}}) {
        SCOPED_TRACE(testing::Message() << "N " << n << ", axis " << axis);
        const std::vector<RValue> in = {RValue::of(test::uniformTensor({n, 4}, 9 + n)),
                                        RValue::of(Tensor::fromI64({axis})),
                                        RValue::of(Tensor::fromI64(two))};
        if (axis == 0 || axis == -2) { // %ql's declared [4] holds only for reducing dim 0
          expectRunMatches(*ref.graph, art, in);
          continue;
        }
        // (the interpreter does not check declared shapes: its %ql is [N])
        EXPECT_EQ(interpret(*ref.graph, in).back().tensor.shape(), Dims{n});
        try {
          art.run(in);
          ADD_FAILURE() << "ran with %ql of " << n << " elements, declared 4";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("differs from the 4"), std::string::npos)
              << e.what();
        }
      }
  for (const auto& bad : {std::vector<int64_t>{2}, {-3}}) { // out of range
    const std::vector<RValue> in = {RValue::of(test::uniformTensor({2, 4}, 1)),
                                    RValue::of(Tensor::fromI64(bad)),
                                    RValue::of(Tensor::fromI64({0, 1}))};
    EXPECT_THROW(interpret(*ref.graph, in), Error);
    EXPECT_THROW(art.run(in), Error);
  }
  const std::vector<RValue> twice = {RValue::of(test::uniformTensor({2, 4}, 1)),
                                     RValue::of(Tensor::fromI64({0})),
                                     RValue::of(Tensor::fromI64({1, 1}))};
  EXPECT_THROW(interpret(*ref.graph, twice), Error);
  EXPECT_THROW(art.run(twice), Error);
}

// noop_with_empty_axes with no axes given at run time leaves the input as it is: ReduceL1 and
// ReduceSumSquare (not the identity on one element) stay on their reference kernels at the run's
// sizes, ReduceSum compiles; all match the interpreter (|x| or x^2 would not).
TEST(DataDims, NoAxesWithNoopIsTheInput) {
  const char* ir = R"(graph @g(%x: f32[N,4], %none: i64[0]) {
  %a = ReduceL1(%x, %none) {noop_with_empty_axes = 1} : f32[N,4]
  %b = ReduceSumSquare(%x, %none) {noop_with_empty_axes = 1} : f32[N,4]
  %c = ReduceSum(%x, %none) {noop_with_empty_axes = 1} : f32[N,4]
  return %a, %b, %c
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  const auto dir = compileChecked(m, "aicc_data_dims_noop", {{"N", 1, 4}}, {}, false);
  runtime::LoadedArtifact art(dir.string());
  for (int64_t n : {1, 3})
    expectRunMatches(
        *ref.graph, art,
        {RValue::of(test::uniformTensor({n, 4}, 5)), RValue::of(Tensor(DType::I64, {0}))});
}

} // namespace
} // namespace aicc
