// Training-step graphs (autodiff/training.h) and rematerialization (autodiff/remat.h): one step of
// each optimizer against the update computed by hand, loss going down over steps, weights bound
// back between steps, the trained model's weights, and remat recomputing cheap values.
#include "grad_check.h"

#include "autodiff/autodiff.h"
#include "autodiff/training.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "passes/shape_inference.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <cmath>

namespace aicc::test {
namespace {

Node* addOp(Graph& g, const std::string& op, std::vector<Value*> ins,
            std::map<std::string, Attribute> attrs = {}) {
  Node* n = g.addNode(op, std::move(ins), {g.uniqueName(op)});
  n->def = OpRegistry::instance().find("", op);
  n->attrs = std::move(attrs);
  return n;
}

// Linear regression: loss = ReduceMean((X W - Y)^2), W f64[3,2] (a constant: the parameter).
Model linearRegression(const Tensor& w0) {
  Model m;
  m.opsets[""] = 23;
  m.graph = std::make_shared<Graph>();
  Graph& g = *m.graph;
  Value* x = g.addInput("X", Type::tensor(DType::F64, Shape{Dim::sym("N"), Dim::known(3)}));
  Value* y = g.addInput("Y", Type::tensor(DType::F64, Shape{Dim::sym("N"), Dim::known(2)}));
  Value* w = g.addConstant("W", w0);
  Value* d = addOp(g, "Sub", {addOp(g, "MatMul", {x, w})->outputs[0], y})->outputs[0];
  Value* loss = addOp(g, "ReduceMean", {addOp(g, "Mul", {d, d})->outputs[0]},
                      {{"keepdims", Attribute{int64_t{0}}}})
                    ->outputs[0];
  g.renameValue(loss, "loss");
  g.outputs = {loss};
  inferShapes(g);
  return m;
}

// dL/dW = 2/(N*2) X^T (X W - Y), computed directly.
Tensor linearGrad(const Tensor& x, const Tensor& w, const Tensor& y) {
  const int64_t n = x.dim(0);
  Tensor gr(DType::F64, {3, 2});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      double s = 0;
      for (int64_t k = 0; k < n; ++k) {
        double pred = 0;
        for (int64_t t = 0; t < 3; ++t) pred += x.getF64(k * 3 + t) * w.getF64(t * 2 + j);
        s += x.getF64(k * 3 + i) * (pred - y.getF64(k * 2 + j));
      }
      gr.setF64(i * 2 + j, 2 * s / static_cast<double>(n * 2));
    }
  return gr;
}

Tensor paramOf(const TrainingSession& s, const std::string& name) {
  Model m = s.trainedModel();
  return *m.graph->lookupLocal(name)->constant;
}

struct Case {
  std::string kind;
  double momentum;
};

TEST(Training, OneStepOfEachOptimizerMatchesTheFormula) {
  const Tensor w0 = randomTensor({3, 2}, 1), x = randomTensor({5, 3}, 2),
               y = randomTensor({5, 2}, 3);
  for (const Case& c : {Case{"sgd", 0.0}, Case{"sgd", 0.9}, Case{"momentum", 0.9}, Case{"adam", 0},
                        Case{"adamw", 0}}) {
    SCOPED_TRACE(c.kind + " momentum " + std::to_string(c.momentum));
    TrainingOptions o;
    o.loss = "loss";
    o.optimizer.kind = c.kind;
    o.optimizer.lr = 0.1;
    o.optimizer.momentum = c.momentum;
    o.optimizer.weightDecay = c.kind == "adamw" ? 0.5 : 0;
    TrainingSession s(linearRegression(w0), o);
    EXPECT_EQ(s.info().params, std::vector<std::string>{"W"});
    s.step({x, y});
    const Tensor g = linearGrad(x, w0, y);
    const Tensor w1 = paramOf(s, "W");
    for (int64_t i = 0; i < 6; ++i) {
      double expect = w0.getF64(i) - 0.1 * g.getF64(i); // sgd / momentum (first step: v = g)
      if (c.kind == "adam" || c.kind == "adamw") {
        const double b1 = 0.9, b2 = 0.999, m = (1 - b1) * g.getF64(i),
                     v = (1 - b2) * g.getF64(i) * g.getF64(i);
        const double r = 0.1 * std::sqrt(1 - b2) / (1 - b1);
        expect = w0.getF64(i) - r * m / (std::sqrt(v) + 1e-8);
        if (c.kind == "adamw") expect *= 1 - 0.1 * 0.5;
      }
      EXPECT_NEAR(w1.getF64(i), expect, 1e-6 * std::max(1.0, std::fabs(expect))) << i;
    }
  }
}

TEST(Training, LossGoesDownAndWeightsAreBoundBack) {
  // Y = X W* exactly: every optimizer must drive the loss towards 0.
  const Tensor wStar = randomTensor({3, 2}, 4), x = randomTensor({16, 3}, 5);
  Tensor y(DType::F64, {16, 2});
  for (int64_t k = 0; k < 16; ++k)
    for (int64_t j = 0; j < 2; ++j) {
      double s = 0;
      for (int64_t t = 0; t < 3; ++t) s += x.getF64(k * 3 + t) * wStar.getF64(t * 2 + j);
      y.setF64(k * 2 + j, s);
    }
  for (const std::string kind : {"sgd", "momentum", "adam", "adamw"}) {
    SCOPED_TRACE(kind);
    TrainingOptions o;
    o.loss = "loss";
    o.optimizer.kind = kind;
    o.optimizer.lr = kind == "sgd" ? 0.3 : 0.05;
    o.optimizer.momentum = kind == "sgd" ? 0 : 0.5;
    TrainingSession s(linearRegression(Tensor(DType::F64, {3, 2})), o);
    const double first = s.step({x, y});
    double last = first;
    for (int i = 0; i < 300; ++i) last = s.step({x, y});
    EXPECT_EQ(s.steps(), 301);
    EXPECT_LT(last, 1e-3 * first) << "first " << first << " last " << last;
    // evaluate() runs the forward model with the current weights.
    EXPECT_NEAR(s.evaluate({x, y})[0].tensor.getF64(0), last, std::max(1e-6, 0.5 * last));
  }
}

TEST(Training, StepGraphLayout) {
  TrainingOptions o;
  o.loss = "loss";
  o.optimizer.kind = "adam";
  StepGraphInfo info;
  Model step = buildTrainingStep(linearRegression(randomTensor({3, 2}, 1)), o, &info);
  const Graph& g = *step.graph;
  // [X, Y, W, adam_m/W, adam_v/W, step] -> [loss, W', m', v']
  ASSERT_EQ(g.inputs.size(), 6u);
  EXPECT_EQ(g.inputs[2]->name, "W");
  EXPECT_EQ(g.inputs[5]->type.dtype, DType::I64);
  ASSERT_EQ(g.outputs.size(), 4u);
  EXPECT_EQ(info.stateTensorsPerParam, 2);
  EXPECT_GT(info.peakBytesNoRemat, 0);
  EXPECT_THROW(
      {
        o.optimizer.kind = "rmsprop";
        buildTrainingStep(linearRegression(randomTensor({3, 2}, 1)), o);
      },
      Error);
}

// y = Exp(x) is read by the backward part (Exp's gradient and Mul's); remat recomputes it from the
// graph input x, and the gradients stay the same.
TEST(Remat, RecomputesCheapValuesFromKeptOnes) {
  auto build = [] {
    Model m;
    m.opsets[""] = 23;
    m.graph = std::make_shared<Graph>();
    Graph& g = *m.graph;
    Value* x = g.addInput("x", Type::tensor(DType::F64, staticShape({64, 64})));
    Value* w = g.addConstant("w", randomTensor({64, 64}, 3));
    Value* y = addOp(g, "Exp", {x})->outputs[0];
    Value* z = addOp(g, "Tanh", {addOp(g, "MatMul", {y, w})->outputs[0]})->outputs[0];
    Value* loss = addOp(g, "ReduceSum", {addOp(g, "Mul", {z, y})->outputs[0]},
                        {{"keepdims", Attribute{int64_t{0}}}})
                      ->outputs[0];
    g.renameValue(loss, "loss");
    g.outputs = {loss};
    inferShapes(g);
    return m;
  };
  Model plain = build(), remat = build();
  AutodiffOptions ao;
  ao.loss = "loss";
  ao.wrt = {"x", "w"};
  differentiate(plain, ao);
  ao.rematerialize = true;
  AutodiffResult r = differentiate(remat, ao);
  EXPECT_GE(r.remat.recomputedValues, 1);
  EXPECT_GE(r.remat.addedNodes, 1);
  EXPECT_LT(r.remat.savedValuesAfter, r.remat.savedValuesBefore);
  EXPECT_LE(r.remat.peakBytesAfter, r.remat.peakBytesBefore);
  Tensor x = randomTensor({64, 64}, 8);
  auto a = interpret(*plain.graph, {RValue::of(x)}, {.checkTypes = true});
  auto c = interpret(*remat.graph, {RValue::of(x)}, {.checkTypes = true});
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].tensor.sameAs(c[i].tensor)) << i;
}

