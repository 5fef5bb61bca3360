// --precision bf16 through the JIT (LowerOptions::bf16): constant-weight Conv / MatMul / Gemm run
// on the bf16 GEMM kernels. The kernels round their operands to bf16 (to nearest even) and
// accumulate in f32, so a graph whose weights and input are rounded to bf16 beforehand must give
// the interpreter's f32 results up to f32 accumulation error; the unrounded graph stays within
// bf16's rounding of the f32 results. Skipped, with the reason, on CPUs without AVX512-BF16.
#include "backend/op_select.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "kernels/gemm.h"
#include "kernels/registry.h"
#include "passes/pass_manager.h"
#include "passes/pipelines.h"
#include "passes/shape_inference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

namespace aicc {
namespace {

bool haveBf16() {
  return kernels::cpuSupports(kernels::Isa::Avx512Bf16) &&
         kernels::isaWithin(kernels::Isa::Avx512Bf16, kernels::bestIsa());
}

runtime::JitRunOptions bf16Options() {
  runtime::JitRunOptions o;
  o.lower = backend::engineLowerOptions(nativeTarget(), true);
  return o;
}

Tensor randomTensor(const Dims& d, std::mt19937& rng, bool round) {
  Tensor x(DType::F32, d);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = u(rng);
    x.data<float>()[i] = round ? kernels::bf16Round(v) : v;
  }
  return x;
}

// g through the bf16 JIT on `in`: some task must run a bf16 kernel, none may fall back.
std::vector<RValue> runBf16(const Graph& g, const std::vector<RValue>& in) {
  runtime::JitExecutable exe(g, bf16Options());
  auto got = exe.run(in);
  std::string schedules;
  for (const auto& t : exe.tasks()) schedules += t.schedule + "\n";
  EXPECT_NE(schedules.find("precision = \"bf16"), std::string::npos) << schedules;
  EXPECT_EQ(exe.stats().fallback, 0);
  return got;
}

// "%name = const f32[dims] [values]"
std::string constText(const std::string& name, const Dims& d, std::mt19937& rng, bool round) {
  const Tensor t = randomTensor(d, rng, round);
  std::ostringstream s;
  s.precision(9);
  s << "  %" << name << " = const f32" << dimsText(d) << " [";
  for (int64_t i = 0; i < t.numel(); ++i) s << (i ? ", " : "") << t.data<float>()[i];
  s << "]\n";
  return s.str();
}

// One layer `body` (over %x and the constants `consts`, result %y) at -O2 through the bf16 JIT:
// against the interpreter on bf16-rounded weights and input within f32 error, and on the f32
// ones within bf16's; the task must run the bf16 kernel.
void check(const std::string& what, const Dims& x,
           const std::vector<std::pair<std::string, Dims>>& consts, const std::string& body) {
  SCOPED_TRACE(what);
  for (bool round : {true, false}) {
    std::mt19937 rng(3);
    std::ostringstream g;
    g << "graph @g(%x: f32" << dimsText(x) << ") {\n";
    for (const auto& [name, d] : consts) g << constText(name, d, rng, round);
    g << body << "  return %y\n}\n";
    Model m = parseModel(g.str());
    inferShapes(*m.graph);
    PassManager<Model> pm;
    for (auto& p : optPipeline(2)) pm.add(std::move(p));
    pm.run(m);
    std::vector<RValue> in = {RValue::of(randomTensor(x, rng, false))}, rounded = in;
    for (int64_t i = 0; i < in[0].tensor.numel(); ++i)
      rounded[0].tensor.data<float>()[i] = kernels::bf16Round(in[0].tensor.data<float>()[i]);
    const auto want = interpret(*m.graph, round ? rounded : in);
    const auto got = runBf16(*m.graph, in);
    ASSERT_EQ(got.size(), want.size());
    // Exact operands: f32 accumulation error only. f32 operands: each product carries up to
    // 2^-8 relative rounding (two bf16 roundings), sums of K such terms in [-1, 1], so the error
    // grows with sqrt(K) as the outputs do: 3e-2, or 2e-3 of the largest output.
    double peak = 0;
    for (int64_t i = 0; i < want[0].tensor.numel(); ++i)
      peak = std::max(peak, std::fabs(double(want[0].tensor.data<float>()[i])));
    const Tolerance tol =
        round ? Tolerance{1e-4, 1e-4} : Tolerance{3e-2, std::max(3e-2, 2e-3 * peak)};
    auto diff = compareValues(want[0], got[0], tol);
    EXPECT_FALSE(diff) << (round ? "rounded operands: " : "f32 operands: ") << *diff;
  }
}

TEST(JitBf16, ConvolutionsAndGemmsMatchTheInterpreterOnBf16Operands) {
  if (!haveBf16()) GTEST_SKIP() << "this CPU lacks avx512bf16 (the bf16 GEMM kernels' ISA)";
  check("3x3 conv, 56-pixel rows (flat panels), bias + Relu", {1, 16, 12, 56},
        {{"w", {24, 16, 3, 3}}, {"b", {24}}},
        "  %c = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]}\n  %y = Relu(%c)\n");
  check("3x3 conv, 14-pixel rows (row segments), K > kc", {1, 40, 14, 14}, {{"w", {30, 40, 3, 3}}},
        "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]}\n");
  check("3x3 conv, K = 1080 > 992 (two K blocks of the AMX tile)", {1, 120, 10, 20},
        {{"w", {40, 120, 3, 3}}, {"b", {40}}}, "  %y = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]}\n");
  check("pointwise conv, odd K, partial rows", {1, 37, 9, 9}, {{"w", {19, 37, 1, 1}}, {"b", {19}}},
        "  %y = Conv(%x, %w, %b)\n");
  check("7x7 stride-2 stem (im2col panels)", {1, 3, 30, 30}, {{"w", {13, 3, 7, 7}}},
        "  %y = Conv(%x, %w) {strides = [2, 2], pads = [3, 3, 3, 3]}\n");
  check("1x1 stride-2 conv with a residual", {1, 8, 16, 16},
        {{"w", {8, 8, 1, 1}}, {"r", {1, 8, 8, 8}}},
        "  %c = Conv(%x, %w) {strides = [2, 2]}\n  %y = Add(%c, %r)\n");
  check("batched MatMul", {2, 17, 300}, {{"w", {300, 45}}}, "  %y = MatMul(%x, %w)\n");
  check("Gemm transB + bias + Relu", {5, 70}, {{"w", {33, 70}}, {"b", {33}}},
        "  %g = Gemm(%x, %w, %b) {transB = 1}\n  %y = Relu(%g)\n");
}

// Without --precision bf16 the candidate does not apply (and says why); with it the cost model
// takes it.
TEST(JitBf16, CandidateAppliesOnlyUnderBf16Precision) {
  if (!haveBf16()) GTEST_SKIP() << "this CPU lacks avx512bf16 (the bf16 GEMM kernels' ISA)";
  std::mt19937 rng(5);
  Model m = parseModel("graph @g(%a: f32[8,96]) {\n" + constText("w", {96, 64}, rng, false) +
                       "  %y = MatMul(%a, %w) : f32[8,64]\n  return %y\n}\n");
  const Node& n = *m.graph->nodes.back();
  const Target t = nativeTarget();
  // The best bf16 kernel of this CPU: AMX tiles where it has them, else AVX512-BF16.
  const std::string bf = std::string("ukernel:") +
                         kernels::bestKernel(kernels::KernelOp::GemmBf16, kernels::bestIsa())->name;
  auto f32 = backend::selectCandidate(n, t, std::nullopt, backend::lowerOptionsFor(t));
  ASSERT_TRUE(f32);
  EXPECT_NE(f32->candidate, bf);
  bool said = false;
  for (const std::string& r : f32->rejected)
    said |= r.find(bf + ": ") == 0 && r.find("bf16") != r.npos;
  EXPECT_TRUE(said) << "no rejection reason for " << bf;
  auto b = backend::selectCandidate(n, t, std::nullopt, backend::lowerOptionsFor(t, true));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->candidate, bf);
}

