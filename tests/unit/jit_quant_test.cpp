// The JIT's quantized lowerings (loop/lower_quant.cpp, lower_qlinear.cpp, lower_qconv.cpp):
// QuantizeLinear / DequantizeLinear (per tensor, per axis, u8/i8), QLinearConv through the
// int8 GEMM micro-kernels (@qconv2d_nchw_*) or the depthwise form (@qdwconv_nchw_*) (per-tensor
// and per-channel weights, u8/i8, bias, groups, depthwise, strides, pads, dilations, 1-D,
// saturating outputs, weights outside int8 after the zero point, a bias too large for the f32
// depthwise form), QLinearMatMul, com.microsoft QLinearAdd, QLinearMul and
// QLinearGlobalAveragePool. Each graph runs through the JIT and the interpreter: the node must be
// compiled (no fallback), the expected lowering must have run, and the outputs must be
// bit-identical.
#include "ir/parser.h"
#include "jit_check.h"
#include "kernels/registry.h"
#include "passes/fold_qdq.h"
#include "passes/fuse_elementwise.h"
#include "passes/shape_inference.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

namespace aicc {
namespace {

// Uniform integers of t's quantized range (u8, i8, i32 in [-lim, lim]) or floats in [-lim, lim].
Tensor randomTensor(DType t, const Dims& d, std::mt19937& rng, double lim = 4) {
  Tensor x(t, d);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (t == DType::U8)
      x.setI64(i, int64_t(rng() % 256));
    else if (t == DType::I8)
      x.setI64(i, int64_t(rng() % 256) - 128);
    else if (t == DType::I32)
      x.setI64(i, int64_t(rng() % (2 * int64_t(lim) + 1)) - int64_t(lim));
    else
      x.setF64(i, std::uniform_real_distribution<double>(-lim, lim)(rng));
  }
  return x;
}

// randomTensor for each graph input of m, in order.
std::vector<RValue> randomInputs(const Model& m, std::mt19937& rng, double lim = 4) {
  std::vector<RValue> in;
  for (const Value* v : m.graph->inputs)
    in.push_back(RValue::of(randomTensor(v->type.dtype, *toDims(*v->type.shape), rng, lim)));
  return in;
}

// "%name = const <t><dims> [values]" with random values (see randomTensor), or the given ones.
std::string constText(const std::string& name, DType t, const Dims& d, std::mt19937& rng,
                      double lim = 4, std::vector<double> vals = {}) {
  Tensor x = randomTensor(t, d, rng, lim);
  std::ostringstream s;
  s << "  %" << name << " = const " << dtypeName(t) << dimsText(d) << " [";
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = vals.empty() ? x.getF64(i) : vals[size_t(i) % vals.size()];
    s << (i ? ", " : "");
    if (isFloat(t))
      s << v;
    else
      s << int64_t(v); // integers in full (a stream writes 1.67e+07)
  }
  s << "]\n";
  return s.str();
}

// JIT vs interpreter, exactly; some task's schedule must contain `expect`.
void check(const std::string& text, const std::string& what, const std::string& expect,
           double inputLimit = 4) {
  SCOPED_TRACE(what);
  Model m = parseModel(text);
  inferShapes(*m.graph);
  std::mt19937 rng(5);
  std::vector<RValue> in;
  for (const Value* v : m.graph->inputs)
    in.push_back(
        RValue::of(randomTensor(v->type.dtype, *toDims(*v->type.shape), rng, inputLimit)));
  expectJitMatches(m, in, {0, 0}, expect);
}

// The JIT with the kernels of each of `isas` this CPU has (the others printed as skipped): no
// fallback, expect(isa) in some task's schedule, outputs bit-identical to `want`.
void expectOnEveryIsa(const Model& m, const std::vector<RValue>& in,
                      const std::vector<RValue>& want, std::initializer_list<kernels::Isa> isas,
                      const std::string& what,
                      const std::function<std::string(kernels::Isa)>& expect) {
  for (kernels::Isa isa : isas) {
    const std::string name(kernels::isaName(isa));
    if (!kernels::cpuSupports(isa)) {
      std::printf("[ skipped  ] %s on %s: this CPU lacks it\n", what.c_str(), name.c_str());
      continue;
    }
    SCOPED_TRACE(what + " on " + name);
    runtime::JitRunOptions opts;
    opts.lower.kernelIsa = isa;
    runtime::JitExecutable exe(*m.graph, opts);
    EXPECT_EQ(exe.stats().fallback, 0);
    std::string schedules;
    for (const auto& t : exe.tasks()) schedules += t.schedule + "\n";
    EXPECT_NE(schedules.find(expect(isa)), std::string::npos) << schedules;
    const auto got = exe.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      auto diff = compareValues(want[k], got[k], {0, 0});
      EXPECT_FALSE(diff) << *diff;
    }
  }
}

TEST(JitQuant, QuantizeAndDequantizeMatchExactly) {
  std::mt19937 rng(3);
  // Per tensor, u8, saturating both ends (x in [-40, 40], scale 0.1, zp 128).
  check("graph @g(%x: f32[2,3,17]) {\n  %s = const f32[] [0.1]\n  %z = const u8[] [128]\n"
        "  %y = QuantizeLinear(%x, %s, %z)\n  return %y\n}\n",
        "QuantizeLinear u8 per tensor", "quant_axis = -1", 40);
  // Per axis (1), i8; and no zero point (u8 output).
  check("graph @g(%x: f32[2,4,5,3]) {\n" + constText("s", DType::F32, {4}, rng, 0, {0.02, 0.5, 1, 0.07}) +
            constText("z", DType::I8, {4}, rng) +
            "  %y = QuantizeLinear(%x, %s, %z) {axis = 1}\n  return %y\n}\n",
        "QuantizeLinear i8 per axis", "quant_axis = 1");
  check("graph @g(%x: f32[7,9]) {\n  %s = const f32[] [0.03125]\n"
        "  %y = QuantizeLinear(%x, %s)\n  return %y\n}\n",
        "QuantizeLinear without zero point", "quant_axis = -1");
  check("graph @g(%x: i8[3,5,4]) {\n  %s = const f32[] [0.037]\n  %z = const i8[] [-7]\n"
        "  %y = DequantizeLinear(%x, %s, %z)\n  return %y\n}\n",
        "DequantizeLinear i8 per tensor", "quant_axis = -1");
  check("graph @g(%x: u8[2,3,6]) {\n" + constText("s", DType::F32, {6}, rng, 0, {0.1, 0.013, 2.5}) +
            constText("z", DType::U8, {6}, rng) +
            "  %y = DequantizeLinear(%x, %s, %z) {axis = -1}\n  return %y\n}\n",
        "DequantizeLinear u8 per axis (last)", "quant_axis = 2");
}

