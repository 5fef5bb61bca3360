// Dynamic shapes (loop/per_sample.h, issue #12): a graph with a symbolic batch dim compiles once
// and its artifact, loaded through the C API, matches the interpreter at every batch size in the
// range; the per-sample lowering's loop IR; inputs that break the declaration give one-line
// errors naming the input and dim; nodes that mix samples run on the reference kernels at the
// run's sizes; a sequence length
// through per-token ops, a symbolic Transpose and Attention.
#include "aicc/runtime.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "loop/per_sample.h"
#include "loop/printer.h"
#include "loop/verifier.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

namespace aicc {
namespace {

namespace fs = std::filesystem;

// A small convolutional classifier over a batch N, and an MLP head: per-sample ops of every kind
// the zoo models use (Conv, pools, Flatten, Gemm, Softmax over axis 1, Concat of channels).
const char* kNet = R"(graph @net(%x: f32[N,3,12,10], %w: f32[8,3,3,3], %w2: f32[4,3,1,1],
                                  %fc: f32[5,192], %b: f32[5]) {
  %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[N,8,12,10]
  %c2 = Conv(%x, %w2) : f32[N,4,12,10]
  %k = Concat(%c, %c2) {axis = 1} : f32[N,12,12,10]
  %r = Relu(%k) : f32[N,12,12,10]
  %p = MaxPool(%r) {kernel_shape = [2, 2], strides = [2, 2]} : f32[N,12,6,5]
  %q = AveragePool(%p) {kernel_shape = [3, 3], strides = [3, 3], pads = [0, 0, 0, 1]} : f32[N,12,2,2]
  %f = Flatten(%q) : f32[N,48]
  %t = Concat(%f, %f, %f, %f) {axis = 1} : f32[N,192]
  %g = Gemm(%t, %fc, %b) {transB = 1} : f32[N,5]
  %s = Softmax(%g) {axis = 1} : f32[N,5]
  return %s, %p
}
)";

Tensor random(const Dims& d, uint32_t seed) { return test::uniformTensor(d, seed); }

fs::path compile(Model& m, const std::string& name, const std::vector<rt::Symbol>& ranges) {
  return test::compileArtifact(m, "aicc_dynamic_batch_" + name, ranges);
}

// Constants for the net's weights (its graph inputs after x become constants).
Model netModel() {
  Model m = parseModel(kNet);
  Graph& g = *m.graph;
  std::vector<Value*> keep = {g.inputs[0]};
  for (size_t i = 1; i < g.inputs.size(); ++i) {
    Value* w = g.inputs[i];
    Value* c = g.addConstant(w->name + "_c", random(*toDims(*w->type.shape), 7 + uint32_t(i)));
    for (const auto& n : g.nodes)
      for (Value*& in : n->inputs)
        if (in == w) in = c;
  }
  g.inputs = keep;
  return m;
}

TEST(DynamicBatch, OneArtifactMatchesTheInterpreterAtEveryBatchSize) {
  Model ref = netModel(), m = netModel();
  fs::path dir = compile(m, "net", {{"N", 1, 6}});
  aicc_model* am = aicc_model_load(dir.c_str());
  ASSERT_TRUE(am) << aicc_last_error();
  int64_t dims[4];
  ASSERT_EQ(aicc_model_input_dims(am, 0, dims, 4), 4);
  EXPECT_EQ(dims[0], -1); // symbolic
  EXPECT_EQ(dims[1], 3);
  int64_t lo = 0, hi = 0;
  const char* sym = aicc_model_input_dim_symbol(am, 0, 0, &lo, &hi);
  ASSERT_TRUE(sym);
  EXPECT_EQ(std::string(sym) + " " + std::to_string(lo) + ".." + std::to_string(hi), "N 1..6");
  EXPECT_EQ(aicc_model_input_dim_symbol(am, 0, 1, nullptr, nullptr), nullptr);
  EXPECT_STREQ(aicc_model_output_dim_symbol(am, 0, 0, nullptr, nullptr), "N");
  for (int64_t n : {1, 2, 5, 6, 3}) {
    Tensor x = random({n, 3, 12, 10}, uint32_t(n));
    auto want = interpret(*ref.graph, {RValue::of(x)});
    // By dims, and (one symbolic dim) by size alone.
    if (n % 2)
      ASSERT_EQ(aicc_model_set_input_dims(am, 0, x.raw(), x.nbytes(), x.shape().data(), 4), 0)
          << aicc_last_error();
    else
      ASSERT_EQ(aicc_model_set_input(am, 0, x.raw(), x.nbytes()), 0) << aicc_last_error();
    ASSERT_EQ(aicc_model_run(am), 0) << aicc_last_error();
    for (int k = 0; k < 2; ++k) {
      int64_t od[4];
      const int rank = aicc_model_output_dims(am, k, od, 4);
      ASSERT_EQ(Dims(od, od + rank), want[size_t(k)].tensor.shape()) << "batch " << n;
      size_t bytes = 0;
      const void* p = aicc_model_output(am, k, &bytes);
      ASSERT_TRUE(p);
      Tensor got(DType::F32, want[size_t(k)].tensor.shape());
      ASSERT_EQ(bytes, got.nbytes());
      std::memcpy(got.raw(), p, bytes);
      test::expectOutputsClose({want[size_t(k)]}, {RValue::of(got)}, {1e-5, 1e-6});
    }
  }
  aicc_model_free(am);
}

