// Nodes whose values carry symbols that are not one leading run of samples (an image's H and W
// after its channels, an attention's length in two places, a GEMM's K) are lowered with the
// run's sizes (loop/per_sample.h lowerSymbolic): each test compiles one artifact with no fallback
// task and checks it against the interpreter at several sizes, the smallest (1) among them.
#include "aicc/runtime.h"
#include "backend/op_select.h"
#include "backend/target.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/rewrite.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace aicc {
namespace {

namespace fs = std::filesystem;

// Uniform in [-1, 1) for floats; integers (class targets) in {0, 1, 2}.
Tensor random(const Dims& d, uint32_t seed, DType t) {
  Tensor x = test::uniformTensor(d, seed);
  if (t == DType::F32) return x;
  Tensor y(t, d);
  for (int64_t k = 0; k < x.numel(); ++k)
    y.setF64(k, isInteger(t) ? std::floor((x.getF64(k) + 1) * 1.5) : x.getF64(k));
  return y;
}

// The model of `ir` with its inputs named w... made constant weights (uniform in [-0.5, 0.5)).
Model withWeights(const std::string& ir) {
  Model m = parseModel(ir);
  auto& ins = m.graph->inputs;
  uint32_t seed = 100;
  for (auto it = ins.begin(); it != ins.end();) {
    if ((*it)->name[0] != 'w') {
      ++it;
      continue;
    }
    Value* w =
        m.graph->addConstant((*it)->name + "_init",
                             test::uniformTensor(*toDims(*(*it)->type.shape), seed++, -0.5f, 0.5f));
    replaceAllUses(*m.graph, *it, w);
    it = ins.erase(it);
  }
  return m;
}

// Compiles the model `make` returns for `ranges`, checks the plan has no fallback task (and
// `inspect`s the compiled graph), then runs it at each size (the inputs' dims from `dims(size)`)
// against the interpreter.
void expectCompiledAtRunSizes(const std::string& name, const std::function<Model()>& make,
                              const std::vector<rt::Symbol>& ranges,
                              const std::vector<std::vector<Dims>>& sizes, double tol = 1e-5,
                              const std::function<void(const Graph&)>& inspect = {}) {
  Model ref = make(), m = make();
  fs::path dir = test::compileArtifact(m, "aicc_run_sizes_" + name, ranges);
  if (inspect) inspect(*m.graph);
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << name << ":\n" << plan;
  runtime::LoadedArtifact art(dir.string());
  uint32_t seed = 1;
  for (const std::vector<Dims>& dims : sizes) {
    std::vector<RValue> in;
    for (size_t k = 0; k < dims.size(); ++k)
      in.push_back(RValue::of(random(dims[k], seed++, ref.graph->inputs.at(k)->type.dtype)));
    std::string at;
    for (int64_t d : dims[0]) at += (at.empty() ? "" : "x") + std::to_string(d);
    SCOPED_TRACE(name + " with input 0 of " + at);
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {tol, tol});
  }
}

void expectCompiledAtRunSizes(const std::string& name, const std::string& ir,
                              const std::vector<rt::Symbol>& ranges,
                              const std::vector<std::vector<Dims>>& sizes, double tol = 1e-5) {
  expectCompiledAtRunSizes(
      name, [&] { return parseModel(ir); }, ranges, sizes, tol);
}

// An attention the recognizer does not take (a bias of its own before the softmax): both
// MatMuls of run-time operands at the run's batch and length (the GEMM kernel per batch matrix,
// lda / ldb / ldc the run's; K the length in the second), the scaled scores fused after the first.
TEST(DynamicRunSizes, MatMulsOfRunTimeOperands) {
  const char* ir =
      R"(graph @g(%q: f32[N,2,S,8], %k: f32[N,2,8,S], %v: f32[N,2,S,8], %b: f32[1,2,S,S]) {
  %s = MatMul(%q, %k) : f32[N,2,S,S]
  %c = Constant() {value = tensor f32[] [0.35]} : f32[]
  %t = Mul(%s, %c) : f32[N,2,S,S]
  %u = Add(%t, %b) : f32[N,2,S,S]
  %p = Softmax(%u) {axis = -1} : f32[N,2,S,S]
  %o = MatMul(%p, %v) : f32[N,2,S,8]
  return %o, %s
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, s] : {std::pair<int64_t, int64_t>{1, 1}, {2, 17}, {3, 40}})
    sizes.push_back({{n, 2, s, 8}, {n, 2, 8, s}, {n, 2, s, 8}, {1, 2, s, s}});
  expectCompiledAtRunSizes("attention", ir, {{"N", 1, 3}, {"S", 1, 40}}, sizes);
}