struct QConvCase {
  DType xt, wt;
  Dims x, w;
  bool perChannel, bias;
  std::string attrs;
  double yScale; // small: many outputs saturate
  std::string expect = "qconv2d_nchw_"; // the callee that must run
  double biasLimit = 3000;
};

std::string qconvGraph(const QConvCase& c, std::mt19937& rng) {
  const int64_t M = c.w[0];
  const Dims pc = c.perChannel ? Dims{M} : Dims{};
  std::ostringstream g;
  g << "graph @g(%x: " << dtypeName(c.xt) << dimsText(c.x) << ") {\n"
    << "  %xs = const f32[] [0.0173]\n"
    << "  %xz = const " << dtypeName(c.xt) << "[] [" << (c.xt == DType::U8 ? 121 : -5) << "]\n"
    << constText("w", c.wt, c.w, rng)
    << constText("ws", DType::F32, pc, rng, 0, {0.0041, 0.0123, 0.0007, 0.031})
    << constText("wz", c.wt, pc, rng, 0,
                 c.wt == DType::U8 ? std::vector<double>{128, 119, 140} : std::vector<double>{0, 3, -2})
    << "  %ys = const f32[] [" << c.yScale << "]\n"
    << "  %yz = const " << dtypeName(c.xt) << "[] [" << (c.xt == DType::U8 ? 130 : 4) << "]\n";
  if (c.bias && c.biasLimit > 1e6) // the limit itself, in both signs
    g << constText("b", DType::I32, {M}, rng, 0, {c.biasLimit, -c.biasLimit, 5});
  else if (c.bias)
    g << constText("b", DType::I32, {M}, rng, c.biasLimit);
  g << "  %y = QLinearConv(%x, %xs, %xz, %w, %ws, %wz, %ys, %yz" << (c.bias ? ", %b" : "") << ")"
    << (c.attrs.empty() ? "" : " {" + c.attrs + "}") << "\n  return %y\n}\n";
  return g.str();
}

TEST(JitQuant, QLinearConvMatchesExactly) {
  const DType U = DType::U8, I = DType::I8;
  const QConvCase cases[] = {
      {U, U, {1, 8, 9, 11}, {16, 8, 3, 3}, false, true, "pads = [1, 1, 1, 1]", 0.05},
      {U, I, {2, 6, 10, 10}, {12, 6, 1, 1}, true, true, "", 0.02}, // pointwise
      {U,
       U,
       {1, 5, 13, 12},
       {7, 5, 5, 5},
       true,
       false,
       "strides = [2, 2], pads = [2, 1, 2, 1]",
       0.01},
      {I,
       I,
       {1, 4, 9, 9},
       {6, 4, 3, 3},
       false,
       true,
       "dilations = [2, 2], pads = [2, 2, 2, 2]",
       0.002},
      {I,
       I,
       {1, 8, 8, 8},
       {8, 2, 3, 3},
       true,
       true,
       "group = 4, pads = [1, 1, 1, 1]",
       0.03}, // grouped
      {U,
       U,
       {1, 6, 14, 15},
       {6, 1, 3, 3},
       true,
       true,
       "group = 6, strides = [2, 2], pads = [1, 1, 1, 1]",
       0.01,
       "qdwconv_nchw_"}, // depthwise
      {I,
       U,
       {1, 4, 11, 11},
       {8, 1, 5, 5},
       false,
       false,
       "group = 4, pads = [2, 2, 2, 2]",
       0.0005,
       "qdwconv_nchw_"},                                                // depthwise, multiplier 2
      {U, I, {2, 3, 17}, {5, 3, 3}, true, true, "pads = [1, 1]", 0.03}, // 1-D
      // A bias near 2^24 keeps a depthwise convolution the int8 3x3 kernels do not take off the
      // f32 plane kernels: it runs on the integer GEMM.
      {U,
       I,
       {1, 5, 7, 9},
       {5, 1, 5, 5},
       false,
       true,
       "group = 5, pads = [2, 2, 2, 2]",
       9000,
       "qconv2d_nchw_",
       16700000},
      // Deep reduction, many channels: several row and pixel panels, K padding.
      {U, I, {1, 67, 9, 13}, {37, 67, 1, 1}, true, true, "", 0.05},
  };
  std::mt19937 rng(7);
  for (const QConvCase& c : cases)
    check(qconvGraph(c, rng),
          fmt::format("QLinearConv {} x{} {} w{} {}", dtypeName(c.xt), dimsText(c.x),
                      dtypeName(c.wt), dimsText(c.w), c.attrs),
          c.expect);
}

