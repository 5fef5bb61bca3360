// The portable C99 backend: generated bundles are compiled with the system C compiler
// (cc -std=c99 -O2), run, and compared with the reference interpreter (and, for code without
// micro-kernels, bit for bit with the loop IR's reference executor).
#include "backend/memory_plan.h"
#include "codegen/c/bundle.h"
#include "codegen/c/emit_c.h"
#include "frontend/onnx/inputs.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "loop/eval.h"
#include "loop/executor.h"
#include "loop/parser.h"
#include "passes/pipelines.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace aicc;

namespace {

// A generic driver: reads in<i>.bin, runs the model twice (the results must be identical),
// writes out<i>.bin.
const char* kMain = R"(#include "model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
  void* in[MODEL_NUM_INPUTS + 1];
  void* out[MODEL_NUM_OUTPUTS + 1];
  void* again[MODEL_NUM_OUTPUTS + 1];
  char name[64];
  int i;
  if (model_init("model.weights")) { fprintf(stderr, "%s\n", model_last_error()); return 1; }
  for (i = 0; i < MODEL_NUM_INPUTS; ++i) {
    FILE* f;
    sprintf(name, "in%d.bin", i);
    in[i] = malloc((size_t)model_input_bytes[i] + 1);
    f = fopen(name, "rb");
    if (!f || fread(in[i], 1, (size_t)model_input_bytes[i], f) != (size_t)model_input_bytes[i]) {
      fprintf(stderr, "cannot read %s\n", name);
      return 1;
    }
    fclose(f);
  }
  for (i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
    out[i] = malloc((size_t)model_output_bytes[i] + 1);
    again[i] = malloc((size_t)model_output_bytes[i] + 1);
  }
  if (model_run((const void* const*)in, out) || model_run((const void* const*)in, again)) {
    fprintf(stderr, "%s\n", model_last_error());
    return 1;
  }
  for (i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
    FILE* f;
    if (memcmp(out[i], again[i], (size_t)model_output_bytes[i]) != 0) {
      fprintf(stderr, "output %d differs between two runs\n", i);
      return 1;
    }
    sprintf(name, "out%d.bin", i);
    f = fopen(name, "wb");
    fwrite(out[i], 1, (size_t)model_output_bytes[i], f);
    fclose(f);
  }
  return 0;
}
)";

fs::path freshDir(const std::string& tag) {
  static int counter = 0;
  fs::path d = fs::temp_directory_path() /
               fmt::format("aicc_cgen_{}_{}_{}", tag, static_cast<long>(::getpid()), counter++);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void writeFile(const fs::path& p, const void* data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

std::string readFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Compiles and runs a C command line in dir; returns "" or the failure (with the log).
std::string sh(const fs::path& dir, const std::string& cmd) {
  std::string full = fmt::format("cd '{}' && {} > log.txt 2>&1", dir.string(), cmd);
  int rc = std::system(full.c_str());
  if (rc == 0) return "";
  return fmt::format("`{}` failed ({}):\n{}", cmd, rc, readFile(dir / "log.txt"));
}

const char* kCc = "cc -std=c99 -pedantic -Wall -Wextra -Werror -O2";

struct BundleRun {
  std::vector<RValue> outputs;
  size_t codeBytes = 0;
  std::string source; // model.c
};

// Emits, compiles and runs the bundle of g (already optimized) on `inputs`; keeps the folder in
// *keep when given.
// `cflags` are added to kCc's.
BundleRun runBundle(const Graph& g, const std::vector<RValue>& inputs, const std::string& tag,
                    const codegen::CBundleOptions& opts = {}, fs::path* keep = nullptr,
                    const std::string& cflags = "") {
  MemoryPlan plan = planMemory(g);
  codegen::CBundle b = codegen::emitCBundle(g, plan, opts);
  fs::path dir = freshDir(tag);
  codegen::writeCBundle(b, dir.string());
  writeFile(dir / "main.c", kMain, std::strlen(kMain));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].tensor;
    writeFile(dir / fmt::format("in{}.bin", i), t.raw(), t.nbytes());
  }
  const char* sources = opts.embedWeights ? " model.c model_weights.c" : " model.c";
  std::string err = sh(dir, std::string(kCc) + " " + cflags + sources + " main.c -o run -lm");
  if (err.empty()) err = sh(dir, "./run");
  if (!err.empty()) ADD_FAILURE() << tag << " (in " << dir << "): " << err;
  BundleRun r;
  r.codeBytes = b.source.size();
  r.source = b.source;
  for (size_t i = 0; i < g.outputs.size() && err.empty(); ++i) {
    const Value* o = g.outputs[i];
    Tensor t(o->type.dtype, *toDims(*o->type.shape));
    std::string bytes = readFile(dir / fmt::format("out{}.bin", i));
    EXPECT_EQ(bytes.size(), t.nbytes());
    std::memcpy(t.raw(), bytes.data(), std::min(bytes.size(), t.nbytes()));
    r.outputs.push_back(RValue::of(t));
  }
  if (keep)
    *keep = dir;
  else if (err.empty())
    fs::remove_all(dir);
  return r;
}