TEST(Training, CloneModelIsIndependent) {
  Model a = linearRegression(randomTensor({3, 2}, 1));
  Model b = cloneModel(a);
  b.graph->lookupLocal("W")->constant = Tensor(DType::F64, {3, 2});
  EXPECT_NE(a.graph->lookupLocal("W")->constant->getF64(0), 0.0);
  EXPECT_EQ(b.graph->nodes.size(), a.graph->nodes.size());
  EXPECT_NE(b.graph->nodes[0].get(), a.graph->nodes[0].get());
  EXPECT_EQ(b.graph->outputs[0]->name, "loss");
}

// The optimizer ops compiled (loop/lower_training.cpp) against the interpreter: Adagrad, Momentum
// (standard and Nesterov) and Adam over two tensors each, at the first update (T = 0) and a later
// one, with their norm coefficients; no fallback.
TEST(Training, OptimizerOpsCompiled) {
  const char* graphs[] = {
      "  %x1n, %x2n, %h1n, %h2n = ai.onnx.preview.training.Adagrad(%r, %t, %x1, %x2, %g1, %g2, "
      "%s1, %s2) {decay_factor = 0.1, epsilon = 1e-6, norm_coefficient = 0.01}",
      "  %x1n, %x2n, %h1n, %h2n = ai.onnx.preview.training.Momentum(%r, %t, %x1, %x2, %g1, %g2, "
      "%s1, %s2) {alpha = 0.9, beta = 0.5, mode = \"standard\", norm_coefficient = 0.02}",
      "  %x1n, %x2n, %h1n, %h2n = ai.onnx.preview.training.Momentum(%r, %t, %x1, %x2, %g1, %g2, "
      "%s1, %s2) {alpha = 0.9, beta = 1.0, mode = \"nesterov\", norm_coefficient = 0.0}",
      "  %x1n, %x2n, %h1n, %h2n, %v1n, %v2n = ai.onnx.preview.training.Adam(%r, %t, %x1, %x2, "
      "%g1, %g2, %s1, %s2, %s1, %s2) {alpha = 0.9, beta = 0.99, epsilon = 1e-7, "
      "norm_coefficient = 0.01, norm_coefficient_post = 0.001}"};
  uint32_t seed = 3;
  for (const char* body : graphs) {
    const bool adam = std::string(body).find("Adam") != std::string::npos;
    const std::string text =
        std::string("graph @g(%r: f32[], %t: i64[], %x1: f32[3,4], %x2: f32[5], %g1: f32[3,4], "
                    "%g2: f32[5], %s1: f32[3,4], %s2: f32[5]) {\n") +
        body + "\n  return %x1n, %x2n, %h1n, %h2n" + (adam ? ", %v1n, %v2n" : "") + "\n}\n";
    SCOPED_TRACE(text);
    Model m = parseModel(text);
    inferShapes(*m.graph);
    for (int64_t step : {0, 7}) {
      std::vector<RValue> in = {RValue::of(Tensor::scalar(DType::F32, 0.1)),
                                RValue::of(Tensor::scalar(DType::I64, double(step)))};
      for (size_t i = 2; i < m.graph->inputs.size(); ++i) {
        const Value* v = m.graph->inputs[i];
        Tensor x = test::uniformTensor(*toDims(*v->type.shape), seed++, i >= 6 ? 0.0f : -1.0f, 1);
        in.push_back(RValue::of(std::move(x)));
      }
      expectJitMatches(m, in, {1e-6, 1e-7}, "f64 arithmetic");
    }
  }
}

} // namespace
} // namespace aicc::test