// Under --precision bf16 a depthwise convolution stays on a depthwise kernel (f32): as a GEMM per
// channel it filled one row of a tile (mobilenet_v2: 2.5x slower than the depthwise kernel); the
// dense convolution after it takes the bf16 kernel.
TEST(JitBf16, DepthwiseConvolutionsStayOnDepthwiseKernels) {
  if (!haveBf16()) GTEST_SKIP() << "this CPU lacks avx512bf16 (the bf16 GEMM kernels' ISA)";
  std::mt19937 rng(6);
  Model m = parseModel("graph @g(%x: f32[1,144,56,56]) {\n" +
                       constText("wd", {144, 1, 3, 3}, rng, false) +
                       constText("wp", {32, 144, 1, 1}, rng, false) +
                       "  %d = Conv(%x, %wd) {group = 144, kernel_shape = [3, 3], pads = [1, 1, 1, "
                       "1]} : f32[1,144,56,56]\n"
                       "  %y = Conv(%d, %wp) {kernel_shape = [1, 1]} : f32[1,32,56,56]\n"
                       "  return %y\n}\n");
  const Target t = nativeTarget();
  const auto o = backend::lowerOptionsFor(t, true);
  auto dw = backend::selectCandidate(*m.graph->nodes[0], t, std::nullopt, o);
  ASSERT_TRUE(dw);
  EXPECT_NE(dw->candidate.find("dwconv"), std::string::npos) << dw->candidate;
  for (const auto& [name, seconds] : dw->considered)
    EXPECT_EQ(name.find("gemm"), std::string::npos) << name << " considered for a depthwise conv";
  auto pw = backend::selectCandidate(*m.graph->nodes[1], t, std::nullopt, o);
  ASSERT_TRUE(pw);
  EXPECT_NE(pw->candidate.find("bf16_gemm"), std::string::npos) << pw->candidate;
}