TEST(JitQuant, QLinearMatMulAddAndPoolMatchExactly) {
  std::mt19937 rng(13);
  check("graph @g(%a: u8[2,5,37]) {\n  %as = const f32[] [0.021]\n  %az = const u8[] [131]\n" +
            constText("b", DType::U8, {37, 19}, rng) +
            "  %bs = const f32[] [0.013]\n  %bz = const u8[] [127]\n"
            "  %ys = const f32[] [0.09]\n  %yz = const u8[] [120]\n"
            "  %y = QLinearMatMul(%a, %as, %az, %b, %bs, %bz, %ys, %yz)\n  return %y\n}\n",
        "QLinearMatMul u8 per tensor", "accumulation = \"int32\"");
  check("graph @g(%a: i8[6,40]) {\n  %as = const f32[] [0.02]\n  %az = const i8[] [3]\n" +
            constText("b", DType::I8, {40, 9}, rng) +
            constText("bs", DType::F32, {9}, rng, 0, {0.01, 0.002, 0.03}) +
            constText("bz", DType::I8, {9}, rng, 0, {0, 1, -1}) +
            "  %ys = const f32[] [0.05]\n  %yz = const i8[] [-3]\n"
            "  %y = QLinearMatMul(%a, %as, %az, %b, %bs, %bz, %ys, %yz)\n  return %y\n}\n",
        "QLinearMatMul i8 per column", "accumulation = \"int32\"");
  // A classifier: constant int8 weights -> the runtime kernel; the same with b a graph input and
  // an i8 a -> the loop nest (a u8 a takes the int8 tiles:
  // MatMulOfTwoRuntimeOperandsMatchesExactly).
  check("graph @g(%a: u8[1,300]) {\n  %as = const f32[] [0.02]\n  %az = const u8[] [7]\n" +
            constText("b", DType::I8, {300, 45}, rng) +
            constText("bs", DType::F32, {45}, rng, 0, {0.001, 0.0005, 0.002}) +
            "  %bz = const i8[] [0]\n  %ys = const f32[] [0.03]\n  %yz = const u8[] [100]\n"
            "  %y = QLinearMatMul(%a, %as, %az, %b, %bs, %bz, %ys, %yz)\n  return %y\n}\n",
        "QLinearMatMul constant int8 b", "micro_kernel = \"qmatmul_u8s8\"");
  check("graph @g(%a: i8[3,37], %b: i8[37,21]) {\n  %as = const f32[] [0.02]\n"
        "  %az = const i8[] [7]\n  %bs = const f32[] [0.004]\n  %bz = const i8[] [2]\n"
        "  %ys = const f32[] [0.03]\n  %yz = const u8[] [100]\n"
        "  %y = QLinearMatMul(%a, %as, %az, %b, %bs, %bz, %ys, %yz)\n  return %y\n}\n",
        "QLinearMatMul b at run time", "accumulation = \"int32\", kind = \"matmul\", op");
  check("graph @g(%a: u8[2,3,4,5], %b: u8[3,1,5]) {\n  %as = const f32[] [0.05]\n"
        "  %az = const u8[] [120]\n  %bs = const f32[] [0.11]\n  %bz = const u8[] [131]\n"
        "  %cs = const f32[] [0.04]\n  %cz = const u8[] [128]\n"
        "  %c = com.microsoft.QLinearAdd(%a, %as, %az, %b, %bs, %bz, %cs, %cz)\n"
        "  return %c\n}\n",
        "QLinearAdd u8 broadcast", "kind = \"quant\"");
  check("graph @g(%a: i8[4,6], %b: i8[4,6]) {\n  %as = const f32[] [0.5]\n"
        "  %az = const i8[] [0]\n  %bs = const f32[] [0.25]\n  %bz = const i8[] [10]\n"
        "  %cs = const f32[] [0.3]\n  %cz = const i8[] [-2]\n"
        "  %c = com.microsoft.QLinearAdd(%a, %as, %az, %b, %bs, %bz, %cs, %cz)\n"
        "  return %c\n}\n",
        "QLinearAdd i8 saturating", "kind = \"quant\"");
  check("graph @g(%a: u8[2,3,4,5], %b: u8[3,1,5]) {\n  %as = const f32[] [0.05]\n"
        "  %az = const u8[] [120]\n  %bs = const f32[] [0.11]\n  %bz = const u8[] [131]\n"
        "  %cs = const f32[] [0.04]\n  %cz = const u8[] [128]\n"
        "  %c = com.microsoft.QLinearMul(%a, %as, %az, %b, %bs, %bz, %cs, %cz)\n"
        "  return %c\n}\n",
        "QLinearMul u8 broadcast, saturating", "kind = \"quant\"");
  check("graph @g(%a: i8[4,6], %b: i8[4,6]) {\n  %as = const f32[] [0.5]\n"
        "  %az = const i8[] [3]\n  %bs = const f32[] [0.25]\n  %bz = const i8[] [-10]\n"
        "  %cs = const f32[] [7.3]\n  %cz = const i8[] [-2]\n"
        "  %c = com.microsoft.QLinearMul(%a, %as, %az, %b, %bs, %bz, %cs, %cz)\n"
        "  return %c\n}\n",
        "QLinearMul i8", "kind = \"quant\"");
  for (const char* last : {"0", "1"})
    check(std::string("graph @g(%x: u8[2,5,7,6]) {\n  %xs = const f32[] [0.03]\n"
                      "  %xz = const u8[] [125]\n  %ys = const f32[] [0.011]\n"
                      "  %yz = const u8[] [131]\n"
                      "  %y = com.microsoft.QLinearGlobalAveragePool(%x, %xs, %xz, %ys, %yz) "
                      "{channels_last = ") +
              last + "}\n  return %y\n}\n",
          std::string("QLinearGlobalAveragePool channels_last=") + last,
          std::string(last) == "1" ? "nhwc" : "nchw");
}

