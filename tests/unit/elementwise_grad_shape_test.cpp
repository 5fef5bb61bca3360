// Gradient rules of the shape and data-movement ops, checked against central finite differences
// in float64 (grad_check.h).
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
GradCheckInput ints(std::vector<int64_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return fixed(Tensor::fromI64(v, {n}));
}
GradCheckInput ints(std::vector<int64_t> v, Dims shape) { return fixed(Tensor::fromI64(v, shape)); }
GradCheckInput omitted() { return {Tensor(), false, true}; }
Attribute i(int64_t v) { return Attribute{v}; }
Attribute is(std::vector<int64_t> v) { return Attribute{std::move(v)}; }
Attribute s(std::string v) { return Attribute{std::move(v)}; }

#define EXPECT_GRAD(...)                                                                           \
  do {                                                                                             \
    GradCheckResult r_ = checkOpGradient(__VA_ARGS__);                                             \
    EXPECT_LT(r_.maxRelError, 1e-6) << r_.worst;                                                   \
  } while (0)

} // namespace

TEST(ShapeGrad, Reshape) {
  EXPECT_GRAD("Reshape", {var({2, 3, 4}, 1), ints({4, -1})});
  EXPECT_GRAD("Reshape", {var({6}, 2), ints({0 + 1, 2, 3})});
  EXPECT_GRAD("Reshape", {var({1}, 3), ints({}, {0})});
}
TEST(ShapeGrad, Flatten) {
  for (int64_t axis : {0, 1, 2, -1})
    EXPECT_GRAD("Flatten", {var({2, 3, 4}, 1)}, {{"axis", i(axis)}});
}
TEST(ShapeGrad, SqueezeUnsqueeze) {
  EXPECT_GRAD("Squeeze", {var({2, 1, 3, 1}, 1)});
  EXPECT_GRAD("Squeeze", {var({2, 1, 3, 1}, 2), ints({-1})});
  EXPECT_GRAD("Unsqueeze", {var({2, 3}, 3), ints({0, -1})});
  EXPECT_GRAD("Unsqueeze", {var({}, 4), ints({0})});
}
TEST(ShapeGrad, Transpose) {
  EXPECT_GRAD("Transpose", {var({2, 3, 4}, 1)});
  EXPECT_GRAD("Transpose", {var({2, 3, 4}, 2)}, {{"perm", is({1, 2, 0})}});
  EXPECT_GRAD("Transpose", {var({2, 3, 4, 5}, 3)}, {{"perm", is({3, 0, 2, 1})}});
}
TEST(ShapeGrad, Expand) {
  EXPECT_GRAD("Expand", {var({3, 1}, 1), ints({2, 3, 4})});
  EXPECT_GRAD("Expand", {var({}, 2), ints({2, 2})});
  EXPECT_GRAD("Expand", {var({2, 3}, 3), ints({1, 3})}); // shape smaller than the input
  EXPECT_GRAD("Expand", {var({1, 4}, 4), ints({3, 1})});
}
TEST(ShapeGrad, Tile) {
  EXPECT_GRAD("Tile", {var({2, 3}, 1), ints({2, 3})});
  EXPECT_GRAD("Tile", {var({2, 1, 3}, 2), ints({1, 4, 2})});
  EXPECT_GRAD("Tile", {var({3}, 3), ints({1})});
}
TEST(ShapeGrad, Concat) {
  EXPECT_GRAD("Concat", {var({2, 3}, 1), var({2, 2}, 2), var({2, 1}, 3)}, {{"axis", i(1)}});
  EXPECT_GRAD("Concat", {var({1, 3}, 4), fixed(randomTensor({2, 3}, 5)), var({3, 3}, 6)},
              {{"axis", i(-2)}});
  EXPECT_GRAD("Concat", {var({2, 0}, 7), var({2, 2}, 8)}, {{"axis", i(1)}});
  EXPECT_GRAD("Concat", {var({4}, 9)}, {{"axis", i(0)}});
}
TEST(ShapeGrad, Split) {
  EXPECT_GRAD("Split", {var({6, 2}, 1)}, {{"num_outputs", i(3)}}, 3);
  EXPECT_GRAD("Split", {var({2, 7}, 2)}, {{"axis", i(1)}, {"num_outputs", i(3)}}, 3);
  EXPECT_GRAD("Split", {var({2, 7}, 3), ints({2, 4, 1})}, {{"axis", i(-1)}}, 3);
  // Only some outputs feed the loss.
  EXPECT_GRAD("Split", {var({2, 7}, 4), ints({2, 4, 1})}, {{"axis", i(1)}}, 3, {1});
  EXPECT_GRAD("Split", {var({5, 2}, 5), ints({3, 2})}, {}, 2, {0});
}
TEST(ShapeGrad, Slice) {
  Dims d{4, 5, 6};
  EXPECT_GRAD("Slice", {var(d, 1), ints({1, 0}), ints({3, 4})});
  EXPECT_GRAD("Slice", {var(d, 2), ints({1}), ints({100}), ints({-1})});
  EXPECT_GRAD("Slice", {var(d, 3), ints({0, 5}), ints({6, -100}), ints({2, 0}), ints({2, -2})});
  EXPECT_GRAD("Slice", {var(d, 4), ints({-1, 1}), ints({-7, 5}), ints({-2, -1}), ints({-1, 3})});
  EXPECT_GRAD("Slice", {var(d, 5), ints({3}), ints({2}), ints({0})}); // empty
  EXPECT_GRAD("Slice", {var(d, 6), ints({1}), ints({4}), omitted(), ints({2})});
}
TEST(ShapeGrad, Gather) {
  EXPECT_GRAD("Gather", {var({5, 3}, 1), ints({0, 2, 2, -1}, {2, 2})});
  EXPECT_GRAD("Gather", {var({2, 5, 3}, 2), ints({4, 0, 4}, {3})}, {{"axis", i(1)}});
  EXPECT_GRAD("Gather", {var({2, 5, 3}, 3), ints({1}, {})}, {{"axis", i(-1)}});
  EXPECT_GRAD("Gather", {var({5}, 4), ints({3, 3, 3, 0, 1, 2}, {2, 3})});
}
TEST(ShapeGrad, GatherElements) {
  EXPECT_GRAD("GatherElements", {var({3, 4}, 1), ints({0, 2, 2, 1, 1, 1, 0, -1}, {2, 4})});
  EXPECT_GRAD("GatherElements", {var({3, 4}, 2), ints({3, 3, 0, 1, 2, -4}, {3, 2})},
              {{"axis", i(1)}});
}
TEST(ShapeGrad, GatherND) {
  EXPECT_GRAD("GatherND", {var({3, 4}, 1), ints({0, 1, 2, 3, 0, 1}, {3, 2})});
  EXPECT_GRAD("GatherND", {var({3, 4, 2}, 2), ints({2, 0, 2}, {3, 1})});
  EXPECT_GRAD("GatherND", {var({2, 3, 4}, 3), ints({1, 0, 2, 1}, {2, 2})}, {{"batch_dims", i(1)}});
}
TEST(ShapeGrad, Pad) {
  Dims d{2, 3, 4};
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    SCOPED_TRACE(mode);
    EXPECT_GRAD("Pad", {var(d, 1), ints({0, 1, 2, 1, 0, 3})}, {{"mode", s(mode)}});
    EXPECT_GRAD("Pad", {var(d, 2), ints({1, 2, 2, 1}), omitted(), ints({-1, 1})},
                {{"mode", s(mode)}});
    // Negative pads crop.
    EXPECT_GRAD("Pad", {var(d, 3), ints({0, -1, 1, 1, 0, -2})}, {{"mode", s(mode)}});
  }
  // The constant value's gradient: the sum of dy over the padding.
  EXPECT_GRAD("Pad", {var(d, 4), ints({0, 1, 2, 1, 0, 3}), var({}, 5)});
  EXPECT_GRAD("Pad", {var(d, 6), ints({1, 1}), var({1}, 7), ints({2})});
  EXPECT_GRAD("Pad", {var(d, 8), ints({1, 1}), var({}, 9), ints({2})}, {{"mode", s("edge")}});
}
TEST(ShapeGrad, DepthSpace) {
  EXPECT_GRAD("DepthToSpace", {var({1, 8, 2, 3}, 1)}, {{"blocksize", i(2)}});
  EXPECT_GRAD("DepthToSpace", {var({1, 8, 2, 3}, 2)}, {{"blocksize", i(2)}, {"mode", s("CRD")}});
  EXPECT_GRAD("DepthToSpace", {var({2, 18, 1, 2}, 3)}, {{"blocksize", i(3)}});
  EXPECT_GRAD("DepthToSpace", {var({2, 18, 2, 1}, 4)}, {{"blocksize", i(3)}, {"mode", s("CRD")}});
  EXPECT_GRAD("SpaceToDepth", {var({1, 2, 4, 6}, 5)}, {{"blocksize", i(2)}});
  EXPECT_GRAD("SpaceToDepth", {var({2, 1, 6, 3}, 6)}, {{"blocksize", i(3)}});
}
TEST(ShapeGrad, Compress) {
  // The output shape depends on the condition's values, so the model is built by hand:
  // loss = ReduceSum(Sin(Compress(x, cond))).
  for (int64_t axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    auto factory = [axis] {
      Model m;
      m.opsets[""] = 23;
      m.graph = std::make_shared<Graph>();
      Graph& g = *m.graph;
      auto node = [&](const std::string& o, std::vector<Value*> ins, const std::string& out) {
        Node* n = g.addNode(o, std::move(ins), {out});
        n->def = OpRegistry::instance().find("", o);
        return n;
      };
      Value* x = g.addInput("x", Type::tensor(DType::F64, staticShape({4, 4})));
      Tensor cond(DType::Bool, {4});
      cond.setI64(1, 1);
      cond.setI64(3, 1);
      Node* c = node("Compress", {x, g.addConstant("cond", cond)}, "y");
      c->attrs["axis"] = Attribute{axis};
      Node* sq = node("Sin", {c->outputs[0]}, "sy");
      Node* sum = node("ReduceSum", {sq->outputs[0]}, "loss");
      sum->attrs["keepdims"] = Attribute{int64_t{0}};
      g.outputs = {sum->outputs[0]};
      inferShapes(g);
      return m;
    };
    GradCheckResult r = checkModelGradient(factory, "loss", {"x"}, {randomTensor({4, 4}, 1)});
    EXPECT_LT(r.maxRelError, 1e-6) << r.worst;
  }
}
TEST(ShapeGrad, ReverseSequence) {
  EXPECT_GRAD("ReverseSequence", {var({4, 3, 2}, 1), ints({4, 1, 3})},
              {{"batch_axis", i(1)}, {"time_axis", i(0)}});
}
TEST(ShapeGrad, Trilu) {
  for (int64_t upper : {0, 1}) {
    EXPECT_GRAD("Trilu", {var({3, 4}, 1)}, {{"upper", i(upper)}});
    EXPECT_GRAD("Trilu", {var({2, 4, 3}, 2), fixed(Tensor::fromI64({-1}, {}))},
                {{"upper", i(upper)}});
  }
}
