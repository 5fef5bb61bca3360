// The JIT's runtime micro-kernel lowerings (LowerOptions::runtimeKernels): NCHW convolutions with
// weights packed at compile time (grouped, depthwise with multipliers, 1-D, strided, dilated,
// padded, fused Relu/Clip), packed MatMul/Gemm (batched, transB, bias rows, fused clamp) and
// Attention (masks of both kinds and broadcast shapes, causal, grouped-query, Sq != Skv, 3-D
// operands, past / present key and value, softcap, the scores output, padding lengths and short
// masks). Each
// graph runs through runtime::runJit and the interpreter; the node must be compiled (no fallback)
// and match at rtol 1e-4 / atol 1e-5.
#include "ir/parser.h"
#include "jit_check.h"
#include "kernels/conv_nchwc.h"
#include "kernels/registry.h"
#include "passes/pass_manager.h"
#include "passes/pipelines.h"
#include "passes/shape_inference.h"
#include "runtime/tune.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <random>
#include <sstream>

namespace aicc {
namespace {

// "%name = const f32[dims] [random values in [-scale, scale]]"
std::string constText(const std::string& name, const Dims& d, std::mt19937& rng, double scale = 1) {
  std::uniform_real_distribution<double> u(-scale, scale);
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  std::ostringstream s;
  s << "  %" << name << " = const f32" << dimsText(d) << " [";
  for (int64_t i = 0; i < n; ++i) s << (i ? ", " : "") << u(rng);
  s << "]\n";
  return s.str();
}

Tensor randomTensor(DType t, const Dims& d, std::mt19937& rng) {
  Tensor x(t, d);
  std::uniform_real_distribution<double> u(-2, 2);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.setF64(i, t == DType::Bool ? double(rng() % 4 != 0) : u(rng));
  return x;
}

// Parses `text`, optionally runs -O2 (fusion), then compares the JIT with the interpreter; some
// task's schedule must contain `expect` (which kernel ran).
void check(const std::string& text, bool optimize, const std::string& what,
           const std::string& expect) {
  SCOPED_TRACE(what);
  Model m = parseModel(text);
  inferShapes(*m.graph);
  if (optimize) {
    PassManager<Model> pm;
    for (auto& p : optPipeline(2)) pm.add(std::move(p));
    pm.run(m);
  }
  std::mt19937 rng(11);
  std::vector<RValue> in;
  for (const Value* v : m.graph->inputs)
    in.push_back(RValue::of(randomTensor(v->type.dtype, *toDims(*v->type.shape), rng)));
  expectJitMatches(m, in, {1e-4, 1e-5}, expect);
}

struct ConvCase {
  Dims x, w;
  std::string attrs, act; // act: "", "Relu", "Clip"
  bool bias;
  const char* expect;
};

// c as a graph of one `op` (Conv or ConvTranspose: constant weights, a bias of `outChannels`
// values, the activation after it), checked by check().
void checkConv(const std::string& op, const ConvCase& c, int64_t outChannels, unsigned seed) {
  std::mt19937 rng(seed);
  std::string xs = dimsText(c.x);
  std::ostringstream g;
  g << "graph @g(%x: f32" << xs << ") {\n" << constText("w", c.w, rng);
  if (c.bias) g << constText("b", {outChannels}, rng);
  g << "  %c = " << op << "(%x, %w" << (c.bias ? ", %b" : "") << ")"
    << (c.attrs.empty() ? "" : " {" + c.attrs + "}") << "\n";
  std::string out = "%c";
  if (c.act == "Relu") g << "  %r = Relu(%c)\n", out = "%r";
  if (c.act == "Clip") {
    g << "  %lo = const f32[] [0]\n  %hi = const f32[] [0.75]\n  %r = Clip(%c, %lo, %hi)\n";
    out = "%r";
  }
  g << "  return " << out << "\n}\n";
  check(g.str(), true, op + " x" + xs + " w" + dimsText(c.w) + " " + c.attrs + " " + c.act,
        c.expect);
}

TEST(JitRuntimeKernels, ConvolutionsMatchTheInterpreter) {
  const ConvCase cases[] = {
      {{1, 8, 9, 11},
       {16, 8, 3, 3},
       "pads = [1, 1, 1, 1]",
       "Relu",
       true,
       "weights packed at compile time"},
      {{2, 6, 10, 10}, {12, 6, 1, 1}, "", "Clip", true, "fused_clamp = 1"}, // pointwise, batch 2
      {{1, 5, 13, 12},
       {7, 5, 5, 5},
       "strides = [2, 2], pads = [2, 1, 2, 1]",
       "",
       false,
       "weights packed at compile time"},
      {{1, 4, 9, 9},
       {6, 4, 3, 3},
       "dilations = [2, 2], pads = [2, 2, 2, 2]",
       "Relu",
       false,
       "weights packed at compile time"},
      {{1, 8, 8, 8},
       {8, 2, 3, 3},
       "group = 4, pads = [1, 1, 1, 1]",
       "",
       true,
       "weights packed at compile time"}, // grouped
      {{1, 6, 14, 15},
       {6, 1, 3, 3},
       "group = 6, strides = [2, 2], pads = [1, 1, 1, 1]",
       "Clip",
       true,
       "dwconv_nchw"}, // depthwise
      {{1, 4, 11, 11},
       {8, 1, 5, 5},
       "group = 4, pads = [2, 2, 2, 2]",
       "Relu",
       true,
       "dwconv_nchw"}, // mult 2
      {{2, 3, 17}, {5, 3, 3}, "pads = [1, 1]", "", true, "weights packed at compile time"}, // 1-D
      {{1, 3, 16},
       {3, 1, 5},
       "group = 3, strides = [2], pads = [2, 2]",
       "",
       false,
       "dwconv_nchw"}, // 1-D dw
  };
  for (const ConvCase& c : cases) checkConv("Conv", c, c.w[0], 7);
}

// ConvTranspose with constant weights as a GEMM (the weights transposed and packed at compile
// time) and a col2im (loop/lower_conv.cpp convTransposeGemm): a 2x2 stride-2 upsampling with a
// bias and a fused Relu, groups with uneven strides, pads, dilations and output_padding
// (overlapping and skipped output pixels), 1-D, auto_pad SAME and output_shape.
TEST(JitRuntimeKernels, ConvTransposeAsGemmMatchesTheInterpreter) {
  const ConvCase cases[] = {
      {{1, 24, 10, 10}, {24, 24, 2, 2}, "strides = [2, 2]", "Relu", true, "then col2im"},
      {{2, 4, 5, 4},
       {4, 3, 3, 2},
       "group = 2, strides = [2, 3], pads = [1, 0, 0, 1], dilations = [1, 2], output_padding = "
       "[1, 0]",
       "",
       true,
       "then col2im"},
      {{2, 3, 7}, {3, 5, 4}, "strides = [3], pads = [1, 2]", "Clip", false, "then col2im"},
      {{1, 8, 6, 7},
       {8, 4, 3, 3},
       "auto_pad = \"SAME_UPPER\", strides = [2, 2]",
       "",
       true,
       "then col2im"},
      {{1, 5, 4, 4},
       {5, 6, 3, 3},
       "strides = [2, 2], output_shape = [10, 9]",
       "Relu",
       false,
       "then col2im"},
  };
  for (const ConvCase& c : cases) {
    const int64_t group = c.attrs.find("group = 2") != std::string::npos ? 2 : 1;
    checkConv("ConvTranspose", c, c.w[1] * group, 9);
  }
}

// A whole region on NCHW16c (passes/assign_layout.h), batch 2: an RGB stem read as NCHW planes,
// MaxPool, a 3x3 and a depthwise convolution, squeeze-excite (blocked mean, [N, C, 1, 1] gate),
// a pointwise convolution, AveragePool, then a 3x3 convolution on a 7x7 map (two rows to a tile).
TEST(JitRuntimeKernels, BlockedLayoutRegionMatchesTheInterpreter) {
  if (!kernels::bestKernel(kernels::KernelOp::ConvNchw16c, kernels::bestIsa()))
    GTEST_SKIP() << "this CPU has no blocked convolution kernel (AVX-512): NCHW16c not tested";
  std::mt19937 rng(5);
  const std::string text =
      // Weights ~ 1 / sqrt(fan-in), so activations stay near 1 through the chain.
      "graph @g(%x: f32[2,3,56,56]) {\n" + constText("w0", {32, 3, 3, 3}, rng, 0.3) +
      constText("w1", {64, 32, 3, 3}, rng, 0.1) + constText("wd", {64, 1, 3, 3}, rng, 0.5) +
      constText("f1", {16, 64, 1, 1}, rng, 0.2) + constText("f2", {64, 16, 1, 1}, rng, 0.4) +
      constText("w3", {48, 64, 1, 1}, rng, 0.2) + constText("w7", {64, 48, 3, 3}, rng, 0.1) +
      "  %s = Conv(%x, %w0) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}\n"
      "  %r = Relu(%s)\n"
      "  %m = MaxPool(%r) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}\n"
      "  %c1 = Conv(%m, %w1) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]}\n"
      "  %d = Conv(%c1, %wd) {group = 64, kernel_shape = [3, 3], pads = [1, 1, 1, 1]}\n"
      "  %p = GlobalAveragePool(%d)\n"
      "  %q1 = Conv(%p, %f1) {kernel_shape = [1, 1]}\n"
      "  %q2 = Relu(%q1)\n"
      "  %q3 = Conv(%q2, %f2) {kernel_shape = [1, 1]}\n"
      "  %g = Sigmoid(%q3)\n"
      "  %e = Mul(%d, %g)\n"
      "  %c3 = Conv(%e, %w3) {kernel_shape = [1, 1]}\n"
      "  %a = AveragePool(%c3) {kernel_shape = [2, 2], strides = [2, 2]}\n"
      "  %y = Conv(%a, %w7) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]}\n"
      "  return %y\n}\n";
  Model m = parseModel(text);
  inferShapes(*m.graph);
  GraphPassOptions go;
  go.layoutBlock = kernels::kNchwcBlock;
  PassManager<Model> pm;
  for (auto& p : optPipeline(2, go)) pm.add(std::move(p));
  pm.run(m);
  const std::string ir = printModel(m);
  for (const char* op : {"aicc.ConvNchwc(%x", "MaxPool(%", "ReduceMean(%", "AveragePool(%"})
    EXPECT_NE(ir.find(op), std::string::npos) << op << " not in\n" << ir;
  std::vector<RValue> in = {RValue::of(randomTensor(DType::F32, {2, 3, 56, 56}, rng))};
  expectJitMatches(m, in, {1e-4, 1e-5}, "layout = \"nchw16c\"");
}

TEST(JitRuntimeKernels, PackedMatMulAndGemmMatchTheInterpreter) {
  std::mt19937 rng(9);
  check("graph @g(%a: f32[2,3,37,64]) {\n" + constText("w", {64, 45}, rng) +
            "  %y = MatMul(%a, %w)\n  return %y\n}\n",
        true, "batched MatMul, constant B", "B packed at compile time");
  check("graph @g(%a: f32[5,70]) {\n" + constText("w", {33, 70}, rng) + constText("c", {33}, rng) +
            "  %y = Gemm(%a, %w, %c) {transB = 1}\n  %r = Relu(%y)\n  return %r\n}\n",
        true, "Gemm transB + bias + Relu", "fused_clamp = 1");
  check("graph @g(%a: f32[3,17]) {\n" + constText("w", {17, 9}, rng) + constText("c", {3, 9}, rng) +
            "  %y = Gemm(%a, %w, %c) {alpha = 0.5, beta = 2.0}\n  return %y\n}\n",
        true, "Gemm alpha/beta, full C (unpacked path)", "packB at call");
}

TEST(JitRuntimeKernels, AttentionMatchesTheInterpreter) {
  struct Case {
    Dims q, k, v, mask;
    DType maskType;
    std::string attrs;
  };
  const Case cases[] = {
      {{1, 4, 16, 8}, {1, 4, 16, 8}, {1, 4, 16, 8}, {}, DType::F32, ""},
      {{2, 4, 10, 8}, {2, 2, 12, 8}, {2, 2, 12, 6}, {}, DType::F32, "scale = 0.3"}, // GQA
      {{1, 2, 9, 16}, {1, 2, 9, 16}, {1, 2, 9, 16}, {}, DType::F32, "is_causal = 1"},
      {{2, 3, 7, 8}, {2, 3, 11, 8}, {2, 3, 11, 8}, {2, 1, 7, 11}, DType::F32, ""},
      {{1, 2, 6, 4}, {1, 2, 6, 4}, {1, 2, 6, 4}, {6}, DType::F32, ""},
      {{1, 2, 5, 4}, {1, 2, 8, 4}, {1, 2, 8, 4}, {1, 2, 5, 8}, DType::Bool, ""},
  };
  for (const Case& c : cases) {
    std::ostringstream g;
    g << "graph @g(%q: f32" << dimsText(c.q) << ", %k: f32" << dimsText(c.k) << ", %v: f32"
      << dimsText(c.v);
    if (!c.mask.empty())
      g << ", %m: " << (c.maskType == DType::Bool ? "bool" : "f32") << dimsText(c.mask);
    g << ") {\n  %y = Attention(%q, %k, %v" << (c.mask.empty() ? "" : ", %m") << ")"
      << (c.attrs.empty() ? "" : " {" + c.attrs + "}") << "\n  return %y\n}\n";
    check(g.str(), true, "Attention q" + dimsText(c.q) + " mask" + dimsText(c.mask) + " " + c.attrs,
          "kind = \"attention\"");
  }
}

// The forms of opset 23's Attention beyond the plain 4-D one: 3-D operands read in place (with
// softcap), past_key / past_value concatenated into present outputs with a causal mask offset by
// the past length (GQA, a bool mask over the total length), and the qk_matmul_output at each of
// its four stages.
TEST(JitRuntimeKernels, AttentionPastPresentSoftcapAndScores) {
  check("graph @g(%q: f32[2,5,32], %k: f32[2,7,16], %v: f32[2,7,12]) {\n"
        "  %y = Attention(%q, %k, %v) {q_num_heads = 4, kv_num_heads = 2, softcap = 2.0}\n"
        "  return %y\n}\n",
        true, "3-D, GQA, softcap", "kind = \"attention\"");
  check("graph @g(%q: f32[1,4,3,8], %k: f32[1,2,3,8], %v: f32[1,2,3,6], %pk: f32[1,2,5,8], "
        "%pv: f32[1,2,5,6], %m: bool[3,8]) {\n"
        "  %y, %ok, %ov = Attention(%q, %k, %v, %m, %pk, %pv) {is_causal = 1}\n"
        "  return %y, %ok, %ov\n}\n",
        true, "past and present, causal, bool mask", "present = ");
  check("graph @g(%q: f32[2,3,16], %k: f32[2,4,8], %v: f32[2,4,8], %pk: f32[2,1,2,8], "
        "%pv: f32[2,1,2,8]) {\n"
        "  %y, %ok, %ov = Attention(%q, %k, %v, _, %pk, %pv) {q_num_heads = 2, kv_num_heads = 1}\n"
        "  return %y, %ok, %ov\n}\n",
        true, "3-D with past", "present = ");
  for (const char* mode : {"0", "1", "2", "3"})
    check(std::string("graph @g(%q: f32[1,2,4,8], %k: f32[1,2,6,8], %v: f32[1,2,6,8], "
                      "%m: f32[4,6]) {\n  %y, _, _, %s = Attention(%q, %k, %v, %m) "
                      "{softcap = 1.5, qk_matmul_output_mode = ") +
              mode + "}\n  return %y, %s\n}\n",
          true, std::string("qk_matmul_output mode ") + mode, "kind = \"attention\"");
}

// Padding lengths (nonpad_kv_seqlen: the keys past each batch's length disallowed, causally
// from length - Sq on) and masks shorter than the keys, through the bias built before the
// kernel: a bool mask per head, an f32 one broadcast, causal, and a batch with no keys (rows of
// zeros, as the reference).
TEST(JitRuntimeKernels, AttentionPaddingLengthsAndShortMasks) {
  struct Case {
    const char* mask; // "" none
    const char* attrs;
    std::vector<int64_t> lens;
  };
  const Case cases[] = {{"bool[2,3,4,4]", "", {4, 6}},
                        {"f32[4,5]", " {is_causal = 1}", {5, 6}},
                        {"", " {is_causal = 1}", {0, 3}},
                        {"f32[1,1,4,3]", "", {}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.mask) + c.attrs);
    const bool mask = c.mask[0] != 0, padded = !c.lens.empty();
    std::string g = "graph @g(%q: f32[2,3,4,8], %k: f32[2,3,6,8], %v: f32[2,3,6,10]";
    if (mask) g += std::string(", %m: ") + c.mask;
    if (padded) g += ", %n: i64[2]";
    g += ") {\n  %y = Attention(%q, %k, %v, " + std::string(mask ? "%m" : "_") +
         (padded ? ", _, _, %n" : "") + ")" + c.attrs + "\n  return %y\n}\n";
    Model m = parseModel(g);
    inferShapes(*m.graph);
    std::mt19937 rng(5);
    std::vector<RValue> in;
    for (size_t i = 0; i < m.graph->inputs.size() - (padded ? 1 : 0); ++i) {
      const Value* v = m.graph->inputs[i];
      in.push_back(RValue::of(randomTensor(v->type.dtype, *toDims(*v->type.shape), rng)));
    }
    if (padded) in.push_back(RValue::of(tensorOfInts(DType::I64, c.lens)));
    expectJitMatches(m, in, {1e-4, 1e-5}, "kind = \"attention\"");
  }
}

// RotaryEmbedding (a loop nest, bit-exact: the reference rounds each product and sum to f32):
// 4-D and 3-D inputs, interleaved or halves, a rotary span shorter than the head, caches by
// position_ids or per token; a position past the cache is an error.
TEST(JitRuntimeKernels, RotaryEmbeddingMatchesTheInterpreter) {
  const char* graphs[] = {
      "graph @g(%x: f32[2,3,5,8], %c: f32[2,5,4], %s: f32[2,5,4]) {\n"
      "  %y = RotaryEmbedding(%x, %c, %s)\n  return %y\n}\n",
      "graph @g(%x: f32[2,3,5,8], %c: f32[2,5,4], %s: f32[2,5,4]) {\n"
      "  %y = RotaryEmbedding(%x, %c, %s) {interleaved = 1}\n  return %y\n}\n",
      "graph @g(%x: f32[2,3,5,8], %c: f32[2,5,2], %s: f32[2,5,2]) {\n"
      "  %y = RotaryEmbedding(%x, %c, %s) {rotary_embedding_dim = 4}\n  return %y\n}\n",
      "graph @g(%x: f32[2,5,24], %c: f32[9,4], %s: f32[9,4], %p: i64[2,5]) {\n"
      "  %y = RotaryEmbedding(%x, %c, %s, %p) {num_heads = 3}\n  return %y\n}\n",
      "graph @g(%x: f32[2,5,24], %c: f32[9,2], %s: f32[9,2], %p: i64[2,5]) {\n  %y = "
      "RotaryEmbedding(%x, %c, %s, %p) {num_heads = 3, interleaved = 1, rotary_embedding_dim = 4}"
      "\n  return %y\n}\n"};
  for (const char* g : graphs) {
    SCOPED_TRACE(g);
    Model m = parseModel(g);
    inferShapes(*m.graph);
    std::mt19937 rng(12);
    std::uniform_real_distribution<double> u(-2, 2);
    std::vector<RValue> in;
    for (const Value* v : m.graph->inputs) {
      Tensor t(v->type.dtype, *toDims(*v->type.shape));
      for (int64_t i = 0; i < t.numel(); ++i)
        t.setF64(i, v->type.dtype == DType::I64 ? double(rng() % 9) : u(rng));
      in.push_back(RValue::of(t));
    }
    runtime::JitExecutable exe(*m.graph);
    const auto got = exe.run(in);
    EXPECT_EQ(exe.stats().fallback, 0)
        << (exe.stats().fallbackReasons.empty() ? "" : exe.stats().fallbackReasons[0]);
    auto diff = compareValues(interpret(*m.graph, in)[0], got[0], {0, 0});
    EXPECT_FALSE(diff) << *diff;
    if (in.size() == 4) {
      in[3].tensor.setI64(3, 9); // past the 9 cache rows
      EXPECT_THROW(exe.run(in), Error);
    }
  }
}

} // namespace
} // namespace aicc