Tensor randomTensor(DType t, const Dims& shape, std::mt19937& rng) {
  Tensor x(t, shape);
  std::uniform_real_distribution<double> u(-3, 3);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = u(rng);
    if (isInteger(t)) v = std::round(v * 10);
    if (t == DType::Bool) v = v > 0;
    x.setF64(i, v);
  }
  return x;
}

void optimizeModel(Model& m, int level) { test::optimize(m, level); }

// Checks a graph (text form) against the interpreter and, bit for bit, against the loop
// executor; returns model.c's size.
size_t checkGraph(const std::string& text, const std::vector<Tensor>& ins, int optLevel,
                  const std::string& tag, bool bitExact = true) {
  Model m = parseModel(text);
  std::vector<RValue> in;
  for (const auto& t : ins) in.push_back(RValue::of(t));
  auto expected = interpret(*m.graph, in);
  optimizeModel(m, optLevel);
  auto lowered = loop::runLowered(*m.graph, in);
  BundleRun r = runBundle(*m.graph, in, tag);
  if (r.outputs.size() != expected.size()) return r.codeBytes;
  for (size_t k = 0; k < expected.size(); ++k) {
    auto diff = compareValues(expected[k], r.outputs[k], Tolerance{1e-5, 1e-6});
    EXPECT_FALSE(diff) << tag << ": output " << k << ": " << *diff << "\n" << text;
    if (bitExact) {
      auto exact = compareValues(lowered[k], r.outputs[k], Tolerance{0, 0});
      EXPECT_FALSE(exact) << tag << ": not bit-exact with the loop executor: " << *exact;
    }
  }
  return r.codeBytes;
}

} // namespace