// MatMulInteger on the loop nest: exact int32 sums of (a - a_zero_point) * (b - b_zero_point),
// zero points scalar or per row of A / per column of B, batched and broadcast, u8 and i8 mixed.
TEST(JitQuant, MatMulIntegerMatchesExactly) {
  std::mt19937 rng(9);
  check("graph @g(%a: u8[5,37], %b: i8[37,11]) {\n  %az = const u8[] [131]\n"
        "  %bz = const i8[] [-3]\n  %y = MatMulInteger(%a, %b, %az, %bz)\n  return %y\n}\n",
        "MatMulInteger u8 x i8, scalar zero points", "kind = \"matmul\"", 255);
  check("graph @g(%a: i8[2,3,4,19], %b: u8[19,6]) {\n" + constText("az", DType::I8, {4}, rng, 100) +
            constText("bz", DType::U8, {6}, rng, 255) +
            "  %y = MatMulInteger(%a, %b, %az, %bz)\n  return %y\n}\n",
        "MatMulInteger batched, per-row and per-column zero points", "kind = \"matmul\"", 127);
  check("graph @g(%a: u8[3,8], %b: u8[8,5]) {\n  %y = MatMulInteger(%a, %b)\n  return %y\n}\n",
        "MatMulInteger without zero points", "kind = \"matmul\"", 255);
  // A constant B: the f32 GEMM kernel over K blocks of 256 (K = 600: two full blocks and a
  // partial one), a's zero point a run-time scalar as quantize_dynamic writes it; the extreme
  // (a - az) * (b - bz) = 255 * -255 in every product of the last case.
  check("graph @g(%a: u8[2,5,600], %az: u8[]) {\n" +
            constText("b", DType::I8, {600, 37}, rng, 127) +
            constText("bz", DType::I8, {37}, rng, 20) +
            "  %y = MatMulInteger(%a, %b, %az, %bz)\n  return %y\n}\n",
        "MatMulInteger constant B on the f32 GEMM", "int32 sums", 255);
  Model m = parseModel("graph @g(%a: u8[4,520]) {\n" +
                       constText("b", DType::I8, {520, 9}, rng, 0, {-128}) +
                       "  %bz = const i8[] [127]\n  %y = MatMulInteger(%a, %b, %bz, %bz)\n"
                       "  return %y\n}\n");
  inferShapes(*m.graph);
  m.graph->nodes.back()->inputs[2] = nullptr; // a's zero point 0
  Tensor a(DType::U8, {4, 520});
  for (int64_t i = 0; i < a.numel(); ++i) a.setI64(i, 255);
  expectJitMatches(m, {RValue::of(a)}, {0, 0}, "int32 sums");
  // The f32 kernel's blocks too (what a CPU without bf16 kernels runs): lowered for AVX2.
  if (!kernels::cpuSupports(kernels::Isa::Avx2)) {
    std::printf("[ skipped  ] MatMulInteger on the f32 AVX2 kernel: this CPU lacks avx2\n");
    return;
  }
  runtime::JitRunOptions opts;
  opts.lower.kernelIsa = kernels::Isa::Avx2;
  runtime::JitExecutable exe(*m.graph, opts);
  bool f32 = false;
  for (const auto& t : exe.tasks())
    f32 |= t.schedule.find("(f32 GEMMs over K blocks") != std::string::npos;
  EXPECT_TRUE(f32);
  const auto got = exe.run({RValue::of(a)});
  const auto want = interpret(*m.graph, {RValue::of(a)});
  auto diff = compareValues(want[0], got[0], {0, 0});
  EXPECT_FALSE(diff) << *diff;
}

// ConvInteger on the direct loop nest: exact int32 sums of (x - x_zero_point) * (w - w_zero_point)
// (w's per output channel), padding adding nothing, strided and grouped; u8 and i8 mixed.
// QLinearConv whose weights are run-time values (lower_qconv.cpp lowerQConvLoop: ConvInteger's
// int32 loop nest, then the reference's float requantization): per-channel weight zero points and
// scales, a run-time bias, groups, pads and strides, u8 and i8; then every scale and zero point a
// run-time value as well (computed from the graph's inputs), 1-D and dilated.
TEST(JitQuant, QLinearConvOfRunTimeWeightsMatchesExactly) {
  std::mt19937 rng(12);
  check("graph @g(%x: u8[2,4,9,8], %w: i8[6,2,3,3], %wz: i8[6], %b: i32[6]) {\n"
        "  %xs = const f32[] [0.02]\n  %xz = const u8[] [131]\n" +
            constText("ws", DType::F32, {6}, rng, 1, {0.01, 0.004, 0.02, 0.0007, 0.013, 0.009}) +
            "  %ys = const f32[] [0.7]\n  %yz = const u8[] [120]\n"
            "  %y = QLinearConv(%x, %xs, %xz, %w, %ws, %wz, %ys, %yz, %b) {group = 2, pads = [1, "
            "1, 1, 1], strides = [2, 1]}\n  return %y\n}\n",
        "QLinearConv of run-time weights, grouped, padded, strided, per-channel", "loop_order",
        300);
  check("graph @g(%x: i8[1,3,11], %w: i8[5,3,4], %s: f32[]) {\n"
        "  %k = const f32[] [0.00001]\n  %a = Abs(%s)\n  %t = Mul(%a, %k)\n"
        "  %xz = const i8[] [-3]\n  %wz = const i8[] [2]\n  %yz = const i8[] [-10]\n"
        "  %y = QLinearConv(%x, %t, %xz, %w, %t, %wz, %t, %yz) {dilations = [2]}\n"
        "  return %y\n}\n",
        "QLinearConv 1-D dilated, run-time scales", "loop_order", 127);
}

TEST(JitQuant, ConvIntegerMatchesExactly) {
  std::mt19937 rng(10);
  check("graph @g(%x: u8[2,4,9,8]) {\n" + constText("w", DType::I8, {6, 2, 3, 3}, rng, 127) +
            constText("wz", DType::I8, {6}, rng, 30) +
            "  %xz = const u8[] [140]\n"
            "  %y = ConvInteger(%x, %w, %xz, %wz) {group = 2, pads = [1, 1, 1, 1], strides = [2, "
            "1]}\n  return %y\n}\n",
        "ConvInteger grouped, padded, strided, per-channel w zero points", "kind = \"conv\"", 255);
  check("graph @g(%x: i8[1,3,11], %w: u8[5,3,4]) {\n  %y = ConvInteger(%x, %w) {dilations = "
        "[2]}\n  return %y\n}\n",
        "ConvInteger 1-D dilated, no zero points", "kind = \"conv\"", 127);
}