// Constant weights under a [N, 2, S, 8] activation (not one leading run: the 2 sits between N
// and S): packed at compile time, every row of the run in one call, the bias row and Relu in the
// kernel; a residual Add in the kernel too.
TEST(DynamicRunSizes, MatMulOfWeightsOverRunRows) {
  const char* ir = R"(graph @g(%x: f32[N,2,S,8]) {
  %w = Constant() {value = tensor f32[8,8] [0.1, -0.2, 0.3, 0.05, -0.1, 0.2, 0.0, 0.4, 0.2, 0.1, -0.3, 0.25, 0.1, 0.0, -0.2, 0.1, -0.1, 0.3, 0.2, -0.05, 0.15, 0.1, 0.2, -0.3, 0.3, 0.0, 0.1, 0.2, -0.2, 0.1, 0.05, 0.0, 0.1, -0.2, 0.3, 0.05, -0.1, 0.2, 0.0, 0.4, 0.2, 0.1, -0.3, 0.25, 0.1, 0.0, -0.2, 0.1, -0.1, 0.3, 0.2, -0.05, 0.15, 0.1, 0.2, -0.3, 0.3, 0.0, 0.1, 0.2, -0.2, 0.1, 0.05, 0.0]} : f32[8,8]
  %bias = Constant() {value = tensor f32[8] [0.1, -0.1, 0.2, -0.2, 0.3, -0.3, 0.0, 0.05]} : f32[8]
  %m = MatMul(%x, %w) : f32[N,2,S,8]
  %a = Add(%m, %bias) : f32[N,2,S,8]
  %r = Relu(%a) : f32[N,2,S,8]
  %m2 = MatMul(%r, %w) : f32[N,2,S,8]
  %y = Add(%m2, %x) : f32[N,2,S,8]
  return %y
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, s] : {std::pair<int64_t, int64_t>{1, 1}, {2, 19}, {3, 33}})
    sizes.push_back({{n, 2, s, 8}});
  expectCompiledAtRunSizes("weights", ir, {{"N", 1, 3}, {"S", 1, 40}}, sizes);
}

// Gemm with every dim symbolic, alpha, beta and a C broadcast along M; an f64 MatMul on the loop
// nest with a batch broadcast; numpy's 1-D promotion (a vector of the run's length).
TEST(DynamicRunSizes, GemmAndLoopNestMatMuls) {
  const char* ir =
      R"(graph @g(%a: f32[M,K], %b: f32[N,K], %c: f32[1,N], %x: f64[B,S,4], %y: f64[1,4,S], %v: f32[K]) {
  %g = Gemm(%a, %b, %c) {alpha = 0.5, beta = 2.0, transB = 1} : f32[M,N]
  %z = MatMul(%x, %y) : f64[B,S,S]
  %u = MatMul(%a, %v) : f32[M]
  return %g, %z, %u
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [m, k, n, b, s] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1, 1},
        {5, 9, 7, 2, 3},
        {16, 13, 11, 3, 6}})
    sizes.push_back({{m, k}, {n, k}, {1, n}, {b, s, 4}, {1, 4, s}, {k}});
  expectCompiledAtRunSizes(
      "gemm", ir, {{"M", 1, 16}, {"K", 1, 16}, {"N", 1, 16}, {"B", 1, 3}, {"S", 1, 6}}, sizes);
}

// A segmentation head's ArgMax over the channels and normalizations over H and W (instance,
// group, Lp over the channels), the image sides symbolic after the channels.
TEST(DynamicRunSizes, ArgMaxAndNormalizationsOverImageSides) {
  const char* ir = R"(graph @g(%x: f32[N,4,H,W]) {
  %s = Constant() {value = tensor f32[4] [1.0, 0.5, -0.5, 2.0]} : f32[4]
  %b = Constant() {value = tensor f32[4] [0.1, 0.2, 0.3, 0.4]} : f32[4]
  %i = InstanceNormalization(%x, %s, %b) : f32[N,4,H,W]
  %g = GroupNormalization(%x, %s, %b) {num_groups = 2} : f32[N,4,H,W]
  %l = LpNormalization(%x) {axis = 1, p = 2} : f32[N,4,H,W]
  %h = Hardmax(%x) {axis = 2} : f32[N,4,H,W]
  %a = ArgMax(%x) {axis = 1, keepdims = 0} : i64[N,H,W]
  %m = ArgMin(%x) {axis = 3, select_last_index = 1} : i64[N,4,H,1]
  return %i, %g, %l, %h, %a, %m
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, h, w] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {2, 7, 5}, {1, 20, 33}})
    sizes.push_back({{n, 4, h, w}});
  expectCompiledAtRunSizes("images", ir, {{"N", 1, 2}, {"H", 1, 20}, {"W", 1, 40}}, sizes, 1e-4);
}