TEST(DynamicBatch, PerSampleLoweringLoopsOverTheShapeBlock) {
  Model m = parseModel("graph @g(%x: f32[N,16], %y: f32[16]) {\n"
                       "  %z = Add(%x, %y) : f32[N,16]\n  return %z\n}\n");
  std::map<const Value*, Type> types;
  loop::PerSampleContext ctx;
  ctx.symbols["N"] = {0, 8};
  ctx.types = &types;
  std::string why;
  auto ln = loop::lowerPerSample(*m.graph->nodes[0], "add", {}, ctx, &why);
  ASSERT_TRUE(ln) << why;
  EXPECT_TRUE(loop::verifyMessages(ln->func).empty()) << loop::verifyMessages(ln->func)[0];
  const std::string text = loop::printFunc(ln->func);
  // The shape block parameter, the clamped sample count, the sample loop and the shifted access.
  EXPECT_NE(text.find(ln->symbolsParam + ": i64[1]"), std::string::npos) << text;
  EXPECT_NE(text.find("max(%" + ln->symbolsParam + "[0], 0), 8)"), std::string::npos) << text;
  EXPECT_NE(text.find("for %sample in 0..%samples"), std::string::npos) << text;
  EXPECT_NE(text.find("%sample * 16"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[8,16]"), std::string::npos) << text; // buffers at the bound
  // The graph's types are untouched.
  EXPECT_EQ(formatType(m.graph->nodes[0]->outputs[0]->type), "f32[N,16]");
  // A GEMM with constant weights takes every sample in one call: samples * M rows, no loop.
  Model gm =
      parseModel("graph @g(%x: f32[N,16]) {\n  %w = Constant() {value = tensor f32[16,2] "
                 "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, "
                 "21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]} : f32[16,2]\n  %y = "
                 "MatMul(%x, %w) : f32[N,2]\n  return %y\n}\n");
  loop::LowerOptions rk;
  rk.runtimeKernels = true;
  const Node& mm = *gm.graph->nodes.back();
  auto gl = loop::lowerPerSample(mm, "mm", rk, ctx, &why);
  ASSERT_TRUE(gl) << why;
  const std::string gtext = loop::printFunc(gl->func);
  EXPECT_EQ(gtext.find("for %sample"), std::string::npos) << gtext;
  EXPECT_NE(gtext.find("gemm_"), std::string::npos) << gtext;
  EXPECT_NE(gtext.find("%samples, 2, 16"), std::string::npos) << gtext; // M, N, K
}

// Shape and Size of a batched value read the run's batch from the shape block (the flatten an
// exporter writes as Shape -> Gather -> Concat -> Reshape).
TEST(DynamicBatch, ShapeAndSizeReadTheRunsBatch) {
  const char* ir = R"(graph @g(%x: f32[N,2,3]) {
  %s = Shape(%x) : i64[3]
  %t = Shape(%x) {start = -2} : i64[2]
  %n = Size(%x) : i64[]
  %idx = Constant() {value = tensor i64[1] [0]} : i64[1]
  %b = Gather(%s, %idx) : i64[1]
  %m = Constant() {value = tensor i64[1] [-1]} : i64[1]
  %shape = Concat(%b, %m) {axis = 0} : i64[2]
  %f = Reshape(%x, %shape) : f32[N,6]
  %y = Relu(%f) : f32[N,6]
  return %s, %t, %n, %y
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  fs::path dir = compile(m, "shape", {{"N", 1, 8}});
  runtime::LoadedArtifact art(dir.string());
  for (int64_t n : {1, 7, 4}) {
    std::vector<RValue> in = {RValue::of(random({n, 2, 3}, uint32_t(n)))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
  }
}

// A sequence length S after a leading 1: token-wise ops per token (the first dim that is not 1),
// the head transposes and attention with the run's S (lowerSymbolic).
TEST(DynamicSequence, AttentionAndTransposesTakeTheRunsLength) {
  const char* ir = R"(graph @g(%x: f32[1,S,8]) {
  %w = Constant() {value = tensor f32[8,8] [0.1, -0.2, 0.3, 0.05, -0.1, 0.2, 0.0, 0.4, 0.2, 0.1, -0.3, 0.25, 0.1, 0.0, -0.2, 0.1, -0.1, 0.3, 0.2, -0.05, 0.15, 0.1, 0.2, -0.3, 0.3, 0.0, 0.1, 0.2, -0.2, 0.1, 0.05, 0.0, 0.05, 0.2, -0.1, 0.1, 0.3, -0.2, 0.1, 0.2, -0.2, 0.1, 0.0, 0.3, 0.1, 0.2, -0.1, 0.05, 0.1, -0.3, 0.2, 0.0, 0.05, 0.1, 0.3, -0.1, 0.0, 0.2, 0.1, -0.1, 0.2, 0.3, 0.1, 0.0]} : f32[8,8]
  %h = MatMul(%x, %w) : f32[1,S,8]
  %shape = Constant() {value = tensor i64[3] [-1, 2, 4]} : i64[3]
  %r = Reshape(%h, %shape) : f32[S,2,4]
  %t = Transpose(%r) {perm = [1, 0, 2]} : f32[2,S,4]
  %axes = Constant() {value = tensor i64[1] [0]} : i64[1]
  %q = Unsqueeze(%t, %axes) : f32[1,2,S,4]
  %a = Attention(%q, %q, %q) : f32[1,2,S,4]
  %s = Squeeze(%a, %axes) : f32[2,S,4]
  %b = Transpose(%s) {perm = [1, 0, 2]} : f32[S,2,4]
  %flat = Constant() {value = tensor i64[3] [1, -1, 8]} : i64[3]
  %y = Reshape(%b, %flat) : f32[1,S,8]
  %ln = Constant() {value = tensor f32[8] [1, 0.5, 2, 1, 1, 0.25, 1, 1.5]} : f32[8]
  %n = LayerNormalization(%y, %ln) {axis = -1} : f32[1,S,8]
  return %n
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  fs::path dir = compile(m, "sequence", {{"S", 1, 40}});
  runtime::LoadedArtifact art(dir.string());
  for (int64_t s : {1, 17, 40, 5}) {
    std::vector<RValue> in = {RValue::of(random({1, s, 8}, uint32_t(s)))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-5, 1e-6});
  }
}

// Attention with a mask under a symbolic batch and length: an additive [N, 1, S, S] mask and a
// bool [S, S] one (broadcast over the batch and heads), causal too, read at the run's strides.
TEST(DynamicSequence, AttentionMasksTakeTheRunsSizes) {
  for (const char* mask : {"f32[N,1,S,S]", "bool[S,S]"}) {
    SCOPED_TRACE(mask);
    const std::string ir = std::string("graph @g(%q: f32[N,2,S,4], %k: f32[N,2,S,4], ") +
                           "%v: f32[N,2,S,4], %m: " + mask +
                           ") {\n  %a = Attention(%q, %k, %v, %m) : f32[N,2,S,4]\n"
                           "  %c = Attention(%q, %k, %v, %m) {is_causal = 1} : f32[N,2,S,4]\n"
                           "  return %a, %c\n}\n";
    Model ref = parseModel(ir), m = parseModel(ir);
    fs::path dir = compile(m, std::string("mask_") + mask[0], {{"N", 1, 3}, {"S", 1, 12}});
    EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
    runtime::LoadedArtifact art(dir.string());
    for (auto [n, s] : {std::pair<int64_t, int64_t>{1, 5}, {3, 12}, {2, 1}}) {
      const bool f32 = mask[0] == 'f';
      Tensor mt = f32 ? random({n, 1, s, s}, 9) : Tensor(DType::Bool, {s, s});
      if (!f32)
        for (int64_t i = 0; i < mt.numel(); ++i) mt.setI64(i, (i * 7 + 3) % 4 != 0);
      std::vector<RValue> in = {RValue::of(random({n, 2, s, 4}, 1)),
                                RValue::of(random({n, 2, s, 4}, 2)),
                                RValue::of(random({n, 2, s, 4}, 3)), RValue::of(mt)};
      test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-5, 1e-6});
    }
  }
}