TEST(CodegenC, ScalarSemanticsMatchTheLoopExecutorBitForBit) {
  // Integer wrapping, truncating division with non-constant divisors, INT_MIN / -1, saturating
  // and NaN float->int casts, fmin/fmax with NaN, round half to even, math in double, bitwise
  // ops and shifts by the type's width and more (0, or a signed value's sign).
  const char* text = R"(
func @sem(%a: i32[8] in, %b: i32[8] in, %x: f32[8] in, %y: f32[8] in, %oi: i32[8] out, %od: i32[8] out, %om: i32[8] out, %oc: i8[8] out, %ou: u8[8] out, %of: f32[8] out, %og: f32[8] out, %ol: i64[8] out, %ob: bool[8] out, %w8: i8[8] out, %w16: u16[8] out, %n16: i16[8] out, %q64: u64[8] out, %r64: i64[8] out, %bw: i32[8] out, %s8: u8[8] out, %s32: u32[8] out, %sr: i32[8] out) {
  for %i in 0..8 vectorize(8) {
    store %oi[%i], %a[%i] * %b[%i] + %a[%i]
    store %od[%i], %a[%i] / select(%b[%i] == 0:i32, 1:i32, %b[%i])
    store %om[%i], %a[%i] % select(%b[%i] == 0:i32, 1:i32, %b[%i])
    store %oc[%i], cast<i8>(%x[%i] * 100.0)
    store %ou[%i], cast<u8>(%y[%i])
    store %of[%i], min(%x[%i], %y[%i]) + round(%x[%i]) * exp(%y[%i] / 1000.0)
    store %og[%i], sigmoid(%x[%i]) + tanh(%y[%i] / 1000.0) + max(%x[%i], %y[%i])
    store %ol[%i], cast<i64>(%a[%i]) * 3037000499 + -(cast<i64>(%b[%i]))
    store %ob[%i], %x[%i] < %y[%i] && !(%a[%i] >= %b[%i])
    store %w8[%i], cast<i8>(%a[%i]) + cast<i8>(%b[%i]) * 3:i8
    store %w16[%i], cast<u16>(%a[%i]) * cast<u16>(%b[%i])
    store %n16[%i], -(cast<i16>(%a[%i])) - cast<i16>(%b[%i])
    store %q64[%i], cast<u64>(%a[%i]) / cast<u64>(select(%b[%i] == 0:i32, 7:i32, %b[%i]))
    store %r64[%i], cast<i64>(%a[%i]) % cast<i64>(select(%b[%i] == 0:i32, 7:i32, %b[%i]))
    store %bw[%i], bitxor(bitand(%a[%i], %b[%i]), bitor(%a[%i], 255:i32))
    store %s8[%i], shl(cast<u8>(%a[%i]), cast<u8>(%i * 2)) + shr(cast<u8>(%b[%i]), cast<u8>(%i))
    store %s32[%i], shl(cast<u32>(%a[%i]), cast<u32>(%i * 9)) + shr(cast<u32>(%b[%i]), cast<u32>(%i * 7))
    store %sr[%i], shr(%a[%i], cast<i32>(%i * 9))
  }
}
)";
  loop::Module m = loop::parseModule(text);
  const loop::Func& f = m.funcs[0];
  std::map<std::string, Tensor> bufs;
  const int32_t a[8] = {2147483647, -2147483647 - 1, 7, -7, 100000, 3, 0, -1};
  const int32_t b[8] = {2, -1, 2, 2, 100000, 0, 5, -2147483647 - 1};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float x[8] = {2.5f, -3.5f, nan, 1e10f, -1e10f, 0.5f, -0.4999f, 1.5f};
  const float y[8] = {300.f, -1.f, 1.f, nan, inf, 255.5f, 256.f, -inf};
  Tensor ta(DType::I32, {8}), tb(DType::I32, {8}), tx(DType::F32, {8}), ty(DType::F32, {8});
  std::memcpy(ta.raw(), a, sizeof a);
  std::memcpy(tb.raw(), b, sizeof b);
  std::memcpy(tx.raw(), x, sizeof x);
  std::memcpy(ty.raw(), y, sizeof y);
  bufs["a"] = ta, bufs["b"] = tb, bufs["x"] = tx, bufs["y"] = ty;
  loop::evaluate(f, bufs);

  fs::path dir = freshDir("sem");
  std::string src = codegen::emitCModule(m);
  std::string main = src + "\n#include <stdio.h>\nint main(void) {\n";
  auto arr = [&](const char* ct, const char* n, const std::string& init) {
    main += fmt::format("  static {} {}[8] = {{{}}};\n", ct, n, init);
  };
  auto ints = [](const int32_t* v) {
    std::string s;
    for (int i = 0; i < 8; ++i) s += fmt::format("{}{}-1", i ? ", " : "", int64_t{v[i]} + 1);
    return s;
  };
  auto floats = [](const float* v) {
    std::string s;
    for (int i = 0; i < 8; ++i)
      s += (i ? ", " : "") + (std::isnan(v[i])   ? std::string("NAN")
                              : std::isinf(v[i]) ? std::string(v[i] < 0 ? "-INFINITY" : "INFINITY")
                                                 : fmt::format("{:a}f", v[i]));
    return s;
  };
  arr("int32_t", "a", ints(a));
  arr("int32_t", "b", ints(b));
  arr("float", "x", floats(x));
  arr("float", "y", floats(y));
  std::vector<std::pair<std::string, std::string>> outs = {
      {"oi", "int32_t"},   {"od", "int32_t"},  {"om", "int32_t"},   {"oc", "int8_t"},
      {"ou", "uint8_t"},   {"of", "float"},    {"og", "float"},     {"ol", "int64_t"},
      {"ob", "uint8_t"},   {"w8", "int8_t"},   {"w16", "uint16_t"}, {"n16", "int16_t"},
      {"q64", "uint64_t"}, {"r64", "int64_t"}, {"bw", "int32_t"},   {"s8", "uint8_t"},
      {"s32", "uint32_t"}, {"sr", "int32_t"}};
  for (const auto& [n, ct] : outs) arr(ct.c_str(), n.c_str(), "0");
  // The kernel's parameters are in declaration order.
  std::string call;
  for (const auto& p : f.params) call += (call.empty() ? "" : ", ") + p.name;
  main += "  k_sem(" + call + ");\n";
  main += "  {\n    FILE* f = fopen(\"out.bin\", \"wb\");\n";
  for (const auto& [n, ct] : outs) main += fmt::format("    fwrite({0}, sizeof {0}, 1, f);\n", n);
  main += "    fclose(f);\n  }\n  return 0;\n}\n";
  writeFile(dir / "sem.c", main.data(), main.size());
  std::string err = sh(dir, std::string(kCc) + " sem.c -o sem -lm");
  if (err.empty()) err = sh(dir, "./sem");
  ASSERT_EQ(err, "") << main;
  std::string got = readFile(dir / "out.bin");
  size_t off = 0;
  for (const auto& [n, ct] : outs) {
    const Tensor& t = bufs.at(n);
    ASSERT_LE(off + t.nbytes(), got.size());
    for (int64_t i = 0; i < t.numel(); ++i) {
      size_t es = dtypeSize(t.dtype());
      EXPECT_EQ(
          std::memcmp(static_cast<const char*>(t.raw()) + i * es, got.data() + off + i * es, es), 0)
          << "%" << n << "[" << i << "]: executor " << t.getF64(i) << "\n"
          << src;
    }
    off += t.nbytes();
  }
  fs::remove_all(dir);
}