// A super-resolution tail (DepthToSpace, CRD and DCR) and SpaceToDepth back, under symbolic H
// and W, and channels C symbolic too: the output's run dims drive the copy, the input read at its
// run strides and channel count (SpaceToDepth's H of 2*H / 2 inferred as H).
TEST(DynamicRunSizes, DepthToSpaceAndBackAtTheRunsSides) {
  const char* ir = R"(graph @g(%x: f32[N,8,H,W], %z: f32[N,C,H,W]) {
  %d = DepthToSpace(%x) {blocksize = 2, mode = "CRD"} : f32[N,2,2*H,2*W]
  %e = DepthToSpace(%x) {blocksize = 2, mode = "DCR"} : f32[N,2,2*H,2*W]
  %s = SpaceToDepth(%e) {blocksize = 2} : f32[N,8,H,W]
  %c = Concat(%z, %z, %z, %z) {axis = 1} : f32[N,4*C,H,W]
  %f = DepthToSpace(%c) {blocksize = 2, mode = "DCR"} : f32[N,C,2*H,2*W]
  %t = SpaceToDepth(%f) {blocksize = 2} : f32[N,4*C,H,W]
  return %d, %s, %f, %t
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, c, h, w] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1}, {2, 3, 7, 5}, {1, 2, 20, 33}})
    sizes.push_back({{n, 8, h, w}, {n, c, h, w}});
  expectCompiledAtRunSizes("blocks", ir, {{"N", 1, 2}, {"C", 1, 3}, {"H", 1, 20}, {"W", 1, 40}},
                           sizes);
}

// GridSample with the input's sides and the grid's symbolic (a spatial transformer's warp): the
// coordinates' ranges follow the run's sides (a side of 1 included), every mode and padding mode;
// the grid scaled past [-1, 1] so the paddings act.
TEST(DynamicRunSizes, GridSampleAtTheRunsSides) {
  const char* ir = R"(graph @g(%x: f32[N,3,H,W], %g: f32[N,P,Q,2]) {
  %k = Constant() {value = tensor f32[] [1.7]} : f32[]
  %s = Mul(%g, %k) : f32[N,P,Q,2]
  %a = GridSample(%x, %s) {mode = "linear", padding_mode = "zeros"} : f32[N,3,P,Q]
  %b = GridSample(%x, %s) {mode = "nearest", padding_mode = "border", align_corners = 1} : f32[N,3,P,Q]
  %c = GridSample(%x, %s) {mode = "cubic", padding_mode = "reflection"} : f32[N,3,P,Q]
  %d = GridSample(%x, %s) {mode = "linear", padding_mode = "reflection", align_corners = 1} : f32[N,3,P,Q]
  return %a, %b, %c, %d
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, h, w, p, q] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1, 1},
        {2, 7, 5, 3, 9},
        {1, 20, 17, 12, 5},
        {2, 1, 6, 4, 4}})
    sizes.push_back({{n, 3, h, w}, {n, p, q, 2}});
  expectCompiledAtRunSizes("grid", ir,
                           {{"N", 1, 2}, {"H", 1, 20}, {"W", 1, 20}, {"P", 1, 12}, {"Q", 1, 12}},
                           sizes, 1e-5);
}

// TensorFlow-style auto_pad SAME under symbolic image sides: the pads follow the run's sizes
// (total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - in)), on the GEMM and depthwise
// convolution kernels, the 2-D pooling kernels and (f64) the pooling loop nest.
TEST(DynamicRunSizes, SamePaddingFollowsTheRunsSides) {
  std::string weights; // a constant [2, 4, 3, 3] (the GEMM convolution packs constant weights)
  for (int k = 0; k < 72; ++k)
    weights += (k ? ", " : "") + std::to_string((k * 37 % 19 - 9) / 10.0);
  const std::string ir = R"(graph @g(%x: f32[N,4,H,W], %d: f32[4,1,3,3], %z: f64[N,4,H,W]) {
  %w = Constant() {value = tensor f32[2,4,3,3] [)" +
                         weights + R"(]} : f32[2,4,3,3]
  %c = Conv(%x, %w) {auto_pad = "SAME_UPPER", strides = [2, 2]} : f32[N,2,(H+1)/2,(W+1)/2]
  %e = Conv(%x, %d) {auto_pad = "SAME_LOWER", group = 4} : f32[N,4,H,W]
  %m = MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], auto_pad = "SAME_UPPER"} : f32[N,4,(H+1)/2,(W+1)/2]
  %a = AveragePool(%x) {kernel_shape = [3, 2], strides = [2, 1], auto_pad = "SAME_LOWER"} : f32[N,4,(H+1)/2,W]
  %f = AveragePool(%z) {kernel_shape = [3, 3], strides = [2, 2], auto_pad = "SAME_UPPER"} : f64[N,4,(H+1)/2,(W+1)/2]
  return %c, %e, %m, %a, %f
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, h, w] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {2, 17, 6}, {1, 20, 33}})
    sizes.push_back({{n, 4, h, w}, {4, 1, 3, 3}, {n, 4, h, w}});
  expectCompiledAtRunSizes("same", ir, {{"N", 1, 2}, {"H", 1, 20}, {"W", 1, 40}}, sizes, 1e-5);
}

