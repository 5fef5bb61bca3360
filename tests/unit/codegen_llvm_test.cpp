// LLVM JIT code generation: JIT'ed loop functions must match the reference loop executor
// (loop/eval.h) bit for bit on random inputs, and the JIT graph executor must match the
// interpreter on a real model.
#include "codegen/llvm/jit.h"
#include "frontend/onnx/inputs.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "loop/eval.h"
#include "loop/parser.h"
#include "loop/verifier.h"
#include "runtime/jit_executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <random>

using namespace aicc;

namespace {

// Fills a tensor with random values, including special values for floats.
void fillRandom(Tensor& t, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-300, 300);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = u(rng);
    if (isFloat(t.dtype())) {
      int r = int(rng() % 16);
      if (r == 0) v = std::nan("");
      if (r == 1) v = INFINITY;
      if (r == 2) v = -0.0;
      if (r == 3) v = u(rng) / 100;
    } else if (t.dtype() == DType::Bool) {
      v = rng() % 2;
    } else {
      v = std::round(v / 10.0);
    }
    t.setF64(i, v);
  }
}

// Runs every Func of `text` through eval and the JIT (optLevel) and compares the outputs bytewise.
void checkAgainstEval(const std::string& text, int optLevel = 2, bool parallel = true) {
  loop::Module m = loop::parseModule(text);
  for (const auto& f : m.funcs) {
    auto msgs = loop::verifyMessages(f);
    ASSERT_TRUE(msgs.empty()) << msgs[0];
  }
  codegen::JitOptions jo;
  jo.optLevel = optLevel;
  jo.emit.parallel = parallel;
  codegen::JitEngine jit(jo);
  jit.addModule(m);
  std::mt19937 rng(42);
  for (const auto& f : m.funcs) {
    for (int trial = 0; trial < 3; ++trial) {
      std::map<std::string, Tensor> ref, out;
      std::vector<void*> ptrs;
      for (const auto& p : f.params) {
        Tensor t(p.dtype, p.shape);
        if (p.role == loop::Role::In) fillRandom(t, rng);
        ref[p.name] = t.clone();
        out[p.name] = t.clone();
        ptrs.push_back(out[p.name].raw());
      }
      loop::evaluate(f, ref);
      ASSERT_EQ(jit.lookup(f.name)(ptrs.data()), 0) << f.name;
      for (const auto& p : f.params) {
        if (p.role != loop::Role::Out) continue;
        const Tensor &a = ref.at(p.name), &b = out.at(p.name);
        for (int64_t i = 0; i < a.numel(); ++i) {
          double x = a.getF64(i), y = b.getF64(i);
          bool same = (std::isnan(x) && std::isnan(y)) || x == y;
          ASSERT_TRUE(same) << f.name << " %" << p.name << "[" << i << "]: eval " << x
                            << ", jit " << y << " (O" << optLevel << ")";
        }
      }
    }
  }
}