namespace aicc {
namespace {

// An If with static results is a control-flow task: both branches compiled, reading the outer
// graph's values; each condition value runs its branch. Split lowers as one Func of copies.
TEST(JitRuntimeKernels, CompiledIfAndSplitMatchTheInterpreter) {
  Model m = parseModel(
      "graph @g(%c: bool[], %x: f32[2,5]) {\n"
      "  %two = const f32[] [2]\n"
      "  %s = const i64[2] [2, 3]\n"
      "  %y = If(%c) {\n"
      "    then_branch = graph @t() {\n      %r = Relu(%x) : f32[2,5]\n"
      "      %m = Mul(%r, %two) : f32[2,5]\n      return %m\n    },\n"
      "    else_branch = graph @e() {\n      %n = Neg(%x) : f32[2,5]\n      return %n\n    }\n"
      "  } : f32[2,5]\n"
      "  %a, %b = Split(%y, %s) {axis = 1} : f32[2,2], f32[2,3]\n"
      "  return %a, %b\n}\n");
  inferShapes(*m.graph);
  runtime::JitExecutable exe(*m.graph);
  EXPECT_EQ(exe.stats().fallback, 0) << exe.stats().fallbackReasons.at(0);
  bool controlFlow = false;
  for (const auto& t : exe.tasks()) controlFlow |= t.engine == "control-flow";
  EXPECT_TRUE(controlFlow);
  std::mt19937 rng(5);
  for (bool cond : {true, false}) {
    Tensor c(DType::Bool, {});
    c.setF64(0, cond ? 1 : 0);
    std::vector<RValue> in = {RValue::of(c), RValue::of(randomTensor(DType::F32, {2, 5}, rng))};
    auto want = interpret(*m.graph, in);
    auto got = exe.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      auto diff = compareValues(want[k], got[k], {0, 0});
      EXPECT_FALSE(diff) << "cond " << cond << " output " << k << ": " << *diff;
    }
  }
}

// The engines pick each node's candidate with the cost model (backend/op_select.h) and record
// why in the schedule; a pin overrides it, and both choices compute the same values.
TEST(JitRuntimeKernels, OperatorSelectionByCostModelAndPins) {
  std::mt19937 rng(5);
  Model m = parseModel("graph @g(%a: f32[1,96]) {\n" + constText("w", {200, 96}, rng) +
                       "  %y = Gemm(%a, %w) {transB = 1} : f32[1,200] loc(\"fc\")\n"
                       "  return %y\n}\n");
  std::vector<RValue> in = {RValue::of(randomTensor(DType::F32, {1, 96}, rng))};
  auto expected = interpret(*m.graph, in);
  auto schedule = [&](const runtime::JitRunOptions& o) {
    runtime::JitExecutable exe(*m.graph, o);
    auto got = exe.run(in);
    auto diff = compareValues(expected[0], got[0], {1e-5, 1e-6});
    EXPECT_FALSE(diff) << *diff;
    return exe.tasks().at(0).schedule;
  };
  std::string byCost = schedule({});
  EXPECT_NE(byCost.find("selection = \"cost model"), std::string::npos) << byCost;
  EXPECT_NE(byCost.find("candidate = \"ukernel:"), std::string::npos) << byCost; // transB nest: slow
  runtime::JitRunOptions pinned;
  pinned.lower.chooseCandidate = backend::candidateChooser(nativeTarget(), {{"fc", "loop"}}, true);
  std::string byPin = schedule(pinned);
  EXPECT_NE(byPin.find("candidate = \"loop\""), std::string::npos) << byPin;
  EXPECT_NE(byPin.find("selection = \"pinned"), std::string::npos) << byPin;
}

// aicc tune's pieces: the tuner measures the node's candidates into a cache that saves and loads
// back, and a record's choice (here forced to a candidate the cost model does not pick) is what
// the chooser uses, with "measured" as the reason; a malformed cache is a clear error.
TEST(JitRuntimeKernels, TuningCacheChoiceIsUsed) {
  std::mt19937 rng(6);
  Model m = parseModel("graph @g(%a: f32[1,96]) {\n" + constText("w", {200, 96}, rng) +
                       "  %y = Gemm(%a, %w) {transB = 1} : f32[1,200] loc(\"fc\")\n"
                       "  return %y\n}\n");
  const Node& fc = *m.graph->nodes.at(0);
  backend::TuningCache cache;
  runtime::TuneOptions o;
  o.reps = 2;
  runtime::TuneSummary sum = runtime::tuneGraph(*m.graph, nativeTarget(), cache, o);
  EXPECT_EQ(sum.measured, 1);
  const backend::TuningRecord* rec = cache.find(fc);
  ASSERT_TRUE(rec);
  EXPECT_GE(rec->timings.size(), 2u); // loop and at least one micro-kernel
  for (const auto& t : rec->timings) EXPECT_GT(t.measuredMs, 0.0) << t.candidate;
  // Force the record to the loop nest (the cost model prefers a micro-kernel here).
  cache.records.begin()->second.chosen = "loop";
  const std::string path = ::testing::TempDir() + "aicc_tuning_test.cache";
  cache.save(path);
  auto loaded = std::make_shared<backend::TuningCache>(backend::TuningCache::load(path));
  EXPECT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->target, formatTarget(nativeTarget()));
  runtime::JitRunOptions tuned;
  tuned.lower.chooseCandidate = backend::candidateChooser(nativeTarget(), {}, true, loaded);
  std::vector<RValue> in = {RValue::of(randomTensor(DType::F32, {1, 96}, rng))};
  auto expected = interpret(*m.graph, in);
  runtime::JitExecutable exe(*m.graph, tuned);
  auto got = exe.run(in);
  auto diff = compareValues(expected[0], got[0], {1e-5, 1e-6});
  EXPECT_FALSE(diff) << *diff;
  const std::string sched = exe.tasks().at(0).schedule;
  EXPECT_NE(sched.find("candidate = \"loop\""), std::string::npos) << sched;
  EXPECT_NE(sched.find("selection = \"measured"), std::string::npos) << sched;
  {
    std::ofstream bad(path);
    bad << "aicc-tuning-cache 1\nConv(x)\tloop\tloop=abc\n";
  }
  try {
    backend::TuningCache::load(path);
    ADD_FAILURE() << "a malformed cache loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

// An If branch whose shapes do not resolve (a NonZero result) is not compiled: the JIT counts no
// fallback, lists the branch, and runs the If in the interpreter only when it takes that branch.
TEST(JitRuntimeKernels, IfBranchWithDynamicShapesIsInterpretedWhenTaken) {
  Model g = parseModel(R"(graph @g(%x: f32[4], %c: bool[]) {
  %four = const i64[1] [4]
  %y = If(%c) {
    else_branch = graph @else() {
      %n = NonZero(%x) : i64[1,?]
      %s = ReduceSum(%n) {keepdims = 0} : i64[]
      %f = Cast(%s) {to = 1} : f32[]
      %e = Expand(%f, %four) : f32[4]
      return %e
    },
    then_branch = graph @then() {
      %a = Neg(%x) : f32[4]
      return %a
    }
  } : f32[4]
  return %y
})");
  runtime::JitExecutable exe(*g.graph);
  EXPECT_EQ(exe.stats().fallback, 0);
  ASSERT_EQ(exe.stats().interpretedBranches.size(), 1u);
  EXPECT_NE(exe.stats().interpretedBranches[0].find("else_branch"), std::string::npos);
  Tensor x = Tensor::fromF32({1, 0, 2, 3}, {4});
  for (int c = 0; c < 2; ++c) {
    Tensor tc(DType::Bool, {});
    tc.setI64(0, c);
    std::vector<RValue> in = {RValue::of(x), RValue::of(tc)};
    auto diff = compareValues(interpret(*g.graph, in)[0], exe.run(in)[0], {0, 0});
    EXPECT_FALSE(diff) << "cond " << c << ": " << *diff;
  }
}

} // namespace
} // namespace aicc