// ConvTranspose (a decoder's upsampling) at symbolic image sides: auto_pad SAME_UPPER and
// SAME_LOWER (with output_padding), whose pads follow the run's sizes, and explicit pads.
TEST(DynamicRunSizes, ConvTransposeAtTheRunsSides) {
  const char* ir = R"(graph @g(%x: f32[N,4,H,W], %w: f32[4,2,3,3]) {
  %a = ConvTranspose(%x, %w) {strides = [2, 2], auto_pad = "SAME_UPPER"} : f32[N,2,2*H,2*W]
  %b = ConvTranspose(%x, %w) {strides = [2, 2], auto_pad = "SAME_LOWER", output_padding = [1, 1]} : f32[N,2,2*H,2*W]
  %c = ConvTranspose(%x, %w) {strides = [2, 1], pads = [1, 0, 1, 1]} : f32[N,2,2*H-1,W+1]
  return %a, %b, %c
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, h, w] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {2, 7, 5}, {1, 20, 13}})
    sizes.push_back({{n, 4, h, w}, {4, 2, 3, 3}});
  expectCompiledAtRunSizes("convtranspose", ir, {{"N", 1, 2}, {"H", 1, 20}, {"W", 1, 20}}, sizes,
                           1e-5);
}

// Pools over a symbolic length (an audio model's [N, C, L]): MaxPool, AveragePool counting the
// pads, LpPool and a SAME MaxPool on the pooling loop nest, at the run's length.
TEST(DynamicRunSizes, PoolsAlongALength) {
  const char* ir = R"(graph @g(%x: f32[N,4,L]) {
  %a = MaxPool(%x) {kernel_shape = [3], strides = [2], pads = [1, 1]} : f32[N,4,(L+1)/2]
  %b = AveragePool(%x) {kernel_shape = [4], pads = [2, 1], count_include_pad = 1} : f32[N,4,L]
  %c = LpPool(%x) {kernel_shape = [2], strides = [2], p = 2} : f32[N,4,L/2]
  %d = MaxPool(%x) {kernel_shape = [3], strides = [2], auto_pad = "SAME_UPPER"} : f32[N,4,(L+1)/2]
  return %a, %b, %c, %d
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, l] : {std::pair<int64_t, int64_t>{1, 2}, {2, 17}, {3, 64}})
    sizes.push_back({{n, 4, l}});
  expectCompiledAtRunSizes("pools", ir, {{"N", 1, 3}, {"L", 2, 64}}, sizes, 1e-5);
}

// Training losses over [N, C, D] scores with N, C and D symbolic: SoftmaxCrossEntropyLoss with
// class weights, an ignored class, log_prob and no reduction; NegativeLogLikelihoodLoss summed
// and averaged (the average over the weights of the targets not ignored).
TEST(DynamicRunSizes, LossesAtTheRunsSizes) {
  const char* ir = R"(graph @g(%x: f32[N,C,D], %t: i64[N,D], %w: f32[C]) {
  %l, %lp = SoftmaxCrossEntropyLoss(%x, %t, %w) {reduction = "none", ignore_index = 1} : f32[N,D], f32[N,C,D]
  %s = NegativeLogLikelihoodLoss(%x, %t) {reduction = "sum"} : f32[]
  %m = NegativeLogLikelihoodLoss(%x, %t, %w) {reduction = "mean", ignore_index = 2} : f32[]
  %q = SoftmaxCrossEntropyLoss(%x, %t) {reduction = "mean"} : f32[]
  return %l, %lp, %s, %m, %q
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, c, d] : {std::tuple<int64_t, int64_t, int64_t>{1, 3, 1}, {2, 5, 7}, {4, 3, 12}})
    sizes.push_back({{n, c, d}, {n, d}, {c}});
  expectCompiledAtRunSizes("losses", ir, {{"N", 1, 4}, {"C", 3, 5}, {"D", 1, 12}}, sizes, 1e-5);
}

// GatherElements and ScatterElements (its reductions too) with the data's and the indices'
// dims symbolic: each at its run strides, the indices checked against the run's axis.
TEST(DynamicRunSizes, GatherAndScatterElements) {
  const char* ir = R"(graph @g(%x: f32[N,L], %i: i64[N,K], %u: f32[N,K]) {
  %g = GatherElements(%x, %i) {axis = 1} : f32[N,K]
  %s = ScatterElements(%x, %i, %u) {axis = 1, reduction = "add"} : f32[N,L]
  %m = ScatterElements(%x, %i, %u) {axis = 1, reduction = "max"} : f32[N,L]
  return %g, %s, %m
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, l, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 3, 1}, {2, 5, 7}, {4, 9, 3}})
    sizes.push_back({{n, l}, {n, k}, {n, k}});
  expectCompiledAtRunSizes("elements", ir, {{"N", 1, 4}, {"L", 3, 9}, {"K", 1, 7}}, sizes);
}