const char* kFuncs = R"(
func @arith(%x: f32[37,19] in, %y: f32[19] in, %z: f32[37,19] out) {
  for %i in 0..37 parallel {
    for %j in 0..19 vectorize(16) {
      store %z[%i * 19 + %j], max(%x[%i * 19 + %j] * %y[%j] - 1.5, min(%x[%i * 19 + %j], %y[%j])) / (%y[%j] + 0.25)
    }
  }
}
func @math(%x: f32[100] in, %e: f32[100] out, %s: f32[100] out, %t: f32[100] out, %r: f32[100] out, %d: f64[100] out) {
  for %i in 0..100 vectorize(8) {
    store %e[%i], cast<f32>(exp(cast<f64>(%x[%i]) / 50:f64))
    store %s[%i], cast<f32>(tanh(cast<f64>(%x[%i]) / 100:f64) + erf(cast<f64>(%x[%i]) / 100:f64))
    store %t[%i], sqrt(abs(%x[%i])) + floor(%x[%i]) + ceil(%x[%i]) + round(%x[%i] / 3.0)
    store %r[%i], log(abs(%x[%i]) + 1.0) + pow(abs(%x[%i] / 100.0), 1.5) + select(%x[%i] > 0.0, 1.0, -(1.0))
    store %d[%i], exp(cast<f64>(%x[%i]) / 100:f64) + log1p(abs(cast<f64>(%x[%i])))
  }
}
func @ints(%a: i32[64] in, %b: i32[64] in, %q: i32[64] out, %m: i32[64] out, %c: i8[64] out, %u: u8[64] out, %w: i64[64] out) {
  for %i in 0..64 {
    store %q[%i], %a[%i] / select(%b[%i] == 0:i32, 3:i32, %b[%i])
    store %m[%i], %a[%i] % select(%b[%i] == 0:i32, -(7:i32), %b[%i])
    store %c[%i], cast<i8>(%a[%i] * 7:i32)
    store %u[%i], cast<u8>(max(%a[%i], %b[%i]))
    store %w[%i], cast<i64>(%a[%i]) * 3000000000 + cast<i64>(-(%b[%i]))
  }
}
func @casts(%x: f32[128] in, %i8: i8[128] out, %u16: u16[128] out, %i64: i64[128] out, %b: bool[128] out, %f: f64[128] out) {
  for %i in 0..128 vectorize(16) {
    store %i8[%i], cast<i8>(%x[%i])
    store %u16[%i], cast<u16>(%x[%i] * 1000.0)
    store %i64[%i], cast<i64>(max(min(%x[%i] * 1e15, 1e18), -1e18))
    store %b[%i], cast<bool>(%x[%i]) && %x[%i] < 10.0 || !(%x[%i] >= -5.0)
    store %f[%i], cast<f64>(cast<i32>(%x[%i])) + cast<f64>(%x[%i])
  }
}
func @nest(%x: f32[8,30] in, %y: f32[8,30] out) schedule {kind = "test"} {
  for %i in 0..8 parallel {
    let %base = %i * 30
    let %scale = cast<f32>(%i) + 0.5
    for %j in 0..30 unroll(2) {
      if %j < 15 {
        store %y[%base + %j], %x[%base + %j] * %scale
      } else {
        store %y[%base + %j], -(%x[%base + %j])
      }
    }
  }
}
)";

TEST(CodegenLlvm, MatchesEvalO2) { checkAgainstEval(kFuncs, 2); }
TEST(CodegenLlvm, MatchesEvalO0Serial) { checkAgainstEval(kFuncs, 0, false); }
TEST(CodegenLlvm, MatchesEvalO3) { checkAgainstEval(kFuncs, 3); }

// The f32 exp/sigmoid/tanh/erf of the JIT are inline approximations (codegen/llvm/vector_math.h):
// checked against double libm on a dense sweep of each function's interesting range, vectorized
// and not, in ulps of the f32 result (erf also absolutely, near its zero).
TEST(CodegenLlvm, F32MathApproximationsAgainstLibm) {
  const int64_t N = 200000;
  const char* text = R"(
func @fm(%x: f32[200000] in, %e: f32[200000] out, %s: f32[200000] out, %t: f32[200000] out, %r: f32[200000] out) {
  for %i in 0..200000 vectorize(8) {
    store %e[%i], exp(%x[%i])
    store %s[%i], sigmoid(%x[%i])
    store %t[%i], tanh(%x[%i])
    store %r[%i], erf(%x[%i])
  }
}
)";
  loop::Module m = loop::parseModule(text);
  codegen::JitEngine jit;
  jit.addModule(m);
  std::map<std::string, Tensor> bufs;
  std::vector<void*> ptrs;
  for (const auto& p : m.funcs[0].params) {
    bufs[p.name] = Tensor(p.dtype, p.shape);
    ptrs.push_back(bufs[p.name].raw());
  }
  float* x = bufs["x"].data<float>();
  for (int64_t i = 0; i < N; ++i) x[i] = float(-110.0 + 200.0 * double(i) / double(N - 1));
  x[0] = std::nanf(""), x[1] = INFINITY, x[2] = -INFINITY, x[3] = 0.0f, x[4] = -0.0f;
  for (int64_t i = 5; i < 2000; ++i) x[i] = float((i - 1000) * 1e-3); // dense near 0
  ASSERT_EQ(jit.lookup("fm")(ptrs.data()), 0);
  auto ulpDiff = [](float a, double ref) {
    if (std::isnan(a) || std::isnan(ref)) return std::isnan(a) == std::isnan(ref) ? 0.0 : 1e30;
    float r = float(ref);
    if (a == r) return 0.0;
    if (std::isinf(a) || std::isinf(r)) return 1e30;
    double ulp = std::max(double(std::nextafter(std::fabs(r), INFINITY) - std::fabs(r)),
                          double(std::numeric_limits<float>::denorm_min()));
    return std::fabs(double(a) - ref) / ulp;
  };
  struct Fn {
    const char* buf;
    double (*ref)(double);
    double maxUlps, absTol;
  };
  const Fn fns[] = {
      {"e", [](double v) { return std::exp(v); }, 3, 0},
      {"s", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 4, 0},
      {"t", [](double v) { return std::tanh(v); }, 4, 0},
      {"r", [](double v) { return std::erf(v); }, 4, 0},
  };
  for (const Fn& fn : fns) {
    const float* y = bufs[fn.buf].data<float>();
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < N; ++i) {
      double ref = fn.ref(double(x[i]));
      double u = ulpDiff(y[i], ref);
      if (fn.absTol > 0 && std::fabs(double(y[i]) - ref) <= fn.absTol) u = 0;
      if (u > worst) worst = u, at = i;
    }
    std::cout << "[math] " << fn.buf << ": worst " << worst << " ulp at x = " << x[at] << "\n";
    EXPECT_LE(worst, fn.maxUlps) << fn.buf << " at x = " << x[at] << ": " << y[at] << " vs "
                                 << fn.ref(double(x[at]));
  }
}

