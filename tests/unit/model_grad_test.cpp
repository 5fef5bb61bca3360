// Whole-model gradient checks: aicc's autodiff on an MLP (the zoo mlp's structure, smaller), a
// LeNet-style CNN and one transformer encoder layer, in float64, against central finite
// differences (checkModelGradient), relative error < 1e-6.
#include "grad_check.h"

#include "autodiff/autodiff.h"
#include "interp/interpreter.h"
#include "ops/op_def.h"
#include "passes/shape_inference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

namespace aicc::test {
namespace {

// A small graph builder: values by name, nodes with their registered OpDef.
struct Builder {
  Model m;
  Graph* g;
  uint32_t seed = 1;

  Builder() {
    m.opsets[""] = 23;
    m.graph = std::make_shared<Graph>();
    g = m.graph.get();
    g->name = "model";
  }
  Value* input(const std::string& name, Dims d) {
    return g->addInput(name, Type::tensor(DType::F64, staticShape(d)));
  }
  Value* weight(const std::string& name, Dims d, double scale = 0.5) {
    return g->addConstant(name, randomTensor(std::move(d), seed++, -scale, scale));
  }
  Value* constant(const std::string& name, Tensor t) { return g->addConstant(name, std::move(t)); }
  Value* op(const std::string& type, std::vector<Value*> ins,
            std::map<std::string, Attribute> attrs = {}) {
    Node* n = g->addNode(type, std::move(ins), {g->uniqueName(type)});
    n->def = OpRegistry::instance().find("", type);
    EXPECT_TRUE(n->def) << type;
    n->attrs = std::move(attrs);
    return n->outputs[0];
  }
  Model finish(Value* loss) {
    g->renameValue(loss, "loss");
    g->outputs = {loss};
    inferShapes(*g);
    return std::move(m);
  }
};

Attribute ints(std::vector<int64_t> v) { return Attribute{std::move(v)}; }
Attribute i1(int64_t v) { return Attribute{v}; }

Tensor labels(std::vector<int64_t> v) {
  return Tensor::fromI64(v, {static_cast<int64_t>(v.size())});
}

// The zoo mlp's architecture (Gemm/Relu x2, Gemm; transB=1) with a SoftmaxCrossEntropyLoss on
// top: `mlp` is a small 12-16-16-5 copy (every element checked), `zooMlp` the zoo's exact sizes
// (784-512-512-10, batch 64; elements sampled).
Model mlpOfSize(int64_t batch, int64_t in, int64_t hidden, int64_t classes) {
  Builder b;
  Value* x = b.input("x", {batch, in});
  double s0 = 1.0 / std::sqrt(static_cast<double>(in)), s1 = 1.0 / std::sqrt(static_cast<double>(hidden));
  Value* h = b.op("Relu", {b.op("Gemm", {x, b.weight("w0", {hidden, in}, s0), b.weight("b0", {hidden})},
                                {{"transB", i1(1)}})});
  h = b.op("Relu", {b.op("Gemm", {h, b.weight("w1", {hidden, hidden}, s1), b.weight("b1", {hidden})},
                         {{"transB", i1(1)}})});
  Value* logits =
      b.op("Gemm", {h, b.weight("w2", {classes, hidden}, s1), b.weight("b2", {classes})}, {{"transB", i1(1)}});
  std::vector<int64_t> y;
  for (int64_t i = 0; i < batch; ++i) y.push_back((i * 7) % classes);
  return b.finish(b.op("SoftmaxCrossEntropyLoss", {logits, b.constant("labels", labels(y))}));
}
Model mlp() { return mlpOfSize(4, 12, 16, 5); }
Model zooMlp() { return mlpOfSize(64, 784, 512, 10); }

// LeNet-style: Conv/Relu/MaxPool x2, Flatten, Gemm, SoftmaxCrossEntropyLoss.
Model lenet() {
  Builder b;
  Value* x = b.input("x", {2, 1, 8, 8});
  Value* h = b.op("Conv", {x, b.weight("c1w", {4, 1, 3, 3}), b.weight("c1b", {4})},
                  {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}});
  h = b.op("MaxPool", {b.op("Relu", {h})},
           {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  h = b.op("Conv", {h, b.weight("c2w", {6, 4, 3, 3}), b.weight("c2b", {6})},
           {{"kernel_shape", ints({3, 3})}});
  h = b.op("MaxPool", {b.op("Relu", {h})},
           {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  h = b.op("Flatten", {h}, {{"axis", i1(1)}});
  Value* logits =
      b.op("Gemm", {h, b.weight("fw", {5, 6}), b.weight("fb", {5})}, {{"transB", i1(1)}});
  return b.finish(b.op("SoftmaxCrossEntropyLoss", {logits, b.constant("labels", labels({2, 4}))}));
}

// One post-norm transformer encoder layer: 2-head self-attention (MatMul, Reshape, Transpose,
// Softmax), residual + LayerNormalization, Gelu feed-forward, residual + LayerNormalization;
// loss = sum(out * R).
Model encoderLayer() {
  const int64_t B = 2, S = 3, D = 8, H = 2, Dh = D / H, F = 16;
  Builder b;
  Value* x = b.input("x", {B, S, D});
  auto linear = [&](Value* in, const std::string& n, int64_t din, int64_t dout) {
    return b.op("Add", {b.op("MatMul", {in, b.weight(n + "_w", {din, dout})}),
                        b.weight(n + "_b", {dout}, 0.1)});
  };
  auto heads = [&](Value* t) { // [B,S,D] -> [B,H,S,Dh]
    Value* r =
        b.op("Reshape", {t, b.constant(b.g->uniqueName("shape"), Tensor::fromI64({B, S, H, Dh}))});
    return b.op("Transpose", {r}, {{"perm", ints({0, 2, 1, 3})}});
  };
  Value* q = heads(linear(x, "q", D, D));
  Value* k = heads(linear(x, "k", D, D));
  Value* v = heads(linear(x, "v", D, D));
  Value* scores = b.op("MatMul", {q, b.op("Transpose", {k}, {{"perm", ints({0, 1, 3, 2})}})});
  scores =
      b.op("Mul",
           {scores, b.constant("scale", Tensor::scalar(DType::F64, 1.0 / std::sqrt(double(Dh))))});
  Value* attn = b.op("Softmax", {scores}, {{"axis", i1(-1)}});
  Value* ctx = b.op("Transpose", {b.op("MatMul", {attn, v})}, {{"perm", ints({0, 2, 1, 3})}});
  ctx = b.op("Reshape", {ctx, b.constant("merge", Tensor::fromI64({B, S, D}))});
  Value* h = b.op("Add", {x, linear(ctx, "o", D, D)});
  auto norm = [&](Value* in, const std::string& n) {
    Tensor gamma = randomTensor({D}, b.seed++, 0.5, 1.5);
    return b.op("LayerNormalization",
                {in, b.constant(n + "_g", gamma), b.weight(n + "_b", {D}, 0.1)},
                {{"axis", i1(-1)}});
  };
  Value* h1 = norm(h, "ln1");
  Value* ff = linear(b.op("Gelu", {linear(h1, "ff1", D, F)}), "ff2", F, D);
  Value* out = norm(b.op("Add", {h1, ff}), "ln2");
  Value* r = b.constant("R", randomTensor({B, S, D}, 77));
  return b.finish(b.op("ReduceSum", {b.op("Mul", {out, r})}, {{"keepdims", i1(0)}}));
}

void expectGood(const GradCheckResult& r) {
  EXPECT_LT(r.maxRelError, 1e-6) << r.worst;
  std::cout << "  max relative error vs finite differences: " << r.maxRelError << " (" << r.worst
            << ")\n";
}

TEST(ModelGrad, Mlp) {
  expectGood(checkModelGradient(mlp, "loss", {"x", "w0", "b0", "w1", "b1", "w2", "b2"},
                                {randomTensor({4, 12}, 5)}));
}

TEST(ModelGrad, ZooMlpFullSize) {
  expectGood(checkModelGradient(zooMlp, "loss", {"x", "w0", "b0", "w1", "b1", "w2", "b2"},
                                {randomTensor({64, 784}, 5)}, 1e-6, /*maxElemsPerTensor=*/8));
}

TEST(ModelGrad, LeNet) {
  expectGood(checkModelGradient(lenet, "loss", {"x", "c1w", "c1b", "c2w", "c2b", "fw", "fb"},
                                {randomTensor({2, 1, 8, 8}, 6)}));
}

TEST(ModelGrad, TransformerEncoderLayer) {
  expectGood(checkModelGradient(encoderLayer, "loss",
                                {"x", "q_w", "q_b", "k_w", "v_w", "v_b", "o_w", "ln1_g", "ln1_b",
                                 "ff1_w", "ff1_b", "ff2_w", "ln2_g", "ln2_b"},
                                {randomTensor({2, 3, 8}, 7)}));
}

// Rematerialization changes where values are computed, never the gradients.
TEST(ModelGrad, RematGivesTheSameGradients) {
  for (auto factory : {mlp, lenet, encoderLayer}) {
    Model plain = factory(), remat = factory();
    AutodiffOptions ao;
    ao.loss = "loss";
    ao.wrt = {"all-weights"};
    differentiate(plain, ao);
    ao.rematerialize = true;
    AutodiffResult r = differentiate(remat, ao);
    EXPECT_LE(r.remat.peakBytesAfter, r.remat.peakBytesBefore);
    EXPECT_LE(r.remat.savedValuesAfter, r.remat.savedValuesBefore);
    std::cout << "  remat: " << r.remat.recomputedValues
              << " values recomputed, saved forward values " << r.remat.savedValuesBefore << " -> "
              << r.remat.savedValuesAfter << ", peak bytes " << r.remat.peakBytesBefore << " -> "
              << r.remat.peakBytesAfter << "\n";
    Tensor x = randomTensor(toDims(*plain.graph->inputs[0]->type.shape).value(), 9);
    auto a = interpret(*plain.graph, {RValue::of(x)}, {.checkTypes = true});
    auto c = interpret(*remat.graph, {RValue::of(x)}, {.checkTypes = true});
    ASSERT_EQ(a.size(), c.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].tensor.sameAs(c[i].tensor)) << i;
  }
}

} // namespace
} // namespace aicc::test