// Reductions fused with their elementwise prologue (fuse-elementwise's kind "reduction") over
// symbolic axes: an instance norm written out (ReduceMean of a Pow over H and W, older exports)
// and a log-softmax by hand along a symbolic length (ReduceSum of an Exp): the prologue's temp
// holds the run's elements at the run's strides.
TEST(DynamicRunSizes, FusedReductionsOverSymbolicAxes) {
  const char* ir = R"(graph @g(%x: f32[N,4,H,W], %z: f32[N,S]) {
  %axes = Constant() {value = tensor i64[2] [2, 3]} : i64[2]
  %one = Constant() {value = tensor i64[1] [1]} : i64[1]
  %two = Constant() {value = tensor f32[] [2]} : f32[]
  %eps = Constant() {value = tensor f32[] [0.00001]} : f32[]
  %m = ReduceMean(%x, %axes) : f32[N,4,1,1]
  %d = Sub(%x, %m) : f32[N,4,H,W]
  %d2 = Pow(%d, %two) : f32[N,4,H,W]
  %v = ReduceMean(%d2, %axes) : f32[N,4,1,1]
  %ve = Add(%v, %eps) : f32[N,4,1,1]
  %s = Sqrt(%ve) : f32[N,4,1,1]
  %y = Div(%d, %s) : f32[N,4,H,W]
  %e = Exp(%z) : f32[N,S]
  %es = ReduceSum(%e, %one) : f32[N,1]
  %l = Log(%es) : f32[N,1]
  %ls = Sub(%z, %l) : f32[N,S]
  return %y, %ls
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, h, w, l] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1}, {2, 17, 6, 9}, {1, 20, 33, 40}})
    sizes.push_back({{n, 4, h, w}, {n, l}});
  expectCompiledAtRunSizes("fused_reductions", ir,
                           {{"N", 1, 2}, {"H", 1, 20}, {"W", 1, 40}, {"S", 1, 40}}, sizes, 1e-4);
}

// A quantized attention's QLinearMatMuls (ONNX Runtime's quantize_static of a transformer) at
// the run's batch and length: two run-time u8 operands on the int8 tiles per product, a constant
// b over every row of the run, and i8 operands on the loop nest.
TEST(DynamicRunSizes, QLinearMatMulsAtTheRunsLength) {
  const char* ir = R"(graph @g(%q: u8[N,2,S,8], %k: u8[N,2,8,S], %c: i8[N,2,S,8], %d: i8[N,2,8,S]) {
  %sa = Constant() {value = tensor f32[] [0.05]} : f32[]
  %za = Constant() {value = tensor u8[] [1]} : u8[]
  %zi = Constant() {value = tensor i8[] [-1]} : i8[]
  %sy = Constant() {value = tensor f32[] [0.02]} : f32[]
  %w = Constant() {value = tensor i8[8,3] [1, -2, 3, 0, 1, -1, 2, 2, -3, 1, 0, 1, -1, 3, 2, 0, -2, 1, 1, 1, 0, 2, -1, 3]} : i8[8,3]
  %s = QLinearMatMul(%q, %sa, %za, %k, %sa, %za, %sy, %za) : u8[N,2,S,S]
  %p = QLinearMatMul(%q, %sa, %za, %w, %sa, %zi, %sy, %za) : u8[N,2,S,3]
  %i = QLinearMatMul(%c, %sa, %zi, %d, %sa, %zi, %sy, %zi) : i8[N,2,S,S]
  return %s, %p, %i
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, l] : {std::pair<int64_t, int64_t>{1, 1}, {2, 17}, {1, 40}})
    sizes.push_back({{n, 2, l, 8}, {n, 2, 8, l}, {n, 2, l, 8}, {n, 2, 8, l}});
  expectCompiledAtRunSizes("qlinear", ir, {{"N", 1, 2}, {"S", 1, 40}}, sizes, 0);
}

// Einsum with symbolic labels: attention scores written as an einsum (bhqd,bhkd->bhqk), a sum
// over a symbolic axis (ij->j) and a broadcast label (a dim of 1 under a symbolic one).
TEST(DynamicRunSizes, EinsumAtTheRunsSizes) {
  const char* ir = R"(graph @g(%q: f32[N,2,S,4], %k: f32[N,2,T,4], %x: f32[S,3], %y: f32[1,3]) {
  %a = Einsum(%q, %k) {equation = "bhqd,bhkd->bhqk"} : f32[N,2,S,T]
  %c = Einsum(%x) {equation = "ij->j"} : f32[3]
  %d = Einsum(%x, %y) {equation = "ij,ij->ij"} : f32[S,3]
  return %a, %c, %d
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, s, t] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {2, 9, 5}, {1, 16, 12}})
    sizes.push_back({{n, 2, s, 4}, {n, 2, t, 4}, {s, 3}, {1, 3}});
  expectCompiledAtRunSizes("einsum", ir, {{"N", 1, 2}, {"S", 1, 16}, {"T", 1, 12}}, sizes);
}