namespace aicc {
namespace {

// ArgMax / ArgMin compiled: NaN ranks above every number, ties go to the first index (the last
// with select_last_index), any axis; bit-equal to the interpreter on rows built for those cases.
TEST(JitRuntimeKernels, ArgMaxArgMinMatchTheInterpreterOnNanAndTies) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x(DType::F32, {4, 5});
  const float rows[4][5] = {{1, 3, 3, -2, 0},     // tie on the maximum
                            {2, nan, 5, nan, -1}, // NaNs: max at the first NaN, min a number
                            {-4, -4, -4, -4, -4}, // all equal
                            {0, -1, 7, -1, 7}};   // ties on both ends
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) x.data<float>()[r * 5 + c] = rows[r][c];
  for (const char* op : {"ArgMax", "ArgMin"})
    for (int axis : {0, 1, -1})
      for (int last : {0, 1}) {
        const std::string text = std::string("graph @g(%x: f32[4,5]) {\n  %y = ") + op +
                                 "(%x) {axis = " + std::to_string(axis) +
                                 ", select_last_index = " + std::to_string(last) +
                                 "}\n  return %y\n}\n";
        SCOPED_TRACE(text);
        Model m = parseModel(text);
        inferShapes(*m.graph);
        std::vector<RValue> in = {RValue::of(x)};
        expectJitMatches(m, in, {0, 0}, "kind = \"reduce\"");
      }
}

} // namespace
} // namespace aicc