// Trilu over matrices of symbolic sides (a causal mask's shape): the nest over the run's dims,
// the input read at the run's strides, k given at run time; per sample over a leading batch.
TEST(DynamicSequence, TriluTakesTheRunsSides) {
  const char* ir = R"(graph @g(%x: f32[N,S,T], %k: i64[]) {
  %u = Trilu(%x, %k) : f32[N,S,T]
  %l = Trilu(%x) {upper = 0} : f32[N,S,T]
  return %u, %l
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  fs::path dir = compile(m, "trilu", {{"N", 1, 3}, {"S", 1, 9}, {"T", 1, 7}});
  EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  for (auto [n, s, t] : {std::array<int64_t, 3>{1, 9, 7}, {3, 4, 6}, {2, 1, 3}}) {
    Tensor k(DType::I64, {});
    k.setI64(0, s - 5);
    std::vector<RValue> in = {RValue::of(random({n, s, t}, uint32_t(s))), RValue::of(k)};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
  }
}

// Softmax and LogSoftmax over an attention's scores [N, H, S, S] with N and S symbolic: rows of
// the run's length at the run's strides (the last axis and an inner one); a mask added before
// one (not fused with it: fuse-elementwise leaves a softmax along a symbolic axis alone).
TEST(DynamicSequence, SoftmaxTakesTheRunsLength) {
  const char* ir = R"(graph @g(%x: f32[N,2,S,S], %m: f32[N,1,1,S]) {
  %a = Softmax(%x) {axis = -1} : f32[N,2,S,S]
  %b = LogSoftmax(%x) {axis = 2} : f32[N,2,S,S]
  %w = Add(%x, %m) : f32[N,2,S,S]
  %c = Softmax(%w) {axis = -1} : f32[N,2,S,S]
  return %a, %b, %c
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  fs::path dir = compile(m, "softmax", {{"N", 1, 3}, {"S", 1, 16}});
  EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  for (auto [n, s] : {std::pair<int64_t, int64_t>{1, 16}, {3, 5}, {2, 1}}) {
    std::vector<RValue> in = {RValue::of(random({n, 2, s, s}, uint32_t(s))),
                              RValue::of(random({n, 1, 1, s}, uint32_t(s + 1)))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-7});
  }
}