// Tile and LRN under symbolic image sides (and channels for LRN's window): the input read at
// its run dims and strides.
TEST(DynamicRunSizes, TileAndLrnAtTheRunsSides) {
  const char* ir = R"(graph @g(%x: f32[N,C,H,W]) {
  %r = Constant() {value = tensor i64[4] [1, 2, 1, 3]} : i64[4]
  %t = Tile(%x, %r) : f32[N,2*C,H,3*W]
  %l = LRN(%x) {size = 3, alpha = 0.001, beta = 0.75, bias = 1.0} : f32[N,C,H,W]
  return %t, %l
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, c, h, w] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1}, {2, 3, 7, 5}, {1, 5, 20, 33}})
    sizes.push_back({{n, c, h, w}});
  expectCompiledAtRunSizes("tile_lrn", ir, {{"N", 1, 2}, {"C", 1, 5}, {"H", 1, 20}, {"W", 1, 40}},
                           sizes);
}

// An FPN / U-Net upsampling to its skip connection's size (sizes = Shape(skip)[2:], known
// symbolically by data propagation): the scales are the run's out / in, for each coordinate
// mapping that reads the sizes too; up and down, and a side of 1.
TEST(DynamicRunSizes, ResizeToAnotherValuesSides) {
  const char* ir = R"(graph @g(%x: f32[N,4,h,w], %skip: f32[N,4,H,W]) {
  %ss = Shape(%skip) : i64[4]
  %xs = Shape(%x) : i64[4]
  %z = Constant() {value = tensor i64[1] [0]} : i64[1]
  %two = Constant() {value = tensor i64[1] [2]} : i64[1]
  %four = Constant() {value = tensor i64[1] [4]} : i64[1]
  %nc = Slice(%xs, %z, %two) : i64[2]
  %hw = Slice(%ss, %two, %four) : i64[2]
  %sz = Concat(%nc, %hw) {axis = 0} : i64[4]
  %a = Resize(%x, _, _, %sz) {mode = "linear", coordinate_transformation_mode = "half_pixel"} : f32[N,4,H,W]
  %s = Add(%a, %skip) : f32[N,4,H,W]
  %b = Resize(%x, _, _, %sz) {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : f32[N,4,H,W]
  %c = Resize(%x, _, _, %sz) {mode = "cubic", coordinate_transformation_mode = "align_corners"} : f32[N,4,H,W]
  %d = Resize(%x, _, _, %sz) {mode = "linear", coordinate_transformation_mode = "pytorch_half_pixel"} : f32[N,4,H,W]
  return %s, %b, %c, %d
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, h, w, hh, ww] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1, 1},
        {2, 5, 7, 17, 9},
        {1, 9, 8, 4, 3},
        {1, 3, 3, 12, 1}})
    sizes.push_back({{n, 4, h, w}, {n, 4, hh, ww}});
  expectCompiledAtRunSizes("resize_sizes", ir,
                           {{"N", 1, 2}, {"h", 1, 10}, {"w", 1, 10}, {"H", 1, 20}, {"W", 1, 20}},
                           sizes, 1e-5);
}

// A Slice of run-time starts and ends along a symbolic length (a window of the run's steps, one
// from the end with a step of 2): the normalization and clamping use the run's length, the
// result's length a data symbol the task writes.
TEST(DynamicRunSizes, SliceOfRunTimeBoundsAlongALength) {
  const char* ir = R"(graph @g(%x: f32[N,S,4], %a: i64[1], %e: i64[1]) {
  %ax = Constant() {value = tensor i64[1] [1]} : i64[1]
  %two = Constant() {value = tensor i64[1] [2]} : i64[1]
  %big = Constant() {value = tensor i64[1] [1000]} : i64[1]
  %seven = Constant() {value = tensor i64[1] [7]} : i64[1]
  %e7 = Mul(%e, %seven) : i64[1]
  %y = Slice(%x, %a, %e7, %ax) : f32[N,?,4]
  %m = Neg(%e7) : i64[1]
  %z = Slice(%x, %m, %big, %ax, %two) : f32[N,?,4]
  return %y, %z
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, l] : {std::pair<int64_t, int64_t>{1, 1}, {2, 17}, {3, 40}, {1, 5}})
    sizes.push_back({{n, l, 4}, {1}, {1}});
  expectCompiledAtRunSizes("slice", ir, {{"N", 1, 3}, {"S", 1, 40}}, sizes);
}