// DynamicQuantizeLinear lowered: the range pass, the scale and zero point, the quantization, as the
// reference kernel bit for bit; an all-zero input (scale from the "mx == mn" branch), an
// all-positive one (zero point 0) and a NaN (skipped by the range, quantized to 0).
// Many rows on the int8 GEMM tiles (a DqGemm kernel's int32 sums, kernels/dqgemm.h): QLinearMatMul
// of 74 token rows (then the reference's double requantization) and a 1x1 QLinearConv over 20 1x1
// images (fold-qdq's Gemm; then QLinearConv's float requantization with the bias), per-column
// weight scales and zero points, saturating outputs. Bit-identical to the interpreter on every ISA
// level (below AVX512-VNNI the dot-product and convolution kernels run them).
TEST(JitQuant, RowsOnInt8TilesMatchExactly) {
  std::mt19937 rng(16);
  std::vector<double> w(size_t(100 * 70));
  for (auto& v : w) v = double(int(rng() % 241) - 120);
  const std::string mm =
      "graph @g(%a: u8[2,37,100]) {\n" + constText("b", DType::I8, {100, 70}, rng, 0, w) +
      constText("bs", DType::F32, {70}, rng, 0.004) +
      constText("bz", DType::I8, {70}, rng, 0, {0, 2, -3}) +
      "  %as = const f32[] [0.02]\n  %az = const u8[] [121]\n  %ys = const f32[] [0.35]\n"
      "  %yz = const u8[] [128]\n"
      "  %y = QLinearMatMul(%a, %as, %az, %b, %bs, %bz, %ys, %yz)\n  return %y\n}\n";
  const std::string conv =
      "graph @g(%x: u8[20,100,1,1]) {\n" + constText("w", DType::I8, {70, 100, 1, 1}, rng, 0, w) +
      constText("ws", DType::F32, {70}, rng, 0.004) +
      constText("bias", DType::I32, {70}, rng, 3000) +
      "  %xs = const f32[] [0.02]\n  %xz = const u8[] [121]\n  %ys = const f32[] [0.35]\n"
      "  %yz = const u8[] [128]\n"
      "  %y = QLinearConv(%x, %xs, %xz, %w, %ws, %wz, %ys, %yz, %bias)\n  return %y\n}\n";
  const std::string convText = conv.substr(0, conv.find("  %xs")) + "  %wz = const i8[] [0]\n" +
                               conv.substr(conv.find("  %xs"));
  for (const std::string& text : {mm, convText}) {
    Model m = parseWithShapes(text);
    std::mt19937 r(6);
    const std::vector<RValue> in = randomInputs(m, r);
    const auto want = interpret(*m.graph, in);
    SCOPED_TRACE(text);
    expectOnEveryIsa(m, in, want, {kernels::Isa::Amx, kernels::Isa::Avx512Vnni, kernels::Isa::Avx2},
                     "int8 rows", [&](kernels::Isa isa) {
                       const auto* kd = kernels::bestKernel(kernels::KernelOp::DqGemm, isa);
                       return kd ? std::string(kd->name) : std::string("int8");
                     });
  }
}

// QLinearMatMul of two run-time operands (fold-qdq's QDQ attention: Q K^T, P V), batched: b
// packed per product for the int8 GEMM tiles (@qmatmul_pairs_*, u8 a; b u8 or i8, one operand's
// batch broadcast), and the loop nest where they do not apply (an i8 a, batch dims broadcasting
// both ways). Saturating outputs, odd sizes (partial tiles, K not a multiple of 4). Bit-identical
// to the interpreter on every ISA level.
TEST(JitQuant, MatMulOfTwoRuntimeOperandsMatchesExactly) {
  const std::string scales = "  %as = const f32[] [0.02]\n  %az = const u8[] [121]\n"
                             "  %bs = const f32[] [0.03]\n  %ys = const f32[] [0.31]\n"
                             "  %yz = const u8[] [128]\n  %yzs = const i8[] [-3]\n";
  const std::string tiles =
      "graph @g(%a: u8[2,3,19,42], %b: u8[2,3,42,37], %c: u8[3,19,42], %d: i8[1,42,5]) {\n" +
      scales +
      "  %bz = const u8[] [119]\n  %dz = const i8[] [4]\n"
      "  %y = QLinearMatMul(%a, %as, %az, %b, %bs, %bz, %ys, %yz)\n"
      "  %y2 = QLinearMatMul(%c, %as, %az, %d, %bs, %dz, %ys, %yzs)\n  return %y, %y2\n}\n";
  const std::string loops =
      "graph @g(%a: i8[2,1,5,9], %b: u8[1,3,9,4], %c: u8[3,7], %d: u8[2,7,6]) {\n" + scales +
      "  %az8 = const i8[] [-7]\n  %bz = const u8[] [119]\n"
      "  %y = QLinearMatMul(%a, %as, %az8, %b, %bs, %bz, %ys, %yz)\n"
      "  %y2 = QLinearMatMul(%c, %as, %az, %d, %bs, %bz, %ys, %yz)\n  return %y, %y2\n}\n";
  for (const auto& tc : {std::pair{tiles, true}, {loops, false}}) {
    const std::string& text = tc.first;
    const bool onTiles = tc.second; // (a plain local: lambdas below capture it)
    Model m = parseWithShapes(text);
    std::mt19937 r(8);
    const std::vector<RValue> in = randomInputs(m, r);
    const auto want = interpret(*m.graph, in);
    SCOPED_TRACE(text);
    expectOnEveryIsa(m, in, want, {kernels::Isa::Amx, kernels::Isa::Avx512Vnni, kernels::Isa::Avx2},
                     "QLinearMatMul of two run-time operands", [&](kernels::Isa isa) {
                       const auto* kd = kernels::bestKernel(kernels::KernelOp::DqGemm, isa);
                       return kd && onTiles
                                  ? "micro_kernel = \"" + std::string(kd->name) +
                                        "\", op = \"QLinearMatMul\", packing"
                                  : std::string("kind = \"matmul\", op = \"QLinearMatMul\"");
                     });
  }
}