// Attention under --precision bf16: QK^T and PV on the bf16 kernel (Q, K, V and the
// probabilities rounded to bf16, f32 accumulation, f32 softmax), against the interpreter in f32
// within bf16's error (outputs are averages of V's rows in [-1, 1]; a transposed or misplaced K
// or V panel is off by far more).
TEST(JitBf16, AttentionRunsBothProductsOnTheBf16Kernel) {
  if (!haveBf16()) GTEST_SKIP() << "this CPU lacks avx512bf16 (the bf16 GEMM kernels' ISA)";
  struct Case {
    Dims q, k, v;
    std::string attrs;
  };
  const Case cases[] = {
      {{1, 4, 40, 32}, {1, 4, 50, 32}, {1, 4, 50, 24}, ""},
      {{2, 4, 33, 64}, {2, 2, 33, 64}, {2, 2, 33, 40}, "is_causal = 1"}, // GQA, causal
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(dimsText(c.q) + " " + c.attrs);
    std::ostringstream g;
    g << "graph @g(%q: f32" << dimsText(c.q) << ", %k: f32" << dimsText(c.k) << ", %v: f32"
      << dimsText(c.v) << ") {\n  %y = Attention(%q, %k, %v)"
      << (c.attrs.empty() ? "" : " {" + c.attrs + "}") << "\n  return %y\n}\n";
    Model m = parseModel(g.str());
    inferShapes(*m.graph);
    std::mt19937 rng(9);
    std::vector<RValue> in;
    for (const Dims& d : {c.q, c.k, c.v}) in.push_back(RValue::of(randomTensor(d, rng, false)));
    const auto want = interpret(*m.graph, in);
    const auto got = runBf16(*m.graph, in);
    auto diff = compareValues(want[0], got[0], Tolerance{2e-2, 2e-2});
    EXPECT_FALSE(diff) << *diff;
  }
}

// A depthwise convolution is a GEMM of one row and 9 values of k per group: under bf16 the cost
// model keeps it on the depthwise kernel (the AMX tile computes 32 x 32 of which 1 x 9 count;
// taking it made mobilenet_v2 2.5x slower than f32 on an AMX machine).
// Values between bf16 convolutions are stored as bf16 where the tile writes bf16 (AMX:
// KernelDesc::bf16Io; elsewhere none qualifies and the test says so): a bottleneck's two inner
// activations, the block input (a graph input) and output staying f32. Within bf16's rounding of
// the interpreter's f32 results, and the tasks say which operands are bf16.
TEST(JitBf16, ActivationsBetweenConvolutionsAreStoredAsBf16) {
  if (!haveBf16()) GTEST_SKIP() << "this CPU lacks avx512bf16 (the bf16 GEMM kernels' ISA)";
  const kernels::KernelDesc* kd =
      kernels::bestKernel(kernels::KernelOp::GemmBf16, kernels::bestIsa());
  std::mt19937 rng(11);
  std::ostringstream g;
  g << "graph @g(%x: f32[1,32,14,14]) {\n"
    << constText("w1", {48, 32, 1, 1}, rng, false) << constText("w2", {48, 48, 3, 3}, rng, false)
    << constText("w3", {32, 48, 1, 1}, rng, false)
    << "  %a = Conv(%x, %w1)\n  %ra = Relu(%a)\n"
       "  %b = Conv(%ra, %w2) {pads = [1, 1, 1, 1]}\n  %rb = Relu(%b)\n"
       "  %c = Conv(%rb, %w3)\n  %y = Add(%c, %x)\n  return %y\n}\n";
  Model m = parseModel(g.str());
  inferShapes(*m.graph);
  PassManager<Model> pm;
  for (auto& p : optPipeline(2)) pm.add(std::move(p));
  pm.run(m);
  std::vector<RValue> in = {RValue::of(randomTensor({1, 32, 14, 14}, rng, false))};
  runtime::JitExecutable exe(*m.graph, bf16Options());
  const auto got = exe.run(in);
  std::string schedules;
  for (const auto& t : exe.tasks()) schedules += t.schedule + "\n";
  if (kd->bf16Io) {
    EXPECT_NE(schedules.find("bf16_activations = \"out \""), std::string::npos) << schedules;
    EXPECT_NE(schedules.find("bf16_activations = \"in out \""), std::string::npos) << schedules;
    EXPECT_NE(schedules.find("bf16_activations = \"in \""), std::string::npos) << schedules;
  } else {
    EXPECT_EQ(schedules.find("bf16_activations"), std::string::npos) << schedules;
    std::printf("[ note     ] %s does not store bf16 (no AMX): activations stay f32\n", kd->name);
  }
  const auto want = interpret(*m.graph, in);
  double peak = 0;
  for (int64_t i = 0; i < want[0].tensor.numel(); ++i)
    peak = std::max(peak, std::fabs(double(want[0].tensor.data<float>()[i])));
  auto diff = compareValues(want[0], got[0], Tolerance{3e-2, std::max(3e-2, 4e-3 * peak)});
  EXPECT_FALSE(diff) << *diff;
}

} // namespace
} // namespace aicc