TEST(CodegenC, ElementwiseChainsMatchTheInterpreter) {
  std::mt19937 rng(11);
  struct Case {
    const char* tag;
    const char* text;
    std::vector<std::pair<DType, Dims>> ins;
  };
  const Case cases[] = {
      {"chain",
       "graph @main(%x: f32[2,3,4], %y: f32[4]) {\n"
       "  %a = Add(%x, %y) : f32[2,3,4]\n  %b = Relu(%a) : f32[2,3,4]\n"
       "  %c = Mul(%b, %x) : f32[2,3,4]\n  %d = Sigmoid(%c) : f32[2,3,4]\n"
       "  %e = Tanh(%d) : f32[2,3,4]\n  return %e, %a\n}\n",
       {{DType::F32, {2, 3, 4}}, {DType::F32, {4}}}},
      {"bcast",
       "graph @main(%x: f32[1,8,5,5], %s: f32[8,1,1]) {\n"
       "  %a = Mul(%x, %s) : f32[1,8,5,5]\n  %b = Exp(%a) : f32[1,8,5,5]\n"
       "  %c = Div(%b, %s) : f32[1,8,5,5]\n  %d = Less(%c, %x) : bool[1,8,5,5]\n"
       "  %e = Where(%d, %c, %x) : f32[1,8,5,5]\n  return %e\n}\n",
       {{DType::F32, {1, 8, 5, 5}}, {DType::F32, {8, 1, 1}}}},
      {"ints",
       "graph @main(%x: i32[6,7], %y: i32[7]) {\n"
       "  %a = Mul(%x, %y) : i32[6,7]\n  %b = Sub(%a, %x) : i32[6,7]\n"
       "  %c = Cast(%b) {to = 1} : f32[6,7]\n  %d = Cast(%x) {to = 7} : i64[6,7]\n"
       "  %e = Abs(%d) : i64[6,7]\n  return %c, %e\n}\n",
       {{DType::I32, {6, 7}}, {DType::I32, {7}}}},
      {"f64",
       // (Abs first: the interpreter's Max propagates NaN, the loop IR's max is fmax.)
       "graph @main(%x: f64[10]) {\n  %s = Abs(%x) : f64[10]\n  %a = Sqrt(%s) : f64[10]\n"
       "  %b = Neg(%a) : f64[10]\n  %c = Max(%b, %x) : f64[10]\n  return %c\n}\n",
       {{DType::F64, {10}}}},
      {"bitcast", // bits reinterpreted (a union member in C), negated as integers (a finite float
                  // again: no NaN payloads to compare), reinterpreted back
       "graph @main(%x: f32[3,5], %y: f64[4], %z: bool[6]) {\n"
       "  %a = BitCast(%x) {to = 6} : i32[3,5]\n  %b = Neg(%a) : i32[3,5]\n"
       "  %c = BitCast(%b) {to = 1} : f32[3,5]\n  %d = BitCast(%y) {to = 7} : i64[4]\n"
       "  %e = BitCast(%z) {to = 2} : u8[6]\n  return %c, %d, %e\n}\n",
       {{DType::F32, {3, 5}}, {DType::F64, {4}}, {DType::Bool, {6}}}},
  };
  for (int level : {0, 2}) {
    for (const auto& c : cases) {
      std::vector<Tensor> ins;
      for (const auto& [t, d] : c.ins) ins.push_back(randomTensor(t, d, rng));
      size_t bytes = checkGraph(c.text, ins, level, fmt::format("{}_O{}", c.tag, level));
      std::cout << "[ codegen-c ] " << c.tag << " -O" << level << ": model.c " << bytes
                << " bytes\n";
    }
  }
}

// Every op family the lowerings cover (src/loop/lower_*.cpp), one small graph each; a case whose
// node does not lower (yet) is reported and skipped. Calls to micro-kernels run the bundle's
// portable versions (a different summation order), so those cases are compared with tolerance.
TEST(CodegenC, LoweredOpFamiliesMatchTheInterpreter) {
  std::mt19937 rng(7);
  struct Case {
    const char* tag;
    const char* node; // "%y = ..." with inputs %x (and %z)
    Dims x, z;
    bool bitExact;
  };
  const Case cases[] = {
      {"matmul", "%y = MatMul(%x, %z) : f32[3,5]", {3, 4}, {4, 5}, false},
      {"gemm", "%y = Gemm(%x, %z) {transB = 1} : f32[3,5]", {3, 4}, {5, 4}, false},
      {"conv",
       "%y = Conv(%x, %z) {pads = [1, 1, 1, 1]} : f32[1,4,5,5]",
       {1, 2, 5, 5},
       {4, 2, 3, 3},
       false},
      {"softmax", "%y = Softmax(%x) : f32[3,7]", {3, 7}, {}, true},
      {"logsoftmax", "%y = LogSoftmax(%x) {axis = 0} : f32[3,7]", {3, 7}, {}, true},
      {"reducemean", "%y = ReduceMean(%x) : f32[1,1]", {3, 7}, {}, true},
      {"reducemax", "%y = ReduceMax(%x, %a) {keepdims = 0} : f32[3]", {3, 7}, {}, true},
      {"avgpool",
       "%y = AveragePool(%x) {kernel_shape = [2, 2], strides = [2, 2]} : f32[1,2,3,3]",
       {1, 2, 6, 6},
       {},
       true},
      {"gap", "%y = GlobalAveragePool(%x) : f32[1,3,1,1]", {1, 3, 4, 4}, {}, true},
      {"transpose", "%y = Transpose(%x) {perm = [1, 0, 2]} : f32[3,2,4]", {2, 3, 4}, {}, true},
      {"concat", "%y = Concat(%x, %z) {axis = 1} : f32[2,7]", {2, 3}, {2, 4}, true},
      {"gelu", "%y = Gelu(%x) : f32[4,5]", {4, 5}, {}, true},
      {"layernorm", "%y = LayerNormalization(%x, %g) : f32[3,8]", {3, 8}, {}, true},
  };
  for (const auto& c : cases) {
    std::string params = fmt::format("%x: f32{}", formatDims(c.x));
    std::vector<Tensor> ins;
    ins.push_back(randomTensor(DType::F32, c.x, rng));
    if (!c.z.empty()) {
      params += fmt::format(", %z: f32{}", formatDims(c.z));
      ins.push_back(randomTensor(DType::F32, c.z, rng));
    }
    std::string text = fmt::format("graph @main({}) {{\n  %a = const i64[1] [1]\n"
                                   "  %g = const f32[8] [1, 2, 3, 4, 0.5, 1, 1, 1]\n  {}\n"
                                   "  return %y\n}}\n",
                                   params, c.node);
    Model m;
    try {
      m = parseModel(text);
    } catch (const Error& e) {
      ADD_FAILURE() << c.tag << ": " << e.what();
      continue;
    }
    std::string why;
    if (!loop::lowerNode(*m.graph->nodes.back(), "f", &why)) {
      std::cout << "[ codegen-c ] " << c.tag << ": skipped, not lowered: " << why << "\n";
      continue;
    }
    size_t bytes = checkGraph(text, ins, 0, c.tag, c.bitExact);
    std::cout << "[ codegen-c ] " << c.tag << ": model.c " << bytes << " bytes\n";
  }
}

