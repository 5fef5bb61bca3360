// The reduction family (src/ops/reduction*.cpp): shape inference with symbolic dims and unknown
// axes, exact int64 sums, and the opset < 13 Softmax upgrade (Flatten / Reshape around the op).
#include "frontend/onnx/onnx_importer.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "passes/shape_inference.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

using namespace aicc;

namespace {

// Parses `body` as the graph of a model importing opset 18 and runs shape inference.
Model inferred(const std::string& params, const std::string& body, const std::string& ret) {
  Model m = parseModel("model opsets={\"\": 18} {\ngraph @g(" + params + ") {\n" + body +
                       "\n  return " + ret + "\n}\n}\n");
  inferShapes(*m.graph);
  return m;
}

std::string typeOf(const Model& m, const std::string& name) {
  const Value* v = m.graph->lookup(name);
  return v ? formatType(v->type) : "<missing>";
}

} // namespace

TEST(Reduction, InferenceKeepsSymbolicDims) {
  Model m = inferred("%x: f32[N,3,L], %y: f32[N,4,5], %ax: i64[?], %ax2: i64[2]",
                     R"(  %a = const i64[1] [-1]
  %b = const i64[1] [1]
  %r1 = ReduceMean(%x, %a) : ?
  %r2 = ReduceSum(%x, %b) {keepdims = 0} : ?
  %r3 = ReduceMax(%x) {keepdims = 0} : ?
  %r4 = ReduceL2(%x, %ax) : ?
  %r5 = ReduceMin(%x, %ax) {keepdims = 0} : ?
  %r6 = ReduceProd(%x, %ax2) {keepdims = 0} : ?
  %am = ArgMax(%x) {axis = 1, keepdims = 0} : ?
  %k = const i64[1] [2]
  %tv, %ti = TopK(%x, %k) : ?, ?
  %sm = Softmax(%x) {axis = 1} : ?
  %e = Einsum(%x, %y) {equation = "bij,bjk->bik"} : ?
  %e2 = Einsum(%x) {equation = "...j->..."} : ?)",
                     "%r1, %r2, %r3, %r4, %r5, %r6, %am, %tv, %ti, %sm, %e, %e2");
  EXPECT_EQ(typeOf(m, "r1"), "f32[N,3,1]");
  EXPECT_EQ(typeOf(m, "r2"), "f32[N,L]");
  EXPECT_EQ(typeOf(m, "r3"), "f32[]");
  EXPECT_EQ(typeOf(m, "r4"), "f32[?,?,?]"); // axes unknown: only the rank is known
  EXPECT_EQ(typeOf(m, "r5"), "f32[*]");     // ... and not even that without keepdims
  EXPECT_EQ(typeOf(m, "r6"), "f32[?]");     // two axes reduced, which ones is unknown
  EXPECT_EQ(typeOf(m, "am"), "i64[N,L]");
  EXPECT_EQ(typeOf(m, "tv"), "f32[N,3,2]");
  EXPECT_EQ(typeOf(m, "ti"), "i64[N,3,2]");
  EXPECT_EQ(typeOf(m, "sm"), "f32[N,3,L]");
  EXPECT_EQ(typeOf(m, "e"), "f32[N,3,5]");
  EXPECT_EQ(typeOf(m, "e2"), "f32[N,3]");
}

TEST(Reduction, Int64SumIsExact) {
  Model m = inferred("%x: i64[2,4]",
                     "  %a = const i64[1] [1]\n  %s = ReduceSum(%x, %a) {keepdims = 0} : ?", "%s");
  int64_t big = int64_t{1} << 62, p53 = (int64_t{1} << 53) + 1;
  Tensor x = Tensor::fromI64({big, 1, -big + 3, 7, p53, p53, 1, 1}, {2, 4});
  auto out = interpret(*m.graph, {RValue::of(x)}, {true});
  EXPECT_EQ(out[0].tensor.toI64Vector(), (std::vector<int64_t>{11, 2 * p53 + 2}));
}

TEST(Reduction, EmptyReductionsGiveIdentities) {
  Model m = inferred("%x: f32[2,0,3]", R"(  %a = const i64[1] [1]
  %s = ReduceSum(%x, %a) : ?
  %p = ReduceProd(%x, %a) : ?
  %mx = ReduceMax(%x, %a) : ?
  %ls = ReduceLogSumExp(%x, %a) {keepdims = 0} : ?)",
                     "%s, %p, %mx, %ls");
  auto out = interpret(*m.graph, {RValue::of(Tensor(DType::F32, {2, 0, 3}))}, {true});
  EXPECT_EQ(out[0].tensor.shape(), (Dims{2, 1, 3}));
  EXPECT_EQ(out[0].tensor.getF64(0), 0.0);
  EXPECT_EQ(out[1].tensor.getF64(0), 1.0);
  EXPECT_EQ(out[2].tensor.getF64(0), -INFINITY);
  EXPECT_EQ(out[3].tensor.shape(), (Dims{2, 3}));
  EXPECT_EQ(out[3].tensor.getF64(5), -INFINITY);
}

TEST(Reduction, LegacySoftmaxFlattensAtAxis) {
  // Softmax-11 on [2,2,2] with the default axis 1: one softmax over each row of 4 elements.
  onnx::ModelProto mp;
  mp.set_ir_version(7);
  mp.add_opset_import()->set_version(11);
  auto* g = mp.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  g->add_output()->set_name("y");
  auto* id = g->add_node();
  id->set_op_type("Identity"); // hides the rank from the upgrade rule
  id->add_input("x");
  id->add_output("t");
  auto* sm = g->add_node();
  sm->set_op_type("Softmax");
  sm->add_input("t");
  sm->add_output("y");
  ImportedModel im = importOnnxBytes(mp.SerializeAsString(), ".");
  std::vector<std::string> ops;
  for (const auto& n : im.model.graph->nodes) ops.push_back(n->op);
  EXPECT_EQ(ops, (std::vector<std::string>{"Identity", "Flatten", "Shape", "Softmax", "Reshape"}));
  inferShapes(*im.model.graph);
  Tensor x = Tensor::fromF32({0, 0, 0, 0, 1, 1, 1, 1}, {2, 2, 2});
  auto out = interpret(*im.model.graph, {RValue::of(x)}, {true});
  ASSERT_EQ(out[0].tensor.shape(), (Dims{2, 2, 2}));
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(static_cast<float>(out[0].tensor.getF64(i)), 0.25f);
}