// Position ids from an attention mask (CumSum along the symbolic length, forward, reverse and
// exclusive), and LayerNormalization over a symbolic axis with its Mean and InvStdDev outputs.
TEST(DynamicRunSizes, CumSumAndLayerNormAlongTheLength) {
  const char* ir = R"(graph @g(%x: f32[N,S], %y: f32[N,S,3], %sc: f32[S,3]) {
  %one = Constant() {value = tensor i64[] [1]} : i64[]
  %c = CumSum(%x, %one) : f32[N,S]
  %r = CumSum(%x, %one) {exclusive = 1, reverse = 1} : f32[N,S]
  %p = CumProd(%x, %one) : f32[N,S]
  %l, %mu, %inv = LayerNormalization(%y, %sc) {axis = 1} : f32[N,S,3], f32[N,1,1], f32[N,1,1]
  return %c, %r, %p, %l, %mu, %inv
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, s] : {std::pair<int64_t, int64_t>{1, 1}, {2, 17}, {3, 64}})
    sizes.push_back({{n, s}, {n, s, 3}, {s, 3}});
  expectCompiledAtRunSizes("length", ir, {{"N", 1, 3}, {"S", 1, 64}}, sizes, 1e-4);
}

// Elementwise regions big enough for the threads at symbolic sizes: same-shape chains (flatSpace
// splits their one loop at a dim: after the channels of [N, C, H, W], before the features of
// [N, S, F]), and operands broadcast along every kind of dim.
TEST(DynamicRunSizes, ElementwiseRegionsSplitForTheThreads) {
  const char* ir =
      R"(graph @g(%x: f32[N,8,H,W], %c: f32[1,8,1,1], %p: f32[N,1,H,W], %t: f32[N,S,64], %f: f32[64]) {
  %s = Sigmoid(%x) : f32[N,8,H,W]
  %w = Mul(%s, %x) : f32[N,8,H,W]
  %a = Mul(%x, %c) : f32[N,8,H,W]
  %b = Add(%a, %p) : f32[N,8,H,W]
  %e = Tanh(%t) : f32[N,S,64]
  %g = Add(%e, %t) : f32[N,S,64]
  %u = Add(%t, %f) : f32[N,S,64]
  return %w, %b, %g, %u
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [n, h, w, s] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1},
                            {2, 40, 61, 300},
                            {1, 97, 80, 513}})
    sizes.push_back({{n, 8, h, w}, {1, 8, 1, 1}, {n, 1, h, w}, {n, s, 64}, {64}});
  expectCompiledAtRunSizes("elementwise", ir,
                           {{"N", 1, 2}, {"H", 1, 100}, {"W", 1, 100}, {"S", 1, 600}}, sizes);
}

// Concats whose inputs are computed (the memory plan places such inputs inside the result when
// their offsets are fixed): along a symbolic axis (YOLOv8's anchor strides: [h*w, 1] per level)
// and along the channels of [1, C, H, W] with symbolic sides, where every offset past the first
// input is the run's. At the bounds' offsets a smaller run read zeros past the first input.
TEST(DynamicRunSizes, ConcatsOfComputedInputsAtTheRunsOffsets) {
  const char* ir =
      R"(graph @g(%x: f32[A,1], %y: f32[B,1], %z: f32[C,1], %p: f32[1,4,H,W], %q: f32[1,4,H,W]) {
  %a = Relu(%x) : f32[A,1]
  %b = Neg(%y) : f32[B,1]
  %e = Exp(%z) : f32[C,1]
  %c = Concat(%a, %b, %e) {axis = 0} : f32[A+B+C,1]
  %t = Transpose(%c) {perm = [1, 0]} : f32[1,A+B+C]
  %u = Relu(%p) : f32[1,4,H,W]
  %v = Neg(%q) : f32[1,4,H,W]
  %k = Concat(%u, %v) {axis = 1} : f32[1,8,H,W]
  %s = Sigmoid(%k) : f32[1,8,H,W]
  return %t, %s
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [a, b, c, h, w] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1, 1},
        {10, 5, 3, 7, 9},
        {64, 17, 40, 32, 30}})
    sizes.push_back({{a, 1}, {b, 1}, {c, 1}, {1, 4, h, w}, {1, 4, h, w}});
  expectCompiledAtRunSizes(
      "concat", ir, {{"A", 1, 64}, {"B", 1, 64}, {"C", 1, 64}, {"H", 1, 32}, {"W", 1, 32}}, sizes);
}