// An elementwise region whose only operand is an 8-bit tensor and whose result is 8-bit (a QDQ
// model's DQ -> Sigmoid -> Q, each consumer with its own DQ as quantizers write them) runs as a
// table lookup (@lut8, kernels/lut.h) with the table made
// by the reference kernels: bit-identical to the interpreter. u8 and i8, odd sizes (the vector
// loop's tail), a table per channel for per-channel constants (a BatchNormalization left between
// DQ and Q), on each ISA level (the lookup's vector form is the CPU's: Kernels.Lut8*).
TEST(JitQuant, EightBitRegionsRunAsTableLookups) {
  const std::string text =
      "graph @g(%a: u8[2,3,9,7], %b: i8[5,67]) {\n  %s = const f32[] [0.05]\n"
      "  %z = const u8[] [117]\n  %s2 = const f32[] [0.004]\n  %z2 = const u8[] [3]\n"
      "  %sb = const f32[] [0.02]\n  %zb = const i8[] [-5]\n  %three = const f32[] [3]\n"
      "  %x = DequantizeLinear(%a, %s, %z) : f32[2,3,9,7]\n"
      "  %g = Sigmoid(%x) : f32[2,3,9,7]\n  %y1 = QuantizeLinear(%g, %s2, %z2) : u8[2,3,9,7]\n"
      "  %x2 = DequantizeLinear(%a, %s, %z) : f32[2,3,9,7]\n"
      "  %h = HardSwish(%x2) : f32[2,3,9,7]\n  %y2 = QuantizeLinear(%h, %s, %z) : u8[2,3,9,7]\n"
      "  %x3 = DequantizeLinear(%a, %s, %z) : f32[2,3,9,7]\n"
      "  %d = Div(%x3, %three) : f32[2,3,9,7]\n  %y3 = QuantizeLinear(%d, %sb, %zb) : i8[2,3,9,7]\n"
      "  %xb = DequantizeLinear(%b, %sb, %zb) : f32[5,67]\n"
      "  %t = Tanh(%xb) : f32[5,67]\n  %y4 = QuantizeLinear(%t, %s2, %zb) : i8[5,67]\n"
      "  %bn_s = const f32[3,1,1] [0.5, -1.25, 2]\n  %bn_b = const f32[3,1,1] [0.1, 0, -3]\n"
      "  %x5 = DequantizeLinear(%a, %s, %z) : f32[2,3,9,7]\n"
      "  %m5 = Mul(%x5, %bn_s) : f32[2,3,9,7]\n  %a5 = Add(%m5, %bn_b) : f32[2,3,9,7]\n"
      "  %e5 = Exp(%a5) : f32[2,3,9,7]\n  %y5 = QuantizeLinear(%e5, %s2, %z2) : u8[2,3,9,7]\n"
      "  return %y1, %y2, %y3, %y4, %y5\n}\n";
  Model m = parseWithShapes(text);
  std::mt19937 rng(15);
  const std::vector<RValue> in = randomInputs(m, rng);
  const auto want = interpret(*m.graph, in);
  ASSERT_TRUE(fuseElementwise(m));
  int lookups = 0;
  {
    runtime::JitExecutable exe(*m.graph);
    for (const auto& t : exe.tasks())
      lookups += t.schedule.find("micro_kernel = \"lut8\"") != std::string::npos;
  }
  EXPECT_EQ(lookups, 5) << printModel(m);
  expectOnEveryIsa(
      m, in, want,
      {kernels::Isa::Amx, kernels::Isa::Avx512Vnni, kernels::Isa::Avx2, kernels::Isa::Generic},
      "8-bit regions", [](kernels::Isa) { return std::string("lut8"); });
}

// ConvInteger with constant weights on the int8 convolution GEMM kernels (the QLinearConv tiles
// storing their int32 sums, lower_qconv.cpp), on every ISA level this CPU has: a run-time x zero
// point (DynamicQuantizeLinear's), per-channel w zero points, groups, padding, strides, a
// depthwise layer (on the f32 plane kernels, exact), a 1-D dilated one with u8 weights outside int8
// after their zero point (the int16 kernels take those). Bit-identical to the interpreter.
TEST(JitQuant, ConvIntegerOnInt8KernelsMatchesExactly) {
  std::mt19937 rng(14);
  // Each graph and the kernel call it lowers to.
  const std::vector<std::pair<std::string, std::string>> graphs = {
      {"graph @g(%x: u8[2,4,9,8], %xz: u8[]) {\n" +
           constText("w", DType::I8, {6, 2, 3, 3}, rng, 0, {-120, 5, 77, -3, 100, 0, -128}) +
           constText("wz", DType::I8, {6}, rng, 0, {0, 3, -2, 7, 0, 1}) +
           "  %y = ConvInteger(%x, %w, %xz, %wz) {group = 2, pads = [1, 1, 1, 1], strides = [2, "
           "1]}\n  return %y\n}\n",
       "qconv2d_nchw_"},
      {"graph @g(%x: u8[1,8,10,10], %xz: u8[]) {\n" +
           constText("w", DType::I8, {8, 1, 3, 3}, rng, 0, {-9, 44, 120, -100, 3}) +
           "  %y = ConvInteger(%x, %w, %xz) {group = 8, pads = [1, 1, 1, 1]}\n  return %y\n}\n",
       "qdwconv_nchw_"},
      {"graph @g(%x: i8[1,3,11]) {\n" +
           constText("w", DType::U8, {5, 3, 4}, rng, 0, {0, 255, 13, 200, 7}) +
           "  %xz = const i8[] [-7]\n  %wz = const u8[] [128]\n"
           "  %y = ConvInteger(%x, %w, %xz, %wz) {dilations = [2]}\n  return %y\n}\n",
       "qconv2d_nchw_"},
      // uint8 weights whose w - w_zero_point leaves int8 (ONNX Runtime's QUInt8): on the int8
      // tiles as (w - 128) plus a row of ones (lower_qconv.cpp uint8WeightsSplit), padded.
      {"graph @g(%x: u8[2,4,7,7], %xz: u8[]) {\n" +
           constText("w", DType::U8, {6, 4, 3, 3}, rng, 0, {0, 255, 13, 200, 7, 130, 255}) +
           constText("wz", DType::U8, {6}, rng, 0, {3, 250, 128, 0, 17, 99}) +
           "  %y = ConvInteger(%x, %w, %xz, %wz) {pads = [1, 1, 1, 1]}\n  return %y\n}\n",
       "qconv2d_nchw_"}};
  for (const auto& g : graphs) {
    const std::string &text = g.first, &callee = g.second; // (captured below)
    Model m = parseWithShapes(text);
    std::mt19937 r(5);
    const std::vector<RValue> in = randomInputs(m, r);
    const auto want = interpret(*m.graph, in);
    SCOPED_TRACE(text);
    expectOnEveryIsa(m, in, want,
                     {kernels::Isa::Amx, kernels::Isa::Avx512Vnni, kernels::Isa::AvxVnni,
                      kernels::Isa::Avx2, kernels::Isa::Generic},
                     "ConvInteger", [&](kernels::Isa) { return "micro_kernel = \"" + callee; });
  }
}

