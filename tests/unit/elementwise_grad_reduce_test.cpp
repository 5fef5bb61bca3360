// Gradient rules of the reductions, Softmax/LogSoftmax and CumSum, checked against central finite
// differences in float64 (grad_check.h).
#include "grad_check.h"

#include "ops/op_def.h"
#include "passes/shape_inference.h"

#include <gtest/gtest.h>

using namespace aicc;
using namespace aicc::test;

namespace {

GradCheckInput var(Dims s, uint32_t seed, double lo = -1, double hi = 1) {
  return {randomTensor(std::move(s), seed, lo, hi), true, false};
}
GradCheckInput fixed(Tensor t) { return {std::move(t), false, false}; }
Attribute i(int64_t v) { return Attribute{v}; }

#define EXPECT_GRAD(...)                                                                           \
  do {                                                                                             \
    GradCheckResult r_ = checkOpGradient(__VA_ARGS__);                                             \
    EXPECT_LT(r_.maxRelError, 1e-6) << r_.worst;                                                   \
  } while (0)

// Every axes/keepdims/noop variant of a reduction on a few shapes; values in [lo, hi].
void checkReduce(const std::string& op, double lo = -1, double hi = 1) {
  const std::vector<std::pair<Dims, std::optional<std::vector<int64_t>>>> cases = {
      {{2, 3, 4}, std::nullopt},
      {{2, 3, 4}, std::vector<int64_t>{1}},
      {{2, 3, 4}, std::vector<int64_t>{0, 2}},
      {{2, 3, 4}, std::vector<int64_t>{-1}},
      {{2, 3, 4}, std::vector<int64_t>{-1, 0}},
      {{2, 3, 4}, std::vector<int64_t>{}},
      {{5}, std::vector<int64_t>{0}},
      {{5}, std::nullopt},
      {{3, 1, 2}, std::vector<int64_t>{1}}};
  uint32_t seed = 1;
  for (const auto& [shape, axes] : cases)
    for (int64_t keep : {0, 1})
      for (int64_t noop : {0, 1}) {
        SCOPED_TRACE(fmt::format("{} {} axes={} keepdims={} noop={}", op, formatDims(shape),
                                 axes ? formatDims(*axes) : "absent", keep, noop));
        std::vector<GradCheckInput> ins{var(shape, seed++, lo, hi)};
        if (axes)
          ins.push_back(fixed(Tensor::fromI64(*axes, {static_cast<int64_t>(axes->size())})));
        std::map<std::string, Attribute> attrs{{"keepdims", i(keep)},
                                               {"noop_with_empty_axes", i(noop)}};
        bool ambiguous =
            op == "ReduceL1" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceSumSquare";
        if (noop && (!axes || axes->empty()) && ambiguous)
          EXPECT_THROW(checkOpGradient(op, ins, attrs), Error); // x or its map: refused
        else
          EXPECT_GRAD(op, ins, attrs);
      }
}

// loss = sum(op(x, axes, keepdims=0) * R) with `axes` a graph input (known at run time only).
GradCheckResult checkDynamicAxes(const std::string& op, const std::vector<int64_t>& axes, double lo,
                                 double hi, int64_t noop = 0) {
  auto factory = [&] {
    Model m;
    m.opsets[""] = 23;
    m.graph = std::make_shared<Graph>();
    Graph& g = *m.graph;
    auto node = [&](const std::string& o, std::vector<Value*> ins, const std::string& out) {
      Node* n = g.addNode(o, std::move(ins), {out});
      n->def = OpRegistry::instance().find("", o);
      return n;
    };
    Value* x = g.addInput("x", Type::tensor(DType::F64, staticShape({2, 3, 4})));
    Value* a = g.addInput(
        "axes", Type::tensor(DType::I64, staticShape({static_cast<int64_t>(axes.size())})));
    Node* red = node(op, {x, a}, "y");
    red->attrs["keepdims"] = Attribute{int64_t{0}};
    red->attrs["noop_with_empty_axes"] = Attribute{noop};
    // Multiply by a broadcast random weight so every element matters.
    Value* w = g.addConstant("w", randomTensor({1}, 7, 0.5, 1.5));
    Node* m1 = node("Mul", {red->outputs[0], w}, "m");
    Node* s = node("ReduceSum", {m1->outputs[0]}, "loss");
    s->attrs["keepdims"] = Attribute{int64_t{0}};
    g.outputs = {s->outputs[0]};
    inferShapes(g);
    return m;
  };
  return checkModelGradient(factory, "loss", {"x"},
                            {randomTensor({2, 3, 4}, 3, lo, hi),
                             Tensor::fromI64(axes, {static_cast<int64_t>(axes.size())})});
}

} // namespace