// A batch and a length, both symbolic ([N, S, 8]): token-wise ops per (batch, position) row, the
// heads' transposes and attention with the run's batch and length.
TEST(DynamicSequence, BatchAndLengthTogether) {
  const char* ir = R"(graph @g(%x: f32[N,S,8]) {
  %w = Constant() {value = tensor f32[8,4] [0.1, -0.2, 0.3, 0.05, -0.1, 0.2, 0.0, 0.4, 0.2, 0.1, -0.3, 0.25, 0.1, 0.0, -0.2, 0.1, -0.1, 0.3, 0.2, -0.05, 0.15, 0.1, 0.2, -0.3, 0.3, 0.0, 0.1, 0.2, -0.2, 0.1, 0.05, 0.0]} : f32[8,4]
  %h = MatMul(%x, %w) : f32[N,S,4]
  %shape = Constant() {value = tensor i64[4] [0, 0, 2, 2]} : i64[4]
  %r = Reshape(%h, %shape) : f32[N,S,2,2]
  %t = Transpose(%r) {perm = [0, 2, 1, 3]} : f32[N,2,S,2]
  %a = Attention(%t, %t, %t) : f32[N,2,S,2]
  %b = Transpose(%a) {perm = [0, 2, 1, 3]} : f32[N,S,2,2]
  %flat = Constant() {value = tensor i64[3] [0, 0, 4]} : i64[3]
  %y = Reshape(%b, %flat) : f32[N,S,4]
  %z = Relu(%y) : f32[N,S,4]
  return %z
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  fs::path dir = compile(m, "batch_and_length", {{"N", 1, 4}, {"S", 1, 16}});
  runtime::LoadedArtifact art(dir.string());
  for (auto [n, s] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 16}, {4, 5}, {2, 9}}) {
    std::vector<RValue> in = {RValue::of(random({n, s, 8}, uint32_t(7 * n + s)))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-5, 1e-6});
  }
}