TEST(JitQuant, DynamicQuantizeLinearMatchesExactly) {
  const std::string g = "graph @g(%x: f32[3,41]) {\n  %y, %s, %z = DynamicQuantizeLinear(%x)\n"
                        "  return %y, %s, %z\n}\n";
  check(g, "DynamicQuantizeLinear random", "kind = \"quant\"", 7);
  Model m = parseModel(g);
  inferShapes(*m.graph);
  for (int c = 0; c < 3; ++c) {
    Tensor x(DType::F32, {3, 41});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.setF64(i, c == 0 ? 0.0 : c == 1 ? 0.25 * double(i % 13) : double(i) - 60);
    if (c == 2) x.data<float>()[17] = std::numeric_limits<float>::quiet_NaN();
    SCOPED_TRACE(c);
    expectJitMatches(m, {RValue::of(x)}, {0, 0}, "kind = \"quant\"");
  }
}

// ONNX Runtime's quantize_dynamic MatMul, DynamicQuantizeLinear -> MatMulInteger -> Cast ->
// Mul(x_scale * w_scale) -> Add(bias), folded by fold-qdq into com.microsoft.MatMulIntegerToFloat:
// on each DqGemm kernel this CPU has (kernels/dqgemm.h) and, below them, on MatMulInteger's
// kernels (the lowering's fallback), bit-identical to the interpreter on the unfolded graph.
// Shapes on and off the tiles; per-tensor and per-column weight scales and zero points.
TEST(JitQuant, DynamicQuantizedMatMulFoldsAndMatchesExactly) {
  std::mt19937 rng(12);
  struct Case {
    int64_t M, K, N;
    bool perColumn;
  };
  for (const Case& c : {Case{37, 100, 70, true}, Case{64, 256, 96, false}, Case{3, 5, 2, true}}) {
    const std::string M = std::to_string(c.M), K = std::to_string(c.K), N = std::to_string(c.N);
    SCOPED_TRACE("M=" + M + " K=" + K + " N=" + N);
    std::vector<double> w(size_t(c.K * c.N)); // w - wz within int8 (the DqGemm kernels' domain)
    for (auto& v : w) v = double(int(rng() % 251) - 125);
    const std::string text = "graph @g(%x: f32[1," + M + "," + K + "]) {\n" +
                             constText("w", DType::I8, {c.K, c.N}, rng, 0, w) +
                             (c.perColumn ? constText("wz", DType::I8, {c.N}, rng, 0, {0, 3, -2})
                                          : "  %wz = const i8[] [-1]\n") +
                             (c.perColumn ? constText("ws", DType::F32, {c.N}, rng, 0.01)
                                          : "  %ws = const f32[] [0.0123]\n") +
                             constText("bias", DType::F32, {c.N}, rng, 2) +
                             "  %xq, %xs, %xz = DynamicQuantizeLinear(%x)\n"
                             "  %acc = MatMulInteger(%xq, %w, %xz, %wz)\n"
                             "  %accf = Cast(%acc) {to = 1}\n  %s = Mul(%xs, %ws)\n"
                             "  %p = Mul(%accf, %s)\n  %y = Add(%p, %bias)\n  return %y\n}\n";
    Model ref = parseWithShapes(text), m = parseWithShapes(text);
    ASSERT_TRUE(foldQdq(m));
    bool folded = false;
    for (const auto& n : m.graph->nodes) folded |= n->op == "MatMulIntegerToFloat";
    ASSERT_TRUE(folded) << printModel(m);
    Tensor x(DType::F32, {1, c.M, c.K});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.setF64(i, std::uniform_real_distribution<double>(-3, 5)(rng));
    const auto want = interpret(*ref.graph, {RValue::of(x)});
    // The folded op's own reference semantics are the unfolded graph's.
    auto diff = compareValues(want[0], interpret(*m.graph, {RValue::of(x)})[0], {0, 0});
    EXPECT_FALSE(diff) << "interpreter, folded: " << *diff;
    expectOnEveryIsa(m, {RValue::of(x)}, want,
                     {kernels::Isa::Amx, kernels::Isa::Avx512Vnni, kernels::Isa::Avx2},
                     "MatMulIntegerToFloat", [](kernels::Isa isa) {
                       const auto* kd = kernels::bestKernel(kernels::KernelOp::DqGemm, isa);
                       return std::string(kd ? kd->name : "int32 sums");
                     });
  }
}