// The portable micro-kernels (codegen/c/micro_kernels_c.cpp) on shapes that reach each of their
// paths: pointwise convolutions with fewer than 8, exactly 8 and 16k + r pixels and a channel
// count that is not a multiple of 4; other convolutions with padding, strides, dilation, 5x5
// taps and fewer than 8 output columns; depthwise 3x3 at stride 1 and 2 on planes 1 to 19 wide;
// Gemm with and without transB, M below and above 4. One bundle, compiled three ways (the plain
// flags, which give x86-64 SSE2 vectors; -march=native; -DAICC_SCALAR_ONLY), each against the
// interpreter.
TEST(CodegenC, MicroKernelsMatchTheInterpreterOnEveryPath) {
  std::mt19937 rng(11);
  struct Conv {
    Dims x, w;
    int64_t stride, pad, dil, group, strideW = 0; // strideW: stride's width, when it differs
  };
  std::vector<Conv> convs = {
      {{1, 5, 1, 3}, {6, 5, 1, 1}, 1, 0, 1, 1},     {{1, 3, 2, 4}, {4, 3, 1, 1}, 1, 0, 1, 1},
      {{1, 7, 3, 7}, {9, 7, 1, 1}, 1, 0, 1, 1},     {{1, 16, 7, 7}, {8, 16, 1, 1}, 1, 0, 1, 1},
      {{1, 3, 9, 11}, {5, 3, 3, 3}, 1, 1, 1, 1},    {{1, 3, 17, 17}, {8, 3, 3, 3}, 2, 1, 1, 1},
      {{1, 2, 12, 20}, {4, 2, 5, 5}, 1, 2, 1, 1},   {{1, 3, 10, 18}, {4, 3, 3, 3}, 1, 2, 2, 1},
      {{1, 3, 5, 6}, {6, 3, 3, 3}, 1, 0, 1, 1},     {{1, 4, 9, 19}, {8, 4, 1, 1}, 2, 0, 1, 1},
      {{1, 130, 4, 9}, {4, 130, 3, 3}, 1, 1, 1, 1}, {{1, 4, 6, 20}, {8, 4, 3, 3}, 2, 1, 1, 1, 1},
      {{1, 4, 6, 20}, {8, 4, 1, 1}, 2, 0, 1, 1, 1}, {{1, 6, 5, 17}, {6, 2, 3, 3}, 1, 1, 1, 3}};
  for (int64_t s : {1, 2})
    for (int64_t w : {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 17, 19})
      convs.push_back({{1, 3, w + s, w}, {3, 1, 3, 3}, s, 1, 1, 3});
  struct Gemm {
    int64_t M, N, K;
    bool transB;
  };
  const Gemm gemms[] = {{1, 13, 9, false}, {5, 20, 7, false}, {4, 8, 3, false}, {4, 15, 6, false},
                        {6, 7, 5, false},  {1, 10, 17, true}, {3, 6, 4, true}};
  std::string params, nodes, rets;
  std::vector<Tensor> ins;
  auto input = [&](const Dims& d) {
    const std::string name = fmt::format("%i{}", ins.size());
    params += fmt::format("{}{}: f32{}", params.empty() ? "" : ", ", name, formatDims(d));
    ins.push_back(randomTensor(DType::F32, d, rng));
    return name;
  };
  auto output = [&](const std::string& node) {
    const std::string name =
        fmt::format("%y{}", rets.empty() ? 0 : std::count(rets.begin(), rets.end(), ',') + 1);
    nodes += fmt::format("  {} = {}\n", name, node);
    rets += (rets.empty() ? "" : ", ") + name;
  };
  for (const Conv& c : convs) {
    const std::string x = input(c.x), w = input(c.w), b = input({c.w[0]});
    Dims y = {1, c.w[0]};
    const int64_t sw = c.strideW ? c.strideW : c.stride;
    for (int d = 0; d < 2; ++d)
      y.push_back((c.x[2 + d] + 2 * c.pad - c.dil * (c.w[2 + d] - 1) - 1) / (d ? sw : c.stride) +
                  1);
    output(fmt::format("Conv({}, {}, {}) {{pads = [{p}, {p}, {p}, {p}], strides = [{s}, {sw}], "
                       "dilations = [{d}, {d}], group = {g}}} : f32{}",
                       x, w, b, formatDims(y), fmt::arg("p", c.pad), fmt::arg("s", c.stride),
                       fmt::arg("sw", sw), fmt::arg("d", c.dil), fmt::arg("g", c.group)));
  }
  for (const Gemm& g : gemms) {
    const std::string a = input({g.M, g.K}), b = input(g.transB ? Dims{g.N, g.K} : Dims{g.K, g.N});
    output(
        fmt::format("Gemm({}, {}) {{transB = {}}} : f32[{},{}]", a, b, g.transB ? 1 : 0, g.M, g.N));
  }
  const std::string text =
      fmt::format("graph @main({}) {{\n{}  return {}\n}}\n", params, nodes, rets);
  Model m = parseModel(text);
  std::vector<RValue> in;
  for (const auto& t : ins) in.push_back(RValue::of(t));
  const auto expected = interpret(*m.graph, in);
  optimizeModel(m, 0);
  for (const char* flags : {"", "-march=native", "-DAICC_SCALAR_ONLY"}) {
    BundleRun r = runBundle(*m.graph, in, "micro_kernels", {}, nullptr, flags);
    if (::testing::Test::HasFailure()) break;
    // Every node on its micro-kernel: the call sites pass buffers (b_... or (b_... + offset)).
    auto calls = [&](const std::string& callee) {
      size_t n = 0;
      for (const std::string& site : {callee + "(b_", callee + "((b_"})
        for (size_t at = 0; (at = r.source.find(site, at)) != std::string::npos; ++at) ++n;
      return n;
    };
    EXPECT_EQ(calls("aicc_dwconv3x3_nchw_f32"), 24u);
    EXPECT_EQ(calls("aicc_conv2d_nchw_f32"), convs.size() - 24);
    EXPECT_EQ(calls("aicc_gemm_f32"), std::size(gemms));
    for (size_t k = 0; k < expected.size() && k < r.outputs.size(); ++k) {
      // Sums of up to 1170 products of values in [-3, 3], in f32: about 1e-4 apart.
      auto diff = compareValues(expected[k], r.outputs[k], Tolerance{1e-4, 1e-3});
      EXPECT_FALSE(diff) << "cc " << flags << ": output " << k << " ("
                         << (k < convs.size() ? "conv" : "gemm") << "): " << *diff;
    }
    std::cout << "[ codegen-c ] micro-kernels, cc " << (*flags ? flags : "(plain)") << ": "
              << expected.size() << " outputs match\n";
  }
}