// The recurrent-state ops of linear-attention models (opset 27) compiled at the run's batch and
// length: a CausalConvWithState with SiLU and a past state, its output into a gated-delta
// LinearAttention with grouped heads and a past state, and a plain linear one without; every
// output and state against the interpreter at four sizes, no fallback task.
TEST(DynamicSequence, LinearAttentionAndCausalConvCompiled) {
  const char* ir = R"(graph @g(%x: f32[N,8,S], %w: f32[8,1,3], %cb: f32[8], %cp: f32[N,8,2],
                       %q: f32[N,S,8], %k: f32[N,S,4], %sp: f32[N,2,2,4], %g: f32[N,S,2],
                       %beta: f32[N,S,2]) {
  %c, %cs = CausalConvWithState(%x, %w, %cb, %cp) {activation = "silu"} : f32[N,8,S], f32[N,8,2]
  %perm = Transpose(%c) {perm = [0, 2, 1]} : f32[N,S,8]
  %o, %s = LinearAttention(%q, %k, %perm, %sp, %g, %beta) {kv_num_heads = 2, q_num_heads = 4,
                                                          update_rule = "gated_delta"} : f32[N,S,16], f32[N,2,2,4]
  %o2, %s2 = LinearAttention(%q, %k, %perm) {kv_num_heads = 2, q_num_heads = 4, scale = 0.5,
                                             update_rule = "linear"} : f32[N,S,16], f32[N,2,2,4]
  return %c, %cs, %o, %s, %o2, %s2
}
)";
  Model ref = parseModel(ir), m = parseModel(ir);
  fs::path dir = compile(m, "linear_attention", {{"N", 1, 3}, {"S", 1, 12}});
  EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  for (auto [n, s] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 12}, {3, 5}, {1, 7}}) {
    const uint32_t seed = uint32_t(11 * n + s);
    std::vector<RValue> in = {
        RValue::of(random({n, 8, s}, seed)),        RValue::of(random({8, 1, 3}, seed + 1)),
        RValue::of(random({8}, seed + 2)),          RValue::of(random({n, 8, 2}, seed + 3)),
        RValue::of(random({n, s, 8}, seed + 4)),    RValue::of(random({n, s, 4}, seed + 5)),
        RValue::of(random({n, 2, 2, 4}, seed + 6)), RValue::of(random({n, s, 2}, seed + 7)),
        RValue::of(random({n, s, 2}, seed + 8))};
    // (the compiled exp differs from libm's in the last bit, compounded by the recurrence)
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-4, 1e-5});
  }
}