// fuse-elementwise takes per-tensor 8-bit DequantizeLinear / QuantizeLinear into its regions (a
// QDQ model's DQ -> Sigmoid -> Mul -> Q becomes one u8 -> u8 loop, and a DQ -> Q requantization
// one pass): the fused JIT result equals the interpreter's on the unfused graph, bit for bit.
TEST(JitQuant, QuantizationFusedIntoElementwiseRegionsMatchesExactly) {
  const std::string text =
      "graph @g(%xq: u8[2,3,9,7], %bq: i8[2,3,9,7]) {\n  %s = const f32[] [0.05]\n"
      "  %z = const u8[] [117]\n  %s2 = const f32[] [0.004]\n  %z2 = const u8[] [3]\n"
      "  %sb = const f32[] [0.2]\n  %zb = const i8[] [-5]\n"
      "  %x = DequantizeLinear(%xq, %s, %z) : f32[2,3,9,7]\n"
      "  %g = Sigmoid(%x) : f32[2,3,9,7]\n  %m = Mul(%x, %g) : f32[2,3,9,7]\n"
      "  %y = QuantizeLinear(%m, %s2, %z2) : u8[2,3,9,7]\n"
      "  %b = DequantizeLinear(%bq, %sb, %zb) : f32[2,3,9,7]\n"
      "  %r = QuantizeLinear(%b, %s, %z) : u8[2,3,9,7]\n"
      "  return %y, %r\n}\n";
  Model m = parseModel(text);
  inferShapes(*m.graph);
  std::mt19937 rng(8);
  const std::vector<RValue> in = randomInputs(m, rng, 200);
  const auto expected = interpret(*m.graph, in);
  ASSERT_TRUE(fuseElementwise(m));
  int fused = 0;
  for (const auto& n : m.graph->nodes) fused += n->op == "Fused";
  EXPECT_EQ(fused, 2) << printModel(m);
  for (const auto& n : m.graph->nodes) EXPECT_EQ(n->op, "Fused") << printModel(m);
  runtime::JitExecutable exe(*m.graph);
  const auto got = exe.run(in);
  EXPECT_EQ(exe.stats().fallback, 0);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    auto diff = compareValues(expected[k], got[k], {0, 0});
    EXPECT_FALSE(diff) << "output " << k << ": " << *diff;
  }
}

// QuantizeLinear / DequantizeLinear on 16-, 4- and 2-bit integers: values far past the range
// saturate (4/2-bit casts wrap, so the lowering clamps first), per tensor and per axis.
TEST(JitQuant, SixteenFourAndTwoBitQuantizeSaturates) {
  std::mt19937 rng(23);
  for (const char* t : {"i16", "u16", "i4", "u4", "i2", "u2"}) {
    const std::string zp = std::string(t) == "i16"    ? "-300"
                           : std::string(t) == "u16"  ? "1000"
                           : std::string(t)[0] == 'i' ? "-1"
                                                      : "1";
    check(std::string("graph @g(%x: f32[3,40]) {\n  %s = const f32[] [0.05]\n  %z = const ") + t +
              "[] [" + zp +
              "]\n  %q = QuantizeLinear(%x, %s, %z)\n  %y = DequantizeLinear(%q, %s, %z)\n"
              "  return %q, %y\n}\n",
          std::string("QuantizeLinear to ") + t, "quant_axis = -1", 2000);
    check(std::string("graph @g(%x: f32[3,40]) {\n") +
              constText("s", DType::F32, {3}, rng, 0, {0.5, 0.02, 0.1}) +
              "  %q = QuantizeLinear(%x, %s) {axis = 0, output_dtype = " +
              (std::string(t) == "i16"   ? "5"
               : std::string(t) == "u16" ? "4"
               : std::string(t) == "i4"  ? "22"
               : std::string(t) == "u4"  ? "21"
               : std::string(t) == "i2"  ? "26"
                                         : "25") +
              "}\n  %y = DequantizeLinear(%q, %s) {axis = 0}\n  return %q, %y\n}\n",
          std::string("QuantizeLinear per axis to ") + t, "quant_axis = 0", 2000);
  }
}

// QuantizeLinear / DequantizeLinear on float8 and float4: x / scale cast to the type (to nearest
// even, saturating), no rounding step; zero points 0 (float4's added), exact against the
// interpreter over values far past each type's range.
TEST(JitQuant, Float8QuantizeRoundsBySaturatingCast) {
  for (const char* t : {"f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f4e2m1"}) {
    check(std::string("graph @g(%x: f32[3,40]) {\n  %s = const f32[] [0.05]\n  %z = const ") + t +
              "[] [0]\n  %q = QuantizeLinear(%x, %s, %z)\n  %y = DequantizeLinear(%q, %s, %z)\n"
              "  return %q, %y\n}\n",
          std::string("QuantizeLinear to ") + t, "quant_axis = -1", 30);
  }
}

// Blocked quantization: a scale (and zero point) per block of block_size along the axis, the
// last block partial (40 = 3 x 12 + 4), exact against the interpreter.
TEST(JitQuant, BlockedQuantizeAndDequantize) {
  std::mt19937 rng(31);
  check("graph @g(%x: f32[3,40]) {\n" +
            constText("s", DType::F32, {3, 4}, rng, 0, {0.05, 0.1, 0.02, 0.5}) +
            constText("z", DType::I8, {3, 4}, rng, 0, {0, 3, -5, 1}) +
            "  %q = QuantizeLinear(%x, %s, %z) {axis = 1, block_size = 12}\n"
            "  %y = DequantizeLinear(%q, %s, %z) {axis = 1, block_size = 12}\n"
            "  return %q, %y\n}\n",
        "blocked along axis 1", "quant_axis = 1", 30);
}

} // namespace
} // namespace aicc