TEST(CodegenC, WeightsAreLoadedFromTheBlob) {
  std::mt19937 rng(3);
  Tensor w = randomTensor(DType::F32, {3, 4}, rng);
  std::string wt;
  for (int64_t i = 0; i < w.numel(); ++i) wt += fmt::format("{}{}", i ? ", " : "", w.getF64(i));
  std::string text = "graph @main(%x: f32[3,4]) {\n  %w = const f32[3,4] [" + wt +
                     "]\n  %s = const i64[1] [12]\n  %a = Mul(%x, %w) : f32[3,4]\n"
                     "  %b = Add(%a, %w) : f32[3,4]\n  %r = Reshape(%b, %s) : f32[12]\n"
                     "  %q = Reshape(%x, %s) : f32[12]\n  return %r, %q\n}\n";
  checkGraph(text, {randomTensor(DType::F32, {3, 4}, rng)}, 0, "weights");
}

TEST(CodegenC, UnlowerableNodesAreListed) {
  // (Dropout in training mode draws random numbers: never lowered)
  Model m = parseModel("graph @main(%x: f32[1,4,1], %y: f32[1,4,1]) {\n"
                       "  %r = const f32[] [0.5]\n  %t = const bool[] [1]\n"
                       "  %a = Dropout(%x, %r, %t) {seed = 3} : f32[1,4,1]\n"
                       "  %b = Dropout(%y, %r, %t) {seed = 4} : f32[1,4,1]\n"
                       "  %c = Add(%a, %b) : f32[1,4,1]\n  return %c\n}\n");
  MemoryPlan plan = planMemory(*m.graph);
  try {
    codegen::emitCBundle(*m.graph, plan);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("2 of 3 nodes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(Dropout)"), std::string::npos) << msg;
  }
}

// The bundled mnist-8 (models/mnist-8) at -O2, its test inputs and the interpreter's outputs.
struct Mnist8 {
  ImportedModel im;
  std::vector<RValue> in, expected;
  Mnist8() {
    fs::path dir = fs::path(AICC_SOURCE_DIR) / "models" / "mnist-8";
    im = importOnnxFile((dir / "model.onnx").string());
    InputSpec spec;
    spec.inputsDir = (dir / "test_data_set_0").string();
    spec.generate = false;
    in = bindInputs(im, spec);
    expected = interpret(*im.model.graph, in);
    optimizeModel(im.model, 2);
  }
};