TEST(ReductionGrad, ReduceSum) { checkReduce("ReduceSum"); }
TEST(ReductionGrad, ReduceMean) { checkReduce("ReduceMean"); }
TEST(ReductionGrad, ReduceMax) { checkReduce("ReduceMax"); }
TEST(ReductionGrad, ReduceMin) { checkReduce("ReduceMin"); }
TEST(ReductionGrad, ReduceProd) {
  checkReduce("ReduceProd", 0.5, 1.5);
  checkReduce("ReduceProd", -1.5, 1.5);
  // Zeros: one zero in a reduced row (it gets the product of the rest), two zeros (all zero).
  Tensor x = randomTensor({3, 4}, 5, 0.5, 1.5);
  x.setF64(1, 0.0);
  x.setF64(8, 0.0);
  x.setF64(10, 0.0);
  for (int64_t keep : {0, 1})
    for (int64_t axis : {0, 1})
      EXPECT_GRAD("ReduceProd", {{x, true, false}, fixed(Tensor::fromI64({axis}, {1}))},
                  {{"keepdims", i(keep)}});
}
TEST(ReductionGrad, ReduceL1) { checkReduce("ReduceL1"); }
TEST(ReductionGrad, ReduceL2) { checkReduce("ReduceL2"); }
TEST(ReductionGrad, ReduceLogSum) { checkReduce("ReduceLogSum", 0.2, 2); }
TEST(ReductionGrad, ReduceLogSumExp) { checkReduce("ReduceLogSumExp", -3, 3); }
TEST(ReductionGrad, ReduceSumSquare) { checkReduce("ReduceSumSquare"); }
TEST(ReductionGrad, DynamicAxes) {
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    for (const auto& axes : std::vector<std::vector<int64_t>>{{1}, {0, -1}, {}}) {
      SCOPED_TRACE(fmt::format("{} axes={}", op, formatDims(axes)));
      GradCheckResult r = checkDynamicAxes(op, axes, 0.5, 1.5);
      EXPECT_LT(r.maxRelError, 1e-6) << r.worst;
    }
  // noop_with_empty_axes with run-time axes: fine for the linear/selecting reductions.
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
    SCOPED_TRACE(op);
    GradCheckResult r = checkDynamicAxes(op, {}, 0.5, 1.5, 1);
    EXPECT_LT(r.maxRelError, 1e-6) << r.worst;
  }
  // ... and refused (clearly) for the others.
  EXPECT_THROW(checkDynamicAxes("ReduceL2", {1}, 0.5, 1.5, 1), Error);
}

TEST(ReductionGrad, Softmax) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    uint32_t seed = 1;
    for (int64_t axis : {-1, 0, 1, 2}) {
      SCOPED_TRACE(fmt::format("{} axis={}", op, axis));
      EXPECT_GRAD(op, {var({2, 3, 4}, seed++, -2, 2)}, {{"axis", i(axis)}});
    }
    EXPECT_GRAD(op, {var({5}, seed++, -2, 2)});
    EXPECT_GRAD(op, {var({3, 1}, seed++, -2, 2)}, {{"axis", i(1)}});
  }
}

TEST(ReductionGrad, CumSum) {
  uint32_t seed = 1;
  for (int64_t axis : {0, 1, -1})
    for (int64_t excl : {0, 1})
      for (int64_t rev : {0, 1}) {
        SCOPED_TRACE(fmt::format("axis={} exclusive={} reverse={}", axis, excl, rev));
        EXPECT_GRAD("CumSum", {var({2, 3, 4}, seed++), fixed(Tensor::fromI64({axis}, {}))},
                    {{"exclusive", i(excl)}, {"reverse", i(rev)}});
      }
  EXPECT_GRAD("CumSum", {var({6}, seed++), fixed(Tensor::fromI64({0}, {}))});
}

TEST(ReductionGrad, Einsum) {
  struct Case {
    std::string eq;
    std::vector<Dims> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{2, 3}, {3, 4}}},
      {"bij,bjk->bik", {{2, 2, 3}, {2, 3, 2}}},
      {"ij->", {{2, 3}}},
      {"ij->ji", {{2, 3}}},
      {"ijk->ik", {{2, 3, 4}}}, // j only in the operand: comes back through ones
      {"i,i->", {{4}, {4}}},
      {"i,j->ij", {{3}, {4}}},
      {"ij,j->i", {{3, 4}, {4}}},
      {"ij,jk", {{2, 3}, {3, 2}}}, // implicit output
      {"ij,ij->ij", {{2, 3}, {2, 3}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 2}, {2, 2}}},
      {"bhqd,bhkd->bhqk", {{1, 2, 3, 2}, {1, 2, 4, 2}}},
      {"...ij,...jk->...ik", {{2, 2, 3}, {2, 3, 2}}},
      {"i...,i->...", {{3, 2}, {3}}},
      {"ab, bc -> ca", {{2, 3}, {3, 2}}},
  };
  uint32_t seed = 1;
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.eq);
    std::vector<GradCheckInput> ins;
    for (const Dims& d : cs.shapes) ins.push_back(var(d, seed++));
    EXPECT_GRAD("Einsum", ins, {{"equation", Attribute{cs.eq}}});
  }
  // Diagonals are refused with a clear error.
  EXPECT_THROW(
      checkOpGradient("Einsum", {var({3, 3}, 1)}, {{"equation", Attribute{std::string("ii->i")}}}),
      Error);
}