// YOLOv8's patterns at symbolic sides: a C2f block's Split along the channels, and its anchor
// grid, a float Range over the width cast to float (its length the width: compiled, not a value
// of run-time size).
TEST(DynamicRunSizes, SplitAndAFloatRangeOverTheSides) {
  const char* ir = R"(graph @g(%x: f32[1,8,H,W]) {
  %a, %b = Split(%x) {axis = 1, num_outputs = 2} : f32[1,4,H,W], f32[1,4,H,W]
  %m = Mul(%a, %b) : f32[1,4,H,W]
  %c = Concat(%m, %b) {axis = 1} : f32[1,8,H,W]
  %s = Shape(%x) : i64[4]
  %three = const i64[] [3]
  %w = Gather(%s, %three) {axis = 0} : i64[]
  %wf = Cast(%w) {to = 1} : f32[]
  %z = const f32[] [0]
  %one = const f32[] [1]
  %r = Range(%z, %wf, %one) : f32[W]
  %y = Add(%c, %r) : f32[1,8,H,W]
  return %y, %r
}
)";
  std::vector<std::vector<Dims>> sizes;
  for (auto [h, w] : {std::pair<int64_t, int64_t>{1, 1}, {5, 9}, {40, 64}})
    sizes.push_back({{1, 8, h, w}});
  expectCompiledAtRunSizes("yolo", ir, {{"H", 1, 40}, {"W", 1, 64}}, sizes);
}

// A CNN with its batch and image sides symbolic on the blocked layout (NCHW16c, AVX-512 targets:
// passes/assign_layout.h, judged at the sides' upper ends): a stem on NCHW planes, dense,
// depthwise and pointwise convolutions with a residual and Relus in their tiles, a MaxPool, a
// squeeze-excite gate and a global mean, every kernel at the run's sides. The sizes give output
// rows of every kind: narrow ones (under the tile's 14 pixels: a scratch tile per row), 7-pixel
// rows two to a tile (and alone, one row high) and wide ones with an overlapping last tile.
TEST(DynamicRunSizes, BlockedConvolutionsAtTheRunsSides) {
  const char* ir =
      R"(graph @g(%x: f32[N,3,H,W], %w1: f32[32,3,3,3], %wb: f32[32], %w2: f32[32,32,3,3], %w3: f32[32,1,3,3], %w4: f32[48,32,1,1], %w5: f32[48,48,3,3], %w6: f32[48,48,1,1]) {
  %c1 = Conv(%x, %w1, %wb) {pads = [1, 1, 1, 1], strides = [2, 2]} : f32[N,32,(H+1)/2,(W+1)/2]
  %r1 = Relu(%c1) : f32[N,32,(H+1)/2,(W+1)/2]
  %c2 = Conv(%r1, %w2) {pads = [1, 1, 1, 1]} : f32[N,32,(H+1)/2,(W+1)/2]
  %a2 = Add(%c2, %r1) : f32[N,32,(H+1)/2,(W+1)/2]
  %c3 = Conv(%a2, %w3) {group = 32, pads = [1, 1, 1, 1]} : f32[N,32,(H+1)/2,(W+1)/2]
  %r3 = Relu(%c3) : f32[N,32,(H+1)/2,(W+1)/2]
  %c4 = Conv(%r3, %w4) : f32[N,48,(H+1)/2,(W+1)/2]
  %p4 = MaxPool(%c4) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : f32[N,48,((H+1)/2+1)/2,((W+1)/2+1)/2]
  %c5 = Conv(%p4, %w5) {pads = [1, 1, 1, 1]} : f32[N,48,((H+1)/2+1)/2,((W+1)/2+1)/2]
  %g5 = GlobalAveragePool(%c5) : f32[N,48,1,1]
  %s5 = Sigmoid(%g5) : f32[N,48,1,1]
  %m5 = Mul(%c5, %s5) : f32[N,48,((H+1)/2+1)/2,((W+1)/2+1)/2]
  %c6 = Conv(%m5, %w6) : f32[N,48,((H+1)/2+1)/2,((W+1)/2+1)/2]
  %y = GlobalAveragePool(%c6) : f32[N,48,1,1]
  return %y, %c4
}
)";
  const bool blocked = backend::layoutBlockFor(backend::lowerOptionsFor(nativeTarget())) != 0;
  if (!blocked)
    std::printf("[ skipped  ] the blocked layout: this CPU lacks AVX-512 (the NCHW kernels run "
                "the model at the run's sides)\n");
  std::vector<std::vector<Dims>> sizes;
  // Stem rows (W+1)/2, then ((W+1)/2+1)/2: 1 and 1; 5 and 3; 7 (two rows) and 4; 7 (one row high)
  // and 4; 30 and 15; 47 and 24 at the bounds.
  for (auto [n, h, w] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                         {2, 6, 9},
                         {1, 13, 14},
                         {2, 2, 13},
                         {1, 23, 60},
                         {2, 64, 93}})
    sizes.push_back({{n, 3, h, w}});
  expectCompiledAtRunSizes(
      "blocked", [&] { return withWeights(ir); }, {{"N", 1, 2}, {"H", 1, 64}, {"W", 1, 93}}, sizes,
      1e-4,
      [&](const Graph& g) {
        int convs = 0; // (fused ones inside aicc.Fused bodies)
        forEachValue(g, [&](Value& v) { convs += v.producer && v.producer->op == "ConvNchwc"; });
        if (blocked) {
          EXPECT_EQ(convs, 6) << "every convolution on the blocked layout";
        }
      });
}

} // namespace
} // namespace aicc