// Compiles `ir` (an input x: f32[N,4]) with N in 1..6: a task binding the shape block (Z) last,
// a fallback task or none as `fallback` says; the artifact against the interpreter at batches 1,
// 4 and 6.
void expectAtEveryBatch(const std::string& ir, const std::string& folder, bool fallback) {
  Model ref = parseModel(ir), m = parseModel(ir);
  fs::path dir = compile(m, folder, {{"N", 1, 6}});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_EQ(plan.find("\nfallback ") != std::string::npos, fallback) << plan;
  EXPECT_NE(plan.find(" Z:0:8\n"), std::string::npos) << plan;
  runtime::LoadedArtifact art(dir.string());
  for (int64_t n : {1, 4, 6}) {
    std::vector<RValue> in = {RValue::of(random({n, 4}, uint32_t(n)))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-6});
  }
}

// Nodes that mix the samples (along the batch) are lowered with the run's sizes: no fallback.
TEST(DynamicBatch, NodesThatMixSamplesCompileAtTheRunsSizes) {
  const char* cases[] = {
      "%s = Hardmax(%x) {axis = 0} : f32[N,4]\n  return %s",
      "%zero = Constant() {value = tensor i64[] [0]} : i64[]\n  %s = CumSum(%x, %zero) : "
      "f32[N,4]\n  return %s",
      "%s = ArgMax(%x) {axis = 0} : i64[1,4]\n  return %s",
      "%s = LpNormalization(%x) {axis = 0, p = 2} : f32[N,4]\n  return %s",
  };
  for (const char* c : cases)
    expectAtEveryBatch(std::string("graph @g(%x: f32[N,4]) {\n  ") + c + "\n}\n", "mixing", false);
}

// A node no lowering takes at symbolic sizes runs on its reference kernel at the run's sizes: a
// fallback task.
TEST(DynamicBatch, NodesWithoutASymbolicLoweringRunOnTheReferenceKernelsAtTheRunsSizes) {
  expectAtEveryBatch(R"(graph @g(%x: f32[N,4]) {
  %i = Constant() {value = tensor i64[1,1] [0]} : i64[1,1]
  %u = Constant() {value = tensor f32[1,4] [1, 2, 3, 4]} : f32[1,4]
  %s = ScatterND(%x, %i, %u) : f32[N,4]
  return %s
}
)",
                     "no_symbolic_lowering", true);
}

// A range in which a derived dim would be negative (a length shorter than a kernel) is refused
// at compile time, naming the value and the symbols' ranges.
TEST(DynamicBatch, ARangeTheModelCannotTakeIsNamed) {
  Model m = parseModel(R"(graph @g(%x: f32[1,1,L]) {
  %w = Constant() {value = tensor f32[1,1,5] [1, 1, 1, 1, 1]} : f32[1,1,5]
  %y = Conv(%x, %w) : f32[1,1,L-4]
  return %y
}
)");
  try {
    compile(m, "short", {{"L", 1, 3}});
    ADD_FAILURE() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("its dim L-4 is -1 at the symbols' upper bounds; give "
                                         "each symbol the range the model takes with --dim"),
              std::string::npos)
        << e.what();
  }
}

// A length's default range widens while memory allows (runtime::widenDefaultLength): an audio
// frontend's samples up to kMaxDefaultLength, with the raised lower end kept; a length whose
// square is a value stops where the bytes pass the budget; two image sides, a given range or a
// batch alone keep their defaults.
TEST(DynamicBatch, ALengthsDefaultRangeWidensWhileMemoryAllows) {
  auto widened = [](const char* ir, std::vector<rt::Symbol> given = {}) {
    Model m = parseModel(ir);
    std::map<std::string, std::pair<int64_t, int64_t>> r;
    for (const rt::Symbol& s :
         runtime::inputSymbolRanges(*m.graph, runtime::widenDefaultLength(*m.graph, given)))
      r[s.name] = {s.lo, s.hi};
    return r;
  };
  using R = std::map<std::string, std::pair<int64_t, int64_t>>;
  EXPECT_EQ(widened(R"(graph @g(%x: f32[N,L], %w: f32[4,1,400]) {
  %one = const i64[1] [1]
  %u = Unsqueeze(%x, %one) : f32[N,1,L]
  %y = Conv(%u, %w) {strides = [160]} : f32[N,4,(L-400)/160+1]
  return %y
}
)"),
            (R{{"N", {1, 16}}, {"L", {400, runtime::kMaxDefaultLength}}}));
  // [L, L] f32 at 8192 is 256 MiB, with the other values past the budget: 4096.
  EXPECT_EQ(widened(R"(graph @g(%x: f32[L,1], %y: f32[1,L]) {
  %p = MatMul(%x, %y) : f32[L,L]
  return %p
}
)"),
            (R{{"L", {1, 4096}}}));
  EXPECT_EQ(widened(R"(graph @g(%x: f32[1,3,H,W]) {
  %y = Relu(%x) : f32[1,3,H,W]
  return %y
}
)"),
            (R{{"H", {1, runtime::kDefaultSizeBound}}, {"W", {1, runtime::kDefaultSizeBound}}}));
  EXPECT_EQ(widened(R"(graph @g(%x: f32[1,L]) {
  %y = Relu(%x) : f32[1,L]
  return %y
}
)",
                    {{"L", 1, 2000}}),
            (R{{"L", {1, 2000}}}));
}