TEST(CodegenLlvm, DivisionByZeroIsReported) {
  loop::Module m = loop::parseModule(R"(
func @dz(%a: i32[4] in, %b: i32[4] in, %c: i32[4] out) {
  for %i in 0..4 { store %c[%i], %a[%i] / %b[%i] }
})");
  codegen::JitEngine jit;
  jit.addModule(m);
  int32_t a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 1, 1}, c[4];
  void* ptrs[3] = {a, b, c};
  EXPECT_EQ(jit.lookup("dz")(ptrs), 1);
  b[1] = -1;
  EXPECT_EQ(jit.lookup("dz")(ptrs), 0);
  EXPECT_EQ(c[1], -2);
}

TEST(CodegenLlvm, VectorizeMetadataAndIR) {
  loop::Module m = loop::parseModule(R"(
func @v(%x: f32[1024] in, %y: f32[1024] out) {
  for %i in 0..1024 vectorize(16) { store %y[%i], %x[%i] + 1.0 }
})");
  codegen::JitOptions jo;
  jo.keepIR = true;
  codegen::JitEngine jit(jo);
  jit.addModule(m);
  // The loop vectorizer widened the loop.
  EXPECT_NE(jit.irText().find("<"), std::string::npos) << jit.irText();
  EXPECT_NE(jit.irText().find("x float>"), std::string::npos) << jit.irText();
}

TEST(CodegenLlvm, JitExecutorMatchesInterpreterOnMnist) {
  std::filesystem::path dir = std::filesystem::path(AICC_SOURCE_DIR) / "models" / "mnist-8";
  if (!std::filesystem::exists(dir / "model.onnx")) GTEST_SKIP() << "no " << dir;
  ImportedModel m = importOnnxFile((dir / "model.onnx").string());
  InputSpec spec;
  spec.inputsDir = (dir / "test_data_set_0").string();
  spec.generate = false;
  std::vector<RValue> inputs = bindInputs(m, spec);
  const Graph& g = *m.model.graph;
  std::vector<RValue> expected = interpret(g, inputs);
  runtime::JitExecutable exe(g);
  EXPECT_GT(exe.stats().lowered, 0);
  EXPECT_TRUE(exe.stats().planned) << exe.stats().planNote;
  for (int run = 0; run < 2; ++run) { // the arena is reused across runs
    std::vector<RValue> got = exe.run(inputs);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      auto mismatch = compareValues(expected[i], got[i], {1e-4, 1e-5});
      EXPECT_FALSE(mismatch) << *mismatch;
    }
  }
  // Input checks.
  std::vector<RValue> bad = inputs;
  bad[0].tensor = Tensor(DType::F32, {1, 1, 28, 27});
  EXPECT_THROW(exe.run(bad), Error);
}

} // namespace