TEST(CodegenC, Mnist8EndToEnd) {
  Mnist8 m;
  const Graph& g = *m.im.model.graph;
  const auto& in = m.in;
  const auto& expected = m.expected;
  std::string why;
  int64_t index = 0;
  for (const auto& n : g.nodes) {
    std::string reason;
    if (!loop::lowerNode(*n, "n" + std::to_string(index++), &reason) &&
        !(n->op == "Reshape" || n->op == "Flatten"))
      why += fmt::format(" {} ({}): {};", n->name, n->op, reason);
  }
  ASSERT_TRUE(why.empty()) << "mnist-8 no longer lowers completely:" << why;
  BundleRun r = runBundle(g, in, "mnist");
  std::cout << "[ codegen-c ] mnist-8 -O2: model.c " << r.codeBytes << " bytes\n";
  ASSERT_EQ(r.outputs.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    auto diff = compareValues(expected[k], r.outputs[k], Tolerance{1e-4, 1e-4});
    EXPECT_FALSE(diff) << *diff;
  }
}

// The microcontroller form (--embed-weights): weights as a const array, no stdio and no malloc in
// the bundle; the same results on the host; and, where Debian's gcc-arm-none-eabi is installed, a
// Cortex-M4 build whose sections are reported: code, the weights as rodata, the arena as bss.
TEST(CodegenC, Mnist8EmbeddedWeightsBuildForCortexM4) {
  Mnist8 m;
  const Graph& g = *m.im.model.graph;
  const auto& in = m.in;
  const auto& expected = m.expected;
  codegen::CBundleOptions opts;
  opts.embedWeights = true;
  fs::path out;
  BundleRun r = runBundle(g, in, "mnist_embedded", opts, &out);
  ASSERT_EQ(r.outputs.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    auto diff = compareValues(expected[k], r.outputs[k], Tolerance{1e-4, 1e-4});
    EXPECT_FALSE(diff) << *diff;
  }
  ASSERT_FALSE(fs::exists(out / "model.weights"));
  for (const char* f : {"model.c", "model_weights.c"}) {
    const std::string src = readFile(out / f);
    for (const char* banned : {"stdio", "printf", "fopen", "malloc", "free("})
      EXPECT_EQ(src.find(banned), std::string::npos) << f << " uses " << banned;
  }
  const int64_t weightBytes = planMemory(g).weightBytes, arenaBytes = planMemory(g).arenaBytes;
  if (std::system("command -v arm-none-eabi-gcc > /dev/null 2>&1") != 0) {
    std::cout << "[ skipped  ] the Cortex-M4 build: arm-none-eabi-gcc not found (Debian "
                 "gcc-arm-none-eabi and libnewlib-arm-none-eabi; scripts/setup.sh installs them)\n";
    fs::remove_all(out);
    return;
  }
  std::string err = sh(out, "arm-none-eabi-gcc -std=c99 -Wall -Wextra -Werror -mcpu=cortex-m4 "
                            "-mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -Os -c model.c "
                            "model_weights.c");
  ASSERT_TRUE(err.empty()) << err;
  err = sh(out, "arm-none-eabi-size -A model.o model_weights.o"); // into log.txt
  ASSERT_TRUE(err.empty()) << err;
  // "section size addr" lines per object; sum each kind over both objects.
  std::map<std::string, int64_t> sum;
  std::istringstream lines(readFile(out / "log.txt"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream w(line);
    std::string section;
    int64_t size = 0;
    if (!(w >> section >> size) || section.empty() || section[0] != '.') continue;
    const std::string kind = section.rfind(".text", 0) == 0     ? "text"
                             : section.rfind(".rodata", 0) == 0 ? "rodata"
                             : section.rfind(".bss", 0) == 0    ? "bss"
                             : section.rfind(".data", 0) == 0   ? "data"
                                                                : "";
    if (!kind.empty()) sum[kind] += size;
  }
  std::cout << fmt::format("[ cortex-m4 ] mnist-8 (-Os, thumb, fpv4-sp-d16): text {} B, rodata {} "
                           "B (weights {} B), data {} B, bss {} B (arena {} B)\n",
                           sum["text"], sum["rodata"], weightBytes, sum["data"], sum["bss"],
                           arenaBytes);
  EXPECT_LE(sum["text"], 8 * 1024);
  EXPECT_GE(sum["rodata"], weightBytes);
  EXPECT_LE(sum["rodata"], weightBytes + 2 * 1024); // the weights, and the I/O tables
  EXPECT_GE(sum["bss"], arenaBytes);
  EXPECT_EQ(sum["data"], 0);
  fs::remove_all(out);
}

// The real models of ../shared/models whose every node lowers (static shapes): compiled to C and
// compared with the -O0 interpreter on test_data_set_0. The others are listed with the reason.
// The shared models that compile to C: each must lower, run and match; every other one must be
// refused with an aicc::Error (printed). Adding a model to the list is how a new capability is
// claimed; a listed model that stops compiling fails the test.
TEST(CodegenC, SharedModelsThatLowerRunEndToEnd) {
  if (!fs::is_directory(test::sharedModelsDir()))
    GTEST_SKIP() << test::sharedModelsDir() << " is missing";
  const std::set<std::string> expected = {"mnist-8", "oww-melspectrogram", "ppocrv4-det",
                                          "ppocrv4-rec", "ultraface-rfb-320"};
  std::set<std::string> ran;
  for (const std::string& name : test::sharedModelNames()) {
    fs::path dir = test::sharedModelsDir() / name;
    if (!fs::exists(dir / "model.onnx") || !fs::is_directory(dir / "test_data_set_0")) continue;
    const bool must = expected.count(name) > 0;
    // Fix the symbolic input dims to the test data's shapes.
    ImportOptions io;
    std::vector<RValue> inputs;
    try {
      ImportedModel probe = importOnnxFile((dir / "model.onnx").string());
      InputSpec spec;
      spec.inputsDir = (dir / "test_data_set_0").string();
      spec.generate = false;
      inputs = bindInputs(probe, spec);
      for (size_t i = 0; i < probe.model.graph->inputs.size() && i < inputs.size(); ++i) {
        const Value* v = probe.model.graph->inputs[i];
        if (!v->type.shape || inputs[i].kind != RValue::Kind::Tensor) continue;
        const Shape& sh = *v->type.shape;
        for (size_t d = 0; d < sh.size() && d < inputs[i].tensor.shape().size(); ++d)
          if (!sh[d].symbol.empty()) io.dims[sh[d].symbol] = inputs[i].tensor.shape()[d];
      }
    } catch (const Error& e) {
      ADD_FAILURE() << name << ": cannot bind the test inputs: " << e.what();
      continue;
    }
    ImportedModel im;
    codegen::CBundle b;
    try {
      im = importOnnxFile((dir / "model.onnx").string(), io);
      optimizeModel(im.model, 2);
      MemoryPlan plan = planMemory(*im.model.graph);
      codegen::emitCBundle(*im.model.graph, plan);
    } catch (const Error& e) {
      std::string msg = e.what();
      msg = msg.substr(0, msg.find('\n', msg.find('\n') + 1));
      if (must)
        ADD_FAILURE() << name << " no longer compiles to C: " << msg;
      else
        std::cout << "[ codegen-c ] " << name << ": not compiled (expected): " << msg << "\n";
      continue;
    }
    EXPECT_TRUE(must) << name << " now compiles to C: add it to the expected list";
    std::string skip;
    auto mc = test::loadModelCase(name, skip);
    ASSERT_TRUE(mc) << name << ": " << skip;
    BundleRun r = runBundle(*im.model.graph, mc->inputs, test::modelParamName(name));
    std::cout << "[ codegen-c ] " << name << " -O2: model.c " << r.codeBytes << " bytes\n";
    test::expectOutputsClose(mc->expected, r.outputs, Tolerance{1e-3, 1e-4});
    ran.insert(name);
  }
  EXPECT_EQ(ran, expected) << "every listed model must run as C";
}

namespace aicc {
namespace {

// The five small zoo models materialized by scripts/test.sh (AICC_ZOO_DIR, e.g. build/zoo) as C
// bundles, compiled with `cc -std=c99 -O2 model.c main.c -lm` and compared with ONNX Runtime's
// stored outputs (../shared/zoo/NAME/test_data_set_0). The big ones (ResNets, DenseNet, BERT) run
// through the JIT and AOT engines in tests/models/check_engines.sh; their C loops are too slow for
// the sanitizer build.
TEST(CodegenC, ZooModelsRunEndToEnd) {
  const char* zoo = std::getenv("AICC_ZOO_DIR");
  if (!zoo || !fs::is_directory(zoo))
    GTEST_SKIP() << "AICC_ZOO_DIR is not set (scripts/test.sh materializes the zoo models)";
  int ran = 0;
  for (const std::string name :
       {"mlp", "mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x1_0", "squeezenet1_1"}) {
    const fs::path model = fs::path(zoo) / (name + ".onnx");
    fs::path data = test::sharedModelsDir().parent_path() / "zoo" / name / "test_data_set_0";
    ASSERT_TRUE(fs::exists(model) && fs::is_directory(data)) << model << " or " << data << " is missing";
    ImportedModel im = importOnnxFile(model.string());
    InputSpec spec;
    spec.inputsDir = data.string();
    spec.generate = false;
    std::vector<RValue> inputs = bindInputs(im, spec);
    optimizeModel(im.model, 2);
    std::vector<RValue> expected;
    for (size_t i = 0; i < im.model.graph->outputs.size(); ++i)
      expected.push_back(readValueFile((data / fmt::format("output_{}.pb", i)).string(),
                                       im.model.graph->outputs[i]->type));
    BundleRun r = runBundle(*im.model.graph, inputs, "zoo_" + name);
    std::cout << "[ codegen-c ] zoo " << name << ": model.c " << r.codeBytes << " bytes\n";
    test::expectOutputsClose(expected, r.outputs, Tolerance{1e-3, 1e-4});
    ++ran;
  }
  std::cout << "[ codegen-c ] zoo models run as C: " << ran << "\n";
}

} // namespace
} // namespace aicc