// One-line errors naming the input and the dim: wrong rank, a static dim, the range, a symbol
// given two values; the model runs again after each.
TEST(DynamicBatch, BadInputsNameTheInputAndTheDim) {
  Model m = parseModel("graph @g(%x: f32[N,4], %y: f32[N,4]) {\n"
                       "  %z = Add(%x, %y) : f32[N,4]\n  return %z\n}\n");
  fs::path dir = compile(m, "bad", {{"N", 2, 5}});
  aicc_model* am = aicc_model_load(dir.c_str());
  ASSERT_TRUE(am) << aicc_last_error();
  std::vector<float> buf(64, 1.0f);
  auto error = [&](int rc) {
    EXPECT_NE(rc, 0);
    const std::string e = aicc_last_error();
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    return e;
  };
  auto has = [](const std::string& e, const char* want) {
    EXPECT_NE(e.find(want), std::string::npos) << e;
  };
  const int64_t rank3[3] = {2, 4, 1}, dim1[2] = {3, 5}, ok3[2] = {3, 4}, ok4[2] = {4, 4},
                big[2] = {6, 4}, small[2] = {1, 4};
  has(error(aicc_model_set_input_dims(am, 0, buf.data(), 32, rank3, 3)),
      "input 'x' has rank 3, the model takes rank 2 f32[N,4] (N in 2..5)");
  has(error(aicc_model_set_input_dims(am, 0, buf.data(), 60, dim1, 2)),
      "input 'x': dim 1 is 5, the model takes 4");
  has(error(aicc_model_set_input(am, 0, buf.data(), 10)), "10 bytes is not a whole number");
  ASSERT_EQ(aicc_model_set_input_dims(am, 0, buf.data(), 96, big, 2), 0) << aicc_last_error();
  ASSERT_EQ(aicc_model_set_input_dims(am, 1, buf.data(), 96, big, 2), 0) << aicc_last_error();
  has(error(aicc_model_run(am)),
      "input 'x': dim 0 (N) is 6, outside the range 2..5 it was compiled for (compile with --dim "
      "N=2..6)");
  ASSERT_EQ(aicc_model_set_input_dims(am, 0, buf.data(), 16, small, 2), 0);
  ASSERT_EQ(aicc_model_set_input_dims(am, 1, buf.data(), 16, small, 2), 0);
  has(error(aicc_model_run(am)), "input 'x': dim 0 (N) is 1, outside the range 2..5");
  ASSERT_EQ(aicc_model_set_input_dims(am, 0, buf.data(), 48, ok3, 2), 0);
  ASSERT_EQ(aicc_model_set_input_dims(am, 1, buf.data(), 64, ok4, 2), 0);
  has(error(aicc_model_run(am)), "input 'y': dim 0 (N) is 4, but input 'x' gives N = 3");
  ASSERT_EQ(aicc_model_set_input(am, 1, buf.data(), 48), 0) << aicc_last_error();
  ASSERT_EQ(aicc_model_run(am), 0) << aicc_last_error();
  size_t bytes = 0;
  const float* z = static_cast<const float*>(aicc_model_output(am, 0, &bytes));
  ASSERT_TRUE(z);
  EXPECT_EQ(bytes, 48u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(z[i], 2.0f);
  aicc_model_free(am);
}

} // namespace
} // namespace aicc
